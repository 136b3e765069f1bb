"""Dask's threaded and multiprocessing schedulers on the graphs of bench/graphs.ts (see dask_graphs.py).

Prints one JSON line: per graph, µs per task for dask.threaded.get, dask.multiprocessing.get (its
default: a new process pool per call) and dask.multiprocessing.get with one pool kept across calls.
Run by bench/executors.ts with the project's venv python. Usage: python dask_executors.py [repeats]
"""
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import dask
import dask.multiprocessing
import dask.threaded
from dask_graphs import STANDARD_GRAPHS, best_of, noop


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    reused_pool = ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("spawn"))
    reused_pool.submit(noop).result()  # started before any timing
    graphs = {}
    for name, build in STANDARD_GRAPHS:
        dsk, keys, tasks = build()
        per_task = lambda seconds: seconds / tasks * 1e6  # noqa: E731
        graphs[name] = {
            "tasks": tasks,
            "threads_us": per_task(best_of(repeats, lambda: dask.threaded.get(dsk, keys))),
            # optimize_graph=False: run every task, as tsdask does (Dask would otherwise fuse the chain into one task).
            "processes_us": per_task(best_of(repeats, lambda: dask.multiprocessing.get(dsk, keys, optimize_graph=False))),
            "processes_reused_pool_us": per_task(
                best_of(repeats, lambda: dask.multiprocessing.get(dsk, keys, optimize_graph=False, pool=reused_pool))
            ),
        }
    reused_pool.shutdown()
    print(json.dumps({"dask": dask.__version__, "graphs": graphs}))


if __name__ == "__main__":
    main()
