"""The graphs of bench/graphs.ts, built for Dask, and a timing helper shared by the Dask benchmarks."""
import time


def noop(*args):
    return None


def chain(n):
    dsk = {"x-0": (noop,)}
    for i in range(1, n):
        dsk[f"x-{i}"] = (noop, f"x-{i - 1}")
    return dsk, [f"x-{n - 1}"], n


def independent(width, depth):
    dsk, keys = {}, []
    for i in range(width):
        dsk[("x", 0, i)] = (noop,)
        for level in range(1, depth):
            dsk[("x", level, i)] = (noop, ("x", level - 1, i))
        keys.append(("x", depth - 1, i))
    return dsk, keys, width * depth


def tree_reduction(leaves):
    dsk, level = {}, []
    for i in range(leaves):
        dsk[f"leaf-{i}"] = (noop,)
        level.append(f"leaf-{i}")
    depth = 0
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            key = f"sum-{depth}-{i // 2}"
            dsk[key] = (noop, level[i], level[i + 1]) if i + 1 < len(level) else (noop, level[i])
            nxt.append(key)
        level = nxt
        depth += 1
    return dsk, level, len(dsk)


STANDARD_GRAPHS = [
    ("chain of 10000", lambda: chain(10_000)),
    ("2000×5 independent", lambda: independent(2000, 5)),
    ("tree reduction over 10000", lambda: tree_reduction(10_000)),
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
