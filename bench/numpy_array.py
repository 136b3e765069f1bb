"""NumPy / dask.array side of bench/array.ts; prints one JSON object.

`kernels`: 1000x1000 matmul and QR, best of N (run with OPENBLAS_NUM_THREADS=1 for a per-chunk,
single-thread comparison). `example`: the seeds' QR example, 10000x1000 in 1000x1000 chunks,
qr then q.dot(r).compute() with the threaded scheduler (graph built outside the timing).
"""
import json
import os
import sys
import time

import numpy as np

from dask_graphs import best_of

mode = sys.argv[1]
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3


out = {"numpy": np.__version__, "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}
if mode == "kernels":
    rng = np.random.default_rng(0)
    a = rng.random((1000, 1000))
    b = rng.random((1000, 1000))
    tall = rng.random((10000, 1000))
    out["matmul"] = best_of(repeats, lambda: a @ b)
    out["qr"] = best_of(repeats, lambda: np.linalg.qr(a))
    out["qr_10000x1000"] = best_of(1, lambda: np.linalg.qr(tall))
elif mode == "example":
    import dask
    import dask.array as da

    def run():
        a = da.random.random(size=(10000, 1000), chunks=(1000, 1000))
        q, r = da.linalg.qr(a)
        a2 = q.dot(r)
        t0 = time.perf_counter()
        a2.compute(scheduler="threads")
        return time.perf_counter() - t0

    run()
    out["dask"] = dask.__version__
    out["qr_example"] = min(run() for _ in range(repeats))
else:
    raise SystemExit(f"unknown mode {mode!r}; use kernels or example")
print(json.dumps(out))
