// Seed 003's lines as a user writes them in a tslab cell compile under tslab's TypeScript 5.0.4
// against the shipped .d.ts files.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellDiagnostics, inUserProject } from "../helpers/tslab-cell";

const cell = `
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

test("seed 003's diagnostics compile in a tslab cell (TypeScript 5.0) against dist/*.d.ts", async () => {
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, cell)), []);
});
