// The seed's own check of FinePerformanceMetrics: on the QR example, the activities add up to wall
// time × threads. It runs beside other test files: idle time is what the threads' activities leave
// of wall time × threads, so a neighbour that takes CPU from them moves time between activities
// without changing the sum.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { after, describe, test } from "node:test";
import { FinePerformanceMetrics, array as da, closePools, withCallbacks } from "../../src";

after(() => closePools());

describe("FinePerformanceMetrics: the seed's invariant", () => {
  test("the QR example on threads: all activities, idle included, add up to wall time × threads within 10 %", async () => {
    // Warm the pool and the workers' WebAssembly first, as any earlier computation in a session would.
    const warm = da.random.random([2000, 1000], { chunks: [1000, 1000] });
    const [wq, wr] = da.linalg.qr(warm);
    await wq.dot(wr).compute({ scheduler: "threads" });

    const fpm = new FinePerformanceMetrics();
    const a = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(a);
    const started = performance.now();
    await withCallbacks(fpm, () => q.dot(r).compute({ scheduler: "threads" }));
    const wall = (performance.now() - started) / 1000;
    const threads = availableParallelism();
    const breakdown = fpm.breakdown();
    const ratio = breakdown.total / (wall * threads);
    assert.ok(ratio > 0.9 && ratio < 1.1, `Σ activities ${breakdown.total} s vs wall ${wall} s × ${threads} threads: ratio ${ratio}`);
    // Nothing is counted twice: the tasks' own activities fit in the budget with room for idle.
    const busyTime = breakdown.activities.filter((s) => s.activity !== "idle").reduce((sum, s) => sum + s.value, 0);
    assert.ok(busyTime <= wall * threads * 1.01, `task activities ${busyTime} s exceed wall × threads ${wall * threads} s`);
    assert.deepEqual(new Set(breakdown.functions), new Set(["tsqr", "dot", "random_sample", "N/A"]));
    assert.ok(breakdown.activities.some((s) => s.activity === "thread-cpu" && s.value > 0));
  });
});
