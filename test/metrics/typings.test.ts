// The fine performance metrics API as a notebook cell would use it (local schedulers and a
// cluster), type-checked by tslab's own TypeScript 5.0.4 against the shipped dist/*.d.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellDiagnostics, inUserProject } from "../helpers/tslab-cell";

const cell = `
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

test("a tslab cell using contextMeter, span and FinePerformanceMetrics compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, cell)), []);
});

const clusterCell = `
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

test("a tslab cell reading a cluster's metrics and spans compiles with TypeScript 5.0", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, clusterCell)), []);
});
