"""Dask's worker under memory pressure: one LocalCluster worker (1 thread, a memory limit) and
results that together pass it, held by futures until all are done.

Usage: python dask_memory_pressure.py LIMIT COUNT MEGABYTES
Prints one JSON line: seconds from the first submit to all done, the worker's restarts (its pid
changed), its peak resident memory (sampled every 10 ms), results on disk at the end, and the
times it paused.
"""
import json
import os
import sys
import threading
import time

import distributed
import numpy as np
import psutil
from distributed import Client, LocalCluster, wait


def block(seed, values):
    # Random values, which lz4 cannot compress when they are spilled; the ends tell results apart.
    out = np.random.default_rng(seed).random(values)
    out[0] = out[-1] = seed
    return out


def is_right(value, seed):
    return len(value) > 0 and float(value[0]) == seed and float(value[-1]) == seed


def main():
    limit, count, megabytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    values = megabytes * 10**6 // 8
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit=limit, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        (address,) = client.scheduler_info()["workers"]
        pid = client.run(os.getpid)[address]
        peak = [0]
        sampling = [True]

        def sample():
            worker = psutil.Process(pid)
            while sampling[0]:
                try:
                    peak[0] = max(peak[0], worker.memory_info().rss)
                except psutil.Error:
                    return
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        futures = [client.submit(block, i, values, key=f"block-{i}") for i in range(count)]
        wait(futures)
        seconds = time.perf_counter() - start
        sampling[0] = False
        sampler.join()
        errors = sum(future.status != "finished" for future in futures)
        workers = client.scheduler_info()["workers"]
        pids = client.run(os.getpid)
        on_disk = sum(client.run(lambda dask_worker: len(dask_worker.data.slow)).values())
        # Every result is right, the spilled ones read back (a worker restarted meanwhile loses them).
        try:
            right = errors == 0 and all(is_right(future.result(), i) for i, future in enumerate(futures))
        except Exception:
            right = False
        print(json.dumps({
            "distributed": distributed.__version__,
            "seconds": seconds,
            "restarts": 0 if list(pids.values()) == [pid] else 1,
            "peakRss": peak[0],
            "onDisk": on_disk,
            "errors": errors,
            "right": right,
            "workers": len(workers),
        }))


if __name__ == "__main__":
    main()
