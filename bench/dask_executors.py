"""Dask's threaded and multiprocessing schedulers on the graphs of bench/graphs.ts.

Prints one JSON line: {"threads": {graph: seconds}, "processes": {graph: seconds}, "tasks": {graph: n}}.
Run with the project's venv python; bench/executors.ts runs it and compares.
Usage: python bench/dask_executors.py [repeats]
"""
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
import time

import dask.multiprocessing
import dask.threaded


def inc(x):
    return x + 1


def noop(*args):
    return None


def total(*args):
    return sum(args)


def chain(n):
    graph = {"chain-0": (inc, 0)}
    for i in range(1, n):
        graph[f"chain-{i}"] = (inc, f"chain-{i - 1}")
    return graph, f"chain-{n - 1}"


def independent(groups, width):
    graph = {}
    keys = []
    for g in range(groups):
        row = []
        for j in range(width):
            graph[(f"indep-{g}", j)] = (noop, g, j)
            row.append((f"indep-{g}", j))
        keys.append(row)
    return graph, keys


def tree_reduction(leaves, fan_in):
    graph = {}
    level = []
    for i in range(leaves):
        graph[f"leaf-{i}"] = (inc, i)
        level.append(f"leaf-{i}")
    depth = 0
    while len(level) > 1:
        depth += 1
        nxt = []
        for start in range(0, len(level), fan_in):
            key = f"sum-{depth}-{start // fan_in}"
            graph[key] = (total, *level[start:start + fan_in])
            nxt.append(key)
        level = nxt
    return graph, level[0]


GRAPHS = {
    "chain": lambda: chain(10_000),
    "independent": lambda: independent(2000, 5),
    "tree": lambda: tree_reduction(10_000, 4),
}


def best_time(get, graph, keys, repeats, **kwargs):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        get(graph, keys, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    out = {"threads": {}, "processes": {}, "processes_reused_pool": {}, "tasks": {}}
    reused_pool = ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("spawn"))
    reused_pool.submit(inc, 0).result()  # started before timing
    for name, build in GRAPHS.items():
        graph, keys = build()
        out["tasks"][name] = len(graph)
        out["threads"][name] = best_time(dask.threaded.get, graph, keys, repeats)
        # optimize_graph=False: run every task, as tsdask does (Dask would otherwise fuse the chain into one task).
        out["processes"][name] = best_time(dask.multiprocessing.get, graph, keys, repeats, optimize_graph=False)
        # Dask's default starts a process pool per call; with a pool kept across calls, as tsdask keeps one:
        out["processes_reused_pool"][name] = best_time(
            dask.multiprocessing.get, graph, keys, repeats, optimize_graph=False, pool=reused_pool
        )
    reused_pool.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
