"""Dask distributed's side of bench/cluster-small.ts: a LocalCluster(n_workers=2,
threads_per_worker=1) that times one client.get per request, so the TypeScript side can take
turns with it (the load of a shared machine then falls on both alike).

Protocol, one JSON object a line: it prints {"ready": versions} once the cluster is up; then for
each request line {"width": W, "depth": D, "run": R} on stdin it runs W independent chains of D
tasks on keys of run R (dask_graphs.independent) and prints {"seconds": wall, "ran": tasks the
workers ran}. An empty line or end of input closes the cluster.
Run with Debian's python3 (python3-distributed).
"""
import json
import sys
import time

import dask
import distributed
from distributed import Client, LocalCluster

from dask_graphs import independent


def executed(client):
    """Tasks the cluster's workers have run since they started."""
    return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())


def main():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        print(json.dumps({"ready": {"dask": dask.__version__, "distributed": distributed.__version__}}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            request = json.loads(line)
            dsk, keys, _ = independent(request["width"], request["depth"], request["run"])
            before = executed(client)
            t0 = time.perf_counter()
            client.get(dsk, keys)
            seconds = time.perf_counter() - t0
            print(json.dumps({"seconds": seconds, "ran": executed(client) - before}), flush=True)


if __name__ == "__main__":
    main()
