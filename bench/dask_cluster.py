"""Dask distributed's side of bench/cluster.ts, on LocalCluster(n_workers=2, threads_per_worker=1).

Prints one JSON line: per graph of dask_graphs.py, microseconds per task of client.get (each run
on keys of its own, after a warm-up run, also on fresh keys: a cluster keeps results it still
refers to, so re-running the same keys could find them computed), every task counted as run on
the workers (WorkerState.executed_count); the seeds' QR example (10000x1000 in 1000x1000 chunks,
q.dot(r).compute() on the cluster, best of N); and one 1000x1000 matmul in NumPy
(single-threaded BLAS, as Dask's nanny sets for its workers). Peer transfers are dask_transfer.py's.
Run with Debian's python3 (python3-distributed). Usage: python3 dask_cluster.py [repeats]
"""
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from dask_graphs import STANDARD_GRAPHS, best_of  # noqa: E402


def executed(client):
    """Tasks the cluster's workers have run since they started."""
    return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())


def timed_runs(client, build, repeats):
    """Seconds of each of `repeats` runs of client.get on fresh keys, after a warm-up run; checks every task ran."""
    seconds = []
    for run in range(repeats + 1):
        dsk, keys, tasks = build(run)
        before = executed(client)
        t0 = time.perf_counter()
        client.get(dsk, keys)
        elapsed = time.perf_counter() - t0
        ran = executed(client) - before
        if ran != tasks:
            raise RuntimeError(f"run {run}: {ran} tasks ran on the workers, the graph has {tasks}")
        if run > 0:
            seconds.append(elapsed)
    return seconds


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    out = {"dask": dask.__version__, "distributed": distributed.__version__, "numpy": np.__version__, "graphs": {}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name, build in STANDARD_GRAPHS:
            tasks = build()[2]
            runs = [s / tasks * 1e6 for s in timed_runs(client, build, repeats)]
            out["graphs"][name] = {"tasks": tasks, "us_per_task": min(runs), "runs_us_per_task": runs}
            print(f"dask {name}: {', '.join(f'{r:.1f}' for r in runs)} µs/task", file=sys.stderr, flush=True)

        def qr_example():
            a = da.random.random((10000, 1000), chunks=(1000, 1000))
            q, r = da.linalg.qr(a)
            product = q.dot(r)
            t0 = time.perf_counter()
            product.compute()
            return time.perf_counter() - t0

        qr_example()  # warm-up: imports and first calls in the workers
        out["qr_example"] = min(qr_example() for _ in range(max(1, repeats - 1)))

    rng = np.random.default_rng(0)
    x, y = rng.random((1000, 1000)), rng.random((1000, 1000))
    out["matmul_1000"] = best_of(repeats, lambda: x @ y)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
