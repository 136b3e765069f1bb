"""Dask distributed's side of bench/cluster-diagnose.ts, on LocalCluster(n_workers=2, threads_per_worker=1).

  profile ROUNDS   the seeds' QR example (10000x1000 in 1000x1000 chunks, q.dot(r).compute()) with
                   the workers' statistical profiler on and off (distributed.worker.profile.enabled;
                   this distributed predates its Python 3.11 switch-off, dask/distributed#8616),
                   interleaved, a fresh cluster per run: per run the user's run (cluster start and
                   the first compute: wall, and the worker processes' CPU since they started) and a
                   warm compute on the same cluster (wall, the workers' CPU during it).
  report N FILE    performance_report (mode="inline") of N independent inc tasks on the cluster:
                   the computation alone, with the report written, and the file's size (no report
                   where this distributed cannot draw one: 2022.12 needs bokeh < 3).
Prints one JSON line. Run with Debian's python3 (python3-distributed).
"""
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
import psutil  # noqa: E402
from distributed import Client, LocalCluster, performance_report  # noqa: E402


def workers_cpu(client):
    """CPU seconds (user + system) of the worker processes so far."""
    pids = client.run(os.getpid).values()
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


def qr_run(enabled):
    """One user's run (cluster start + the first compute) and a warm compute on the same cluster."""
    with dask.config.set({"distributed.worker.profile.enabled": enabled}):
        t_start = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
            a = da.random.random((10000, 1000), chunks=(1000, 1000))
            q, r = da.linalg.qr(a)
            product = q.dot(r)
            product.compute()
            first = {"wall": time.perf_counter() - t_start, "cpu": workers_cpu(client)}  # the workers' CPU since they started
            cpu0 = workers_cpu(client)
            t0 = time.perf_counter()
            product.compute()
            wall = time.perf_counter() - t0
            return {"first": first, "warm": {"wall": wall, "cpu": workers_cpu(client) - cpu0}}


def profile(rounds):
    runs = {"on": [], "off": []}
    for i in range(rounds):
        for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
            runs[mode].append(qr_run(mode == "on"))
    return runs


def inc(x):
    return x + 1


def report(n, filename):
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        dsk = {f"inc-{i}": (inc, i) for i in range(n)}
        keys = list(dsk)
        client.get(dsk, keys[:100])
        t0 = time.perf_counter()
        client.get(dsk, keys)
        plain = time.perf_counter() - t0
        dsk = {f"inc2-{i}": (inc, i) for i in range(n)}  # fresh keys: nothing is in memory yet
        try:
            import distributed.dashboard.core  # noqa: F401  (performance_report draws with Bokeh)
        except ImportError as error:
            return {"tasks": n, "get": plain, "with_report": None, "html_bytes": None, "file": None, "why": str(error)}
        t0 = time.perf_counter()
        with performance_report(filename=filename, mode="inline"):
            client.get(dsk, list(dsk))
        reported = time.perf_counter() - t0
    return {"tasks": n, "get": plain, "with_report": reported, "html_bytes": os.path.getsize(filename), "file": os.path.abspath(filename)}


def main():
    out = {"dask": dask.__version__, "distributed": distributed.__version__}
    if sys.argv[1] == "profile":
        out["runs"] = profile(int(sys.argv[2]))
    else:
        out.update(report(int(sys.argv[2]), sys.argv[3]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
