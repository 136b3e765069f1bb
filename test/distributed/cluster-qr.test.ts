// The seeds' QR example (da.linalg.qr of a 10000×1000 random array in 1000×1000 chunks, then
// q.dot(r)) on a 2-worker LocalCluster gives exactly the threads scheduler's result, and its fine
// performance metrics keep the seed's own check: everything, idle included, adds up to wall × threads.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Callback, Client, LocalCluster, withCallbacks } from "../../src";
import * as da from "../../src/kernel/collections/array";
import { DEFAULT_SELECTION, fpmModel } from "../../src/protocol/fpm";

test("the seeds' QR example on a 2-worker cluster equals the threads scheduler's result", async () => {
  const a = da.random.random([10000, 1000], { chunks: [1000, 1000], seed: 42 });
  const [q, r] = da.linalg.qr(a);
  const product = q.dot(r);
  const threads = await product.compute({ scheduler: "threads" });
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "qr", dashboardAddress: null });
  try {
    const client = await Client.connect(cluster);
    // Wall time: from the call to the last task's result landing in a worker's memory, as the
    // client hears of it (what comes after, fetching the result here, keeps no thread busy).
    let lastDone = 0;
    const started = performance.now();
    const onCluster = await withCallbacks(new Callback({ posttask: () => void (lastDone = performance.now()) }), () => product.compute());
    const wall = (lastDone - started) / 1000;
    assert.deepEqual(onCluster.shape, [10000, 1000]);
    assert.ok(Buffer.from(onCluster.data.buffer).equals(Buffer.from(threads.data.buffer)), "bit for bit the same values");
    // It ran on both workers, and q·r reproduces a.
    const workers = new Set(cluster.scheduler.taskStream.collect().map((record) => record.worker));
    assert.equal(workers.size, 2);
    const original = await client.compute(a).result();
    let worst = 0;
    for (let i = 0; i < original.data.length; i++) worst = Math.max(worst, Math.abs(original.data[i] - onCluster.data[i]));
    assert.ok(worst < 1e-9, `q·r = a (largest difference ${worst})`);

    // The breakdown (client.compute(a) above added its own tasks, in a span of its own that the
    // sum below leaves out): every function of the graph, on a CPU and off one, and the seed's
    // check within 10 %.
    const data = await client.metricsData();
    const qrSpans = data.spans.filter((span) => span.parent === null && span.metrics.some((r) => r.prefix === "tsqr"));
    assert.equal(qrSpans.length, 1, "the computation is one default span");
    const model = fpmModel({ ...data, spans: qrSpans }, DEFAULT_SELECTION);
    for (const fn of ["tsqr", "dot", "random_sample", "N/A"]) assert.ok(model.functions.includes(fn), `functions ${model.functions.join(", ")}`);
    for (const activity of ["thread-cpu", "thread-noncpu", "executor", "other", "idle"]) {
      assert.ok(model.activities.some((slice) => slice.activity === activity), `activities ${model.activities.map((s) => s.activity).join(", ")}`);
    }
    const ratio = model.total / (wall * 2);
    assert.ok(ratio > 0.9 && ratio <= 1.02, `Σ activities ${model.total} s vs wall ${wall} s × 2 threads: ratio ${ratio}`);
  } finally {
    await cluster.close();
  }
});
