"""The graphs of bench/graphs.ts, built for Dask, and a timing helper shared by the Dask benchmarks."""
import time


def noop(*args):
    return None


def named(base, run):
    """`base`, or `base-<run>` for one run of several on a cluster (which keeps results it still
    refers to: each run needs keys of its own to compute anything). key_split stays `base`."""
    return base if run is None else f"{base}-{run}"


def chain(n, run=None):
    x = named("x", run)
    dsk = {f"{x}-0": (noop,)}
    for i in range(1, n):
        dsk[f"{x}-{i}"] = (noop, f"{x}-{i - 1}")
    return dsk, [f"{x}-{n - 1}"], n


def independent(width, depth, run=None):
    x = named("x", run)
    dsk, keys = {}, []
    for i in range(width):
        dsk[(x, 0, i)] = (noop,)
        for level in range(1, depth):
            dsk[(x, level, i)] = (noop, (x, level - 1, i))
        keys.append((x, depth - 1, i))
    return dsk, keys, width * depth


def tree_reduction(leaves, run=None):
    leaf, total = named("leaf", run), named("sum", run)
    dsk, level = {}, []
    for i in range(leaves):
        dsk[f"{leaf}-{i}"] = (noop,)
        level.append(f"{leaf}-{i}")
    depth = 0
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            key = f"{total}-{depth}-{i // 2}"
            dsk[key] = (noop, level[i], level[i + 1]) if i + 1 < len(level) else (noop, level[i])
            nxt.append(key)
        level = nxt
        depth += 1
    return dsk, level, len(dsk)


# (name, build(run=None)): `run` gives the graph keys of its own (see `named`).
STANDARD_GRAPHS = [
    ("chain of 10000", lambda run=None: chain(10_000, run)),
    ("2000×5 independent", lambda run=None: independent(2000, 5, run)),
    ("tree reduction over 10000", lambda run=None: tree_reduction(10_000, run)),
]


def best_of(repeats, run):
    """Best wall time in seconds of `repeats` runs after one warm-up (the least disturbed by the machine)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best
