"""Dask's ProgressBar on a tree reduction (get_sync): the closest Dask has to a local progress feed.

Main-thread CPU time and wall time of the computation without and with ProgressBar, best of
`rounds`; prints one JSON object with µs per task (bench/dashboard.ts prints it beside tsdask's feed).
"""
import contextlib
import io
import json
import sys
import time

import dask
from dask.diagnostics import ProgressBar
from dask.local import get_sync

from dask_graphs import tree_reduction

leaves = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3

dsk, keys, tasks = tree_reduction(leaves)


def timed(make):
    best = {"cpu": float("inf"), "wall": float("inf")}
    for _ in range(rounds):
        with contextlib.ExitStack() as stack:
            for callback in make():
                stack.enter_context(callback)
            wall, cpu = time.perf_counter(), time.thread_time()
            get_sync(dsk, keys)
            best["cpu"] = min(best["cpu"], time.thread_time() - cpu)
            best["wall"] = min(best["wall"], time.perf_counter() - wall)
    return best


base = timed(lambda: [])
with_bar = timed(lambda: [ProgressBar(out=io.StringIO())])


def per_task(seconds):
    return seconds / tasks * 1e6


print(json.dumps({
    "dask": dask.__version__,
    "tasks": tasks,
    "base": {kind: per_task(base[kind]) for kind in ("cpu", "wall")},
    "progressBar": {kind: per_task(with_bar[kind] - base[kind]) for kind in ("cpu", "wall")},
}))
