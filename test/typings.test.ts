// The shipped .d.ts files type-check under tslab's own compiler (TypeScript 5.0.4, its cell
// options): notebooks compile every cell against them, so newer syntax would break users.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellDiagnostics, inUserProject, tslabTypeScript } from "./helpers/tslab-cell";

const cell = `
import { get, delayed, compute, Callback, withCallbacks, ref, quote, type Key, type State } from "tsdask";
const add = (a: number, b: number) => a + b;
class PrintKeys extends Callback {
  pretask(key: Key, _dsk: unknown, state: State) { console.log(key, state.ready.length); }
}
async function main() {
  const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [add, ref("c"), quote("x")] };
  const result = await withCallbacks([new PrintKeys()], () => get(dsk, "c", { scheduler: "sync" }));
  const inc = delayed((x: number) => x + 1, { name: "inc" });
  const n: number = await inc(inc(1)).compute();
  const [x, y] = await compute(inc(1), inc(2));
  const cb = new Callback({ pretask: (key) => console.log(key) }).register();
  cb[Symbol.dispose]();
  return [result, n, x, y];
}
main();
`;

test("a tslab cell using the public API compiles with TypeScript 5.0 against dist/*.d.ts", async () => {
  assert.equal(tslabTypeScript.version, "5.0.4");
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, cell)), []);
});

const clusterCell = `
import { LocalCluster, Client, Future, KilledWorkerError, get, delayed, type WorkerView } from "tsdask";
import * as da from "tsdask/array";
const inc = (x: number) => x + 1;
async function main() {
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, memoryLimit: "2 GiB", dashboardAddress: null });
  const client = await Client.connect(cluster);
  const f: Future<number> = client.submit(inc, 1);
  const g = client.submit(inc, f);
  const [a, b]: number[] = await client.gather([f, g]);
  const many = client.map(inc, [1, 2, 3]);
  const values: number[] = await client.gather(many);
  const logs = await client.run((worker: WorkerView) => worker.incomingTransferLog.length);
  const n: number = await client.runOnScheduler((scheduler) => scheduler.workerRecords().length);
  const total: number = await client.compute(delayed(inc)(41)).result();
  const { shape } = await client.compute(da.ones([4, 4], { chunks: [2, 2] })).result();
  await get({ x: [inc, 1] }, "x", { scheduler: client });
  f.release();
  console.log(a, b, values, logs, n, total, shape, f.status, g.key, cluster.workers.size, client.dashboardLink);
  try { await g.result(); } catch (error) { if (error instanceof KilledWorkerError) console.log(error.key, error.lastWorker); }
  await cluster.scale(3);
  await client[Symbol.asyncDispose]();
  await cluster.close();
}
main();
`;

test("a tslab cell using LocalCluster, Client and Futures compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, clusterCell)), []);
});

