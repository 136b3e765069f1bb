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

const seedsCell = `
import { get, Callback, Profiler, threadProf, config, withConfig, visualize, displayPlot, setDefaultGraphScheduler,
  type GraphScheduler, type GraphRun, type TaskData } from "tsdask";
import * as da from "tsdask/array";
async function main() {
  const a2 = da.random.random([100, 10], { chunks: [10, 10] });
  const out = await a2.compute({ scheduler: threadProf.get });
  const records: TaskData[] = threadProf.results();
  const prof = new Profiler(get);
  await prof.get({ x: 1 }, "x");
  const again: TaskData[] = prof.results();
  const modern = new Profiler();
  const first: TaskData = modern.results[0];
  const inline = new Profiler((dsk, keys) => get(dsk, keys, { scheduler: "threads" }));
  const viaInline: TaskData[] = inline.results();
  new Callback({ startCallback: (key) => console.log(key), endCallback: (key, _dsk, _state, id) => console.log(key, id) });
  const change = config.set({ scheduler: "threads", numWorkers: 4 });
  change.restore();
  const n: number = await withConfig({ scheduler: "processes" }, async () => 1);
  const client: GraphScheduler = { description: "Client(test)", run: async (request: GraphRun) => get(request.graph, request.keys) };
  setDefaultGraphScheduler(client);
  await get({ x: 1 }, "x", { scheduler: client });
  setDefaultGraphScheduler(null);
  const shown = modern.visualize();
  const plot = await visualize([modern]);
  const handle = displayPlot({ mark: "point" }, "one point", 3);
  const three: number = await handle;
  return [out.shape, records, again, first, viaInline, n, shown.summary, plot.spec, three];
}
main();
`;

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

test("seed 001's forms, config, the GraphScheduler seam and display handles type-check under TypeScript 5.0", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, seedsCell)), []);
});

test("the two Profiler forms stay apart in a notebook cell's types (no strictNullChecks there)", async () => {
  const misuse = `
import { Profiler, get, config } from "tsdask";
new Profiler().results();
const records: number = new Profiler(get).results;
config.set({ schedular: "threads" });
`;
  const errors = await inUserProject((dir) => cellDiagnostics(dir, misuse));
  assert.equal(errors.length, 3, errors.join("\n"));
  assert.match(errors[0]!, /This expression is not callable[\s\S]*TaskData\[\]/);
  assert.match(errors[1]!, /Type '\(\) => TaskData\[\]' is not assignable to type 'number'/);
  assert.match(errors[2]!, /'schedular' does not exist in type 'ConfigValues'/);
});

test("a tslab cell using LocalCluster, Client and Futures compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, clusterCell)), []);
});

