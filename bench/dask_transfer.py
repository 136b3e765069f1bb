"""Dask's peer transfer of float64 blocks between the two workers of a LocalCluster(2x1).

Usage: python dask_transfer.py BLOCKS VALUES_PER_BLOCK
Prints one JSON line: each transfer's bandwidth from the receiving worker's
transfer_incoming_log (bytes / duration of the fetch), and the wall time of each
dependent task (submit to result).
"""
import json
import sys
import time

import distributed
import numpy as np
from distributed import Client, LocalCluster


def block(seed, size):
    # Random values: Dask would compress regular data; this measures the transfer itself.
    return np.random.default_rng(seed).random(size)


def main():
    blocks, size = int(sys.argv[1]), int(sys.argv[2])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        a, b = sorted(client.scheduler_info()["workers"])
        made = [client.submit(block, i, size, key=f"block-{i}", workers=[a]) for i in range(blocks)]
        distributed.wait(made)
        walls = []
        for i, future in enumerate(made):
            start = time.perf_counter()
            client.submit(np.sum, future, key=f"use-{i}", workers=[b]).result()
            walls.append(time.perf_counter() - start)
        logs = client.run(lambda dask_worker: list(dask_worker.transfer_incoming_log), workers=[b])[b]
        print(json.dumps({
            "distributed": distributed.__version__,
            "bandwidths": [entry["bandwidth"] for entry in logs],
            "bytes": [entry["total"] for entry in logs],
            "walls": walls,
        }))


if __name__ == "__main__":
    main()
