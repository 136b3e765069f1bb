// Every public call that displays, as a cell's un-awaited last line in a real tslab kernel on a
// LocalCluster: its output lands in its own cell (the plot, with its static image once complete),
// the cell prints one line (never "Promise { <pending> }"), and the next cell holds only what it
// prints itself. Also: a figure left as a cell's value shows its plot, and the Fine Performance
// Metrics panel's output and printed line come from one snapshot of the metrics.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { MIME_TYPE } from "../../src/protocol";
import { type FpmData, type FpmSelection, fpmModel, fpmSummary } from "../../src/protocol/fpm";
import { metricsTable } from "../../src/kernel/diagnostics/fpm/panel";
import { inUserProject } from "../helpers/tslab-cell";
import { describeFailures, runNotebook } from "../notebook/harness";


const SETUP = `import { LocalCluster, Client, MemorySampler, get, getTaskStream } from "tsdask";
const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1 });
const client = await Client.connect(cluster);
// Two busy tasks (samples for the profile) whose results meet in a third (a transfer between workers).
const burn = (ms: number, x: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end);
  return new Float64Array(50_000).fill(x);
};
const sum = (a: Float64Array, b: Float64Array) => a[0] + b[0];
const graph = (tag: string) => ({ [tag + "-a"]: [burn, 200, 1], [tag + "-b"]: [burn, 200, 2], [tag + "-c"]: [sum, tag + "-a", tag + "-b"] });
await get(graph("warm"), "warm-c");
const ms = new MemorySampler();
await ms.sample("graph", () => get(graph("ms"), "ms-c"));
undefined;`;

/** The calls, each a cell's last line, not awaited; `kind` is the payload kind its output must carry. */
const CALLS = [
  { source: "client.profile({ plot: true })", kind: "profile" },
  { source: "client.bandwidth({ plot: true })", kind: "plot" },
  { source: "client.getTaskStream({ plot: true })", kind: "plot" },
  { source: 'getTaskStream(() => get(graph("ts"), "ts-c"), { plot: true })', kind: "plot" },
  { source: "ms.plot()", kind: "plot" },
  // Computed in the same cell: the panel's metrics of these tasks arrive with the next heartbeats.
  { source: 'await get(graph("fpm"), "fpm-c");\nclient.visualizeMetrics()', kind: "fpm" },
  // A figure as a cell's value (Dask's `ts.figure`), from a call awaited in an earlier cell.
  { source: "plotted.figure", kind: "profile", before: "const plotted = await client.profile({ plot: true });\nundefined;" },
];

type Output = { output_type: string; name?: string; text?: string; data?: Record<string, unknown> };
/** A saved output's text: nbformat may store it as a list of lines. */
const textOf = (value: unknown): string => (Array.isArray(value) ? value.join("") : String(value));
const describe = (output: Output): string =>
  output.output_type === "stream" ? `${output.name}: ${textOf(output.text).trim()}` : `${output.output_type}: ${Object.keys(output.data ?? {}).sort().join(", ")}`;

test("each display call, un-awaited, shows its plot in its own cell and nothing in the next", async () => {
  const sources: string[] = [SETUP];
  const callCells: { index: number; kind: string; source: string }[] = [];
  CALLS.forEach((call, n) => {
    if (call.before !== undefined) sources.push(call.before);
    callCells.push({ index: sources.length, kind: call.kind, source: call.source });
    sources.push(call.source, `console.log("after call ${n}")`);
  });
  sources.push("await client.close();\nawait cluster.close();");
  // The notebook's folder sees this package as "tsdask", as a user's project would.
  const { report, outputs } = await inUserProject(async (dir) => {
    const notebook = join(dir, "calls.ipynb");
    const saved = join(dir, "calls-ran.ipynb");
    const cells = sources.map((source) => ({ cell_type: "code", metadata: {}, source, outputs: [], execution_count: null }));
    writeFileSync(notebook, JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5 }));
    // The harness applies display updates by id as JupyterLab does, also after the last cell (drain).
    const report = await runNotebook(notebook, { save: saved, drainSeconds: 3, timeoutSeconds: 180 });
    assert.ok(report.ok, describeFailures(report));
    return { report, outputs: (JSON.parse(readFileSync(saved, "utf8")) as { cells: { outputs: Output[] }[] }).cells.map((cell) => cell.outputs) };
  });
  const plotOutput = `display_data: ${[MIME_TYPE, "image/svg+xml", "text/plain"].sort().join(", ")}`;

  for (const [n, call] of callCells.entries()) {
    const lines = outputs[call.index]!.map(describe);
    const context = `${call.source}: ${JSON.stringify(lines)}`;
    assert.equal(lines.length, 2, context);
    assert.equal(lines[0], plotOutput, context);
    assert.match(lines[1]!, /^stdout: /, context);
    assert.doesNotMatch(lines[1]!, /Promise|pending|\[object/, context);
    const data = outputs[call.index]![0]!.data!;
    assert.equal((data[MIME_TYPE] as { kind: string }).kind, call.kind, context);
    assert.match(textOf(data["image/svg+xml"]), /^<svg[\s\S]*<\/svg>$/, context);
    // On the wire: the output was created while its own cell ran, and the next cell created none.
    const sent = report.cells.find((cell) => cell.index === call.index)!.messages;
    const shown = sent.findIndex((m) => m.msg_type === "display_data");
    const idle = sent.findIndex((m) => m.msg_type === "status" && m.content.execution_state === "idle");
    assert.ok(shown >= 0 && shown < idle, `${call.source}: display_data at ${shown}, idle at ${idle}`);
    const next = report.cells.find((cell) => cell.index === call.index + 1)!;
    assert.deepEqual(next.messages.filter((m) => m.msg_type === "display_data"), [], `${call.source}: a display landed in the next cell`);
    assert.deepEqual(outputs[call.index + 1]!.map(describe), [`stdout: after call ${n}`], `${call.source}: the next cell`);
  }

  // One snapshot per display: the panel, its image and its text are of the same metrics, and the
  // line printed under it (printed before the workers' latest metrics are in) gives no other figures.
  const fpm = callCells.find((call) => call.kind === "fpm")!;
  const data = outputs[fpm.index]![0]!.data!;
  const payload = data[MIME_TYPE] as { data: FpmData; selection: FpmSelection };
  assert.ok(payload.data.metrics.some((m) => m.prefix?.startsWith("fpm-") === true), `the panel has the cell's tasks: ${[...new Set(payload.data.metrics.map((m) => m.prefix))].join(", ")}`);
  assert.equal(textOf(data["text/plain"]), metricsTable(payload.data, payload.selection));
  const summary = fpmSummary(fpmModel(payload.data, payload.selection));
  assert.ok(textOf(data["image/svg+xml"]).includes(summary), `the image says ${summary}`);
  const printed = textOf(outputs[fpm.index]![1]!.text);
  assert.ok(!/ in \d+ functions?/.test(printed) || printed.includes(summary), `printed "${printed.trim()}" under a panel of "${summary}"`);
});
