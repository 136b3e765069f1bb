// The seeds' QR example (da.linalg.qr of a 10000×1000 random array in 1000×1000 chunks, then
// q.dot(r)) on a 2-worker LocalCluster gives exactly the threads scheduler's result.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, LocalCluster } from "../../src";
import * as da from "../../src/kernel/collections/array";

test("the seeds' QR example on a 2-worker cluster equals the threads scheduler's result", async () => {
  const a = da.random.random([10000, 1000], { chunks: [1000, 1000], seed: 42 });
  const [q, r] = da.linalg.qr(a);
  const product = q.dot(r);
  const threads = await product.compute({ scheduler: "threads" });
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "qr", dashboardAddress: null });
  try {
    const client = await Client.connect(cluster);
    const onCluster = await product.compute();
    assert.deepEqual(onCluster.shape, [10000, 1000]);
    assert.ok(Buffer.from(onCluster.data.buffer).equals(Buffer.from(threads.data.buffer)), "bit for bit the same values");
    // It ran on both workers, and q·r reproduces a.
    const workers = new Set(cluster.scheduler.taskStream.collect().map((record) => record.worker));
    assert.equal(workers.size, 2);
    const original = await client.compute(a).result();
    let worst = 0;
    for (let i = 0; i < original.data.length; i++) worst = Math.max(worst, Math.abs(original.data[i] - onCluster.data[i]));
    assert.ok(worst < 1e-9, `q·r = a (largest difference ${worst})`);
  } finally {
    await cluster.close();
  }
});
