"""Per-task overhead of dask.local.get_sync on the standard graphs; prints one JSON object."""
import json
import sys

import dask
from dask.local import get_sync

from dask_graphs import STANDARD_GRAPHS, best_of

repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
out = {"dask": dask.__version__, "graphs": {}}
for name, build in STANDARD_GRAPHS:
    dsk, keys, tasks = build()
    seconds = best_of(repeats, lambda: get_sync(dsk, keys))
    out["graphs"][name] = {"tasks": tasks, "us_per_task": seconds / tasks * 1e6}
print(json.dumps(out))
