// The fine performance metrics API as a notebook cell would use it, type-checked by tslab's own
// TypeScript 5.0.4 against the shipped dist/*.d.ts.
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
