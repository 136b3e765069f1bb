"""Per-task overhead of Dask's local diagnostics on the 2000×5 graph (all keys requested), get_sync.

Each configuration runs in its own `with` block (entered once per round, several gets inside),
as in bench/diagnostics.ts; main-thread CPU time and wall time, best of all gets; prints one JSON object.
"""
import contextlib
import io
import json
import sys
import time

import dask
from dask.diagnostics import CacheProfiler, ProgressBar, Profiler, ResourceProfiler
from dask.local import get_sync

from dask_graphs import independent

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
gets = int(sys.argv[2]) if len(sys.argv) > 2 else 3

dsk, _, tasks = independent(2000, 5)
keys = list(dsk)

CONFIGS = {
    "none": lambda: [],
    "ProgressBar": lambda: [ProgressBar(out=io.StringIO())],
    "Profiler": lambda: [Profiler()],
    "ResourceProfiler": lambda: [ResourceProfiler()],
    "CacheProfiler": lambda: [CacheProfiler()],
    "all four": lambda: [ProgressBar(out=io.StringIO()), Profiler(), ResourceProfiler(), CacheProfiler()],
}

best = {name: {"cpu": float("inf"), "wall": float("inf")} for name in CONFIGS}
for _ in range(rounds):
    for name, make in CONFIGS.items():
        callbacks = make()
        mine = best[name]
        with contextlib.ExitStack() as stack:
            for cb in callbacks:
                stack.enter_context(cb)
            get_sync(dsk, keys)  # warm-up
            for _ in range(gets):
                wall, cpu = time.perf_counter(), time.thread_time()
                get_sync(dsk, keys)
                mine["cpu"] = min(mine["cpu"], time.thread_time() - cpu)
                mine["wall"] = min(mine["wall"], time.perf_counter() - wall)
        for cb in callbacks:
            if isinstance(cb, ResourceProfiler):
                cb.close()


def per_task(seconds):
    return seconds / tasks * 1e6


print(json.dumps({
    "dask": dask.__version__,
    "tasks": tasks,
    "base": {kind: per_task(best["none"][kind]) for kind in ("cpu", "wall")},
    "overhead": {
        name: {kind: per_task(best[name][kind] - best["none"][kind]) for kind in ("cpu", "wall")}
        for name in CONFIGS if name != "none"
    },
}))
