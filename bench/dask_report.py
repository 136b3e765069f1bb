"""Dask's closest local counterpart of a performance report, beside bench/diagnose.ts's.

Dask's performance_report needs `distributed`, which this machine's package index does not carry
(and Dask's statistical profiler is disabled on Python 3.11 anyway). Its local diagnostics come
closest: N independent tasks on get_sync inside Profiler + ResourceProfiler, then
dask.diagnostics.visualize saved as one offline HTML file (Bokeh inlined). Prints one JSON object:
the get alone, the get inside the profilers plus building and writing the page, and its size.
"""
import json
import os
import sys
import time

from bokeh.io import save
from bokeh.resources import INLINE
from dask.diagnostics import Profiler, ResourceProfiler, visualize
from dask.local import get_sync

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
out = sys.argv[2] if len(sys.argv) > 2 else "dask-report.html"


def inc(x):
    return x + 1


dsk = {f"inc-{i}": (inc, i) for i in range(n)}
keys = list(dsk)
get_sync(dsk, keys[:100])

t0 = time.perf_counter()
get_sync(dsk, keys)
plain = time.perf_counter() - t0

t0 = time.perf_counter()
with Profiler() as prof, ResourceProfiler(dt=0.25) as rprof:
    get_sync(dsk, keys)
figure = visualize([prof, rprof], show=False, save=False)
save(figure, filename=out, resources=INLINE, title="dask")
reported = time.perf_counter() - t0

print(json.dumps({"tasks": n, "get": plain, "with_report": reported, "html_bytes": os.path.getsize(out), "file": os.path.abspath(out)}))
