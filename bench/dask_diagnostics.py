"""Per-task overhead of Dask's local diagnostics on the three standard graphs, get_sync.

As bench/diagnostics.ts measures: fresh diagnostics in a `with` block around each computation,
rounds interleaving the configurations, round 0 a warm-up; main-thread CPU time and wall time,
best of the rounds; prints one JSON object.
"""
import contextlib
import io
import json
import sys
import time

import dask
from dask.diagnostics import CacheProfiler, ProgressBar, Profiler, ResourceProfiler
from dask.local import get_sync

from dask_graphs import STANDARD_GRAPHS

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20

CONFIGS = {
    "none": lambda: [],
    "ProgressBar": lambda: [ProgressBar(out=io.StringIO())],
    "Profiler": lambda: [Profiler()],
    "ResourceProfiler": lambda: [ResourceProfiler()],
    "CacheProfiler": lambda: [CacheProfiler()],
    "all four": lambda: [ProgressBar(out=io.StringIO()), Profiler(), ResourceProfiler(), CacheProfiler()],
}


def measure(dsk, keys, tasks):
    best = {name: {"cpu": float("inf"), "wall": float("inf")} for name in CONFIGS}
    for round_ in range(rounds + 1):
        for name, make in CONFIGS.items():
            callbacks = make()
            wall, cpu = time.perf_counter(), time.thread_time()
            with contextlib.ExitStack() as stack:
                for cb in callbacks:
                    stack.enter_context(cb)
                get_sync(dsk, keys)
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            for cb in callbacks:
                if isinstance(cb, ResourceProfiler):
                    cb.close()
            if round_ == 0:
                continue
            best[name]["cpu"] = min(best[name]["cpu"], cpu)
            best[name]["wall"] = min(best[name]["wall"], wall)

    def per_task(seconds):
        return seconds / tasks * 1e6

    return {
        "tasks": tasks,
        "base": {kind: per_task(best["none"][kind]) for kind in ("cpu", "wall")},
        "overhead": {
            name: {kind: per_task(best[name][kind] - best["none"][kind]) for kind in ("cpu", "wall")}
            for name in CONFIGS if name != "none"
        },
    }


graphs = {}
for name, build in STANDARD_GRAPHS:
    dsk, keys, tasks = build()
    graphs[name] = measure(dsk, keys, tasks)
print(json.dumps({"dask": dask.__version__, "graphs": graphs}))
