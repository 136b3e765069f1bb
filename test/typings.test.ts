// The shipped .d.ts files type-check under tslab's own compiler (TypeScript 5.0.4, its cell
// options): notebooks compile every cell against them, so newer syntax would break users. The
// cells: the public API, seed 001's forms, clusters, fine performance metrics, seed 003's diagnostics.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compiledOnce, tslabTypeScript } from "./helpers/tslab-cell";

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

const misuse = `
import { Profiler, get, config } from "tsdask";
new Profiler().results();
const records: number = new Profiler(get).results;
config.set({ schedular: "threads" });
`;

// The fine performance metrics API (local schedulers and a cluster).
const metricsCell = `
import { FinePerformanceMetrics, contextMeter, span, get, withCallbacks, type MetricRecord, type SpanRecord, type FpmPanel } from "tsdask";
function read(ms: number): number {
  const waited: number = contextMeter.meter("I/O", () => ms * 2);
  contextMeter.digestMetric("S3 Infrequent Access", 1024, "bytes");
  return waited;
}
const readMetered: (ms: number) => number = contextMeter.meter("I/O")(read);
async function main() {
  const fpm = new FinePerformanceMetrics();
  const result = await withCallbacks(fpm, () => span("load", (id: string) => get({ x: [readMetered, 1] }, "x", { scheduler: "threads" })));
  const asyncValue: Promise<number> = contextMeter.meter("I/O", async () => 1);
  const records: MetricRecord[] = fpm.records();
  const spans: SpanRecord[] = fpm.spans();
  const seconds: number = fpm.breakdown({ unit: "seconds", functions: ["x"] }).total;
  const panel: FpmPanel = await fpm.visualize({ selection: { unit: "bytes" }, save: false });
  return [result, asyncValue, records, spans, seconds, panel.summary, String(fpm)];
}
main();
`;

const metricsClusterCell = `
import { Client, LocalCluster, span, type MetricRecord, type SpanRecord, type FpmPanel, type FpmData, type WorkerView } from "tsdask";
async function main() {
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1 });
  const client = await Client.connect(cluster);
  await span("load", () => client.submit((x: number) => x + 1, 1).result());
  const metrics: MetricRecord[] = await client.metrics();
  const spans: SpanRecord[] = await client.spans();
  const idle: number = spans[0].metrics.filter((m) => m.activity === "idle or other spans")[0].value;
  const data: FpmData = await client.metricsData();
  const panel: FpmPanel = await client.visualizeMetrics({ selection: { spans: ["load"] }, filename: "cluster-fpm.html" });
  const perWorker = await client.run((worker: WorkerView) => worker.digestsTotal.filter((d) => d.span !== undefined).length);
  const now: MetricRecord[] = client.scheduler.cumulativeWorkerMetrics();
  const live: SpanRecord[] = client.scheduler.spans();
  return [metrics, idle, data.time, String(panel), perWorker, now, live];
}
main();
`;

// Seed 003's diagnostics as a user writes them.
const diagnosticsCell = `
import { getTaskStream, StatisticalProfiler, MemorySampler, performanceReport, withCallbacks, bandwidthSummary, type TaskStreamCollector } from "tsdask";
import * as da from "tsdask/array";
async function main() {
  const x = da.random.random([100, 10], { chunks: [10, 10] });
  const ts = await getTaskStream(() => x.compute({ scheduler: "threads" }), { plot: "save", filename: "ts.html" });
  const first: string = ts.data[0].startstops[0].action;
  const sp = new StatisticalProfiler({ interval: 0.01 });
  await withCallbacks(sp, () => x.compute());
  const samples: number = sp.profile({ key: "random_sample", start: 0 }).count + sp.results.children["f;x.js;1"].count;
  const ms = new MemorySampler();
  const shape = await ms.sample("collection 1", () => x.compute(), { measure: "managed_total", interval: 0.5 });
  await ms.plot({ align: true });
  const report = await performanceReport({ filename: "dask-report.html" }, async () => { await x.compute(); });
  const bw = bandwidthSummary({}).total;
  const collector: TaskStreamCollector | undefined = undefined;
  return [first, samples, shape.shape, ms.toRecords()[0].bytes, report.filename, bw, collector];
}
main();
`;

/**
 * Every cell of this file is compiled in one program, once: checking the shipped .d.ts files is
 * what costs (5–10 CPU-s a program), not the cell.
 */
const diagnostics = compiledOnce({ cell, seedsCell, misuse, clusterCell, metricsCell, metricsClusterCell, diagnosticsCell });

test("a tslab cell using the public API compiles with TypeScript 5.0 against dist/*.d.ts", async () => {
  assert.equal(tslabTypeScript.version, "5.0.4");
  assert.deepEqual(await diagnostics("cell"), []);
});

test("seed 001's forms, config, the GraphScheduler seam and display handles type-check under TypeScript 5.0", async () => {
  assert.deepEqual(await diagnostics("seedsCell"), []);
});

test("the two Profiler forms stay apart in a notebook cell's types (no strictNullChecks there)", async () => {
  const errors = await diagnostics("misuse");
  assert.equal(errors.length, 3, errors.join("\n"));
  assert.match(errors[0]!, /This expression is not callable[\s\S]*TaskData\[\]/);
  assert.match(errors[1]!, /Type '\(\) => TaskData\[\]' is not assignable to type 'number'/);
  assert.match(errors[2]!, /'schedular' does not exist in type 'ConfigValues'/);
});

test("a tslab cell using LocalCluster, Client and Futures compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await diagnostics("clusterCell"), []);
});

test("a tslab cell using contextMeter, span and FinePerformanceMetrics compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await diagnostics("metricsCell"), []);
});

test("a tslab cell reading a cluster's metrics and spans compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await diagnostics("metricsClusterCell"), []);
});

test("seed 003's diagnostics compile in a tslab cell (TypeScript 5.0) against dist/*.d.ts", async () => {
  assert.deepEqual(await diagnostics("diagnosticsCell"), []);
});
