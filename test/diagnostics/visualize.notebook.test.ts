// visualize() inside a real tslab kernel (run by nbclient): the cell shows one display_data with
// the tsdask plot payload, a static SVG and a text summary, and no HTML file is written; without
// `await` (as the seeds write it) all of that still lands in the calling cell and nowhere else.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { MIME_TYPE } from "../../src/protocol";
import { describeFailures, runNotebook as runInHarness } from "../notebook/harness";

const root = join(__dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "tsdask-visualize-notebook-"));
after(() => rmSync(dir, { recursive: true, force: true }));
before(() => {
  // The notebook's folder sees this package as "tsdask", as a user's project would.
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules/tsdask"), "dir");
});

const CELL = `
import { visualize } from "tsdask";
const t0 = 1700000000;
const results = [0, 1, 2, 3].map((i) => ({ key: ["inc-0123456789abcdef", i], task: null, startTime: t0 + i * 0.1, endTime: t0 + i * 0.1 + 0.08, workerId: i % 2 }));
const plot = await visualize({ snapshot: () => ({ kind: "tasks" as const, results, startTime: t0, endTime: t0 + 0.5 }) });
console.log("file:", plot.file);
`;

/** Runs the cells in a fresh tslab kernel with nbclient; returns the executed notebook's cells. */
function runNotebook(cells: string[]): { outputs: Record<string, unknown>[] }[] {
  const script = `
import json, sys, nbformat
from nbclient import NotebookClient
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(source) for source in json.load(sys.stdin)]
NotebookClient(nb, kernel_name="tslab", timeout=120, resources={"metadata": {"path": ${JSON.stringify(dir)}}}).execute()
print(json.dumps([{"outputs": cell.outputs} for cell in nb.cells]))
`;
  const python = process.env.TSDASK_PYTHON;
  assert.ok(python !== undefined, "run through npm test, which sets TSDASK_PYTHON");
  const out = execFileSync(python, ["-c", script], { input: JSON.stringify(cells), encoding: "utf8", cwd: dir, timeout: 180_000, maxBuffer: 1 << 26 });
  return JSON.parse(out) as { outputs: Record<string, unknown>[] }[];
}

test("in a tslab notebook visualize() displays the plot bundle and saves nothing", () => {
  const [cell] = runNotebook([CELL]);
  const errors = cell.outputs.filter((output) => output.output_type === "error");
  assert.deepEqual(errors, []);
  const displays = cell.outputs.filter((output) => output.output_type === "display_data");
  assert.equal(displays.length, 1);
  const data = displays[0].data as Record<string, unknown>;
  assert.deepEqual(Object.keys(data).sort(), [MIME_TYPE, "image/svg+xml", "text/plain"].sort());
  const payload = data[MIME_TYPE] as { kind: string; version: number; spec: { vconcat: { data: { values: unknown[] } }[] } };
  assert.equal(payload.kind, "plot");
  assert.equal(payload.spec.vconcat[0].data.values.length, 4);
  assert.match(String(data["image/svg+xml"]), /^<svg/);
  assert.equal(data["text/plain"], "tsdask profile: 4 tasks on 2 workers");
  const printed = cell.outputs.filter((output) => output.output_type === "stream").map((output) => output.text).join("");
  assert.match(printed, /file: undefined/);
  assert.equal(existsSync(join(dir, "profile.html")), false);
});

type Output = Record<string, unknown>;
/** An output as a line: its type and MIME types, or its stream and text. */
const describeOutput = (output: Output): string =>
  output.output_type === "stream"
    ? `${String(output.name)}: ${String(output.text).trim()}`
    : `${String(output.output_type)}: ${Object.keys(output.data as object).sort().join(", ")}`;

test("prof.visualize() and visualize([...]) without await show in their own cell, with the image, and nothing in the next", async () => {
  const sources = [
    `import { Profiler, ResourceProfiler, get, visualize, withCallbacks } from "tsdask";
const prof = new Profiler();
const rprof = new ResourceProfiler({ dt: 0.05 });
const inc = (x: number) => x + 1;
await withCallbacks([prof, rprof], () => get({ a: [inc, 1], b: [inc, "a"] }, "b"));
undefined;`,
    // The first plot of the kernel: loading Vega makes its image arrive after the cell ended.
    "prof.visualize()",
    'console.log("the next cell")',
    "visualize([prof, rprof])",
    'console.log("the cell after")',
  ];
  const notebook = join(dir, "unawaited.ipynb");
  const saved = join(dir, "unawaited-ran.ipynb");
  const cellJson = sources.map((source) => ({ cell_type: "code", metadata: {}, source, outputs: [], execution_count: null }));
  writeFileSync(notebook, JSON.stringify({ cells: cellJson, metadata: {}, nbformat: 4, nbformat_minor: 5 }));
  // The harness applies display updates by id as JupyterLab does, also after the last cell (drain).
  const report = await runInHarness(notebook, { save: saved, drainSeconds: 3 });
  assert.ok(report.ok, describeFailures(report));
  const cells = (JSON.parse(readFileSync(saved, "utf8")) as { cells: { outputs: Output[] }[] }).cells;
  const lines = cells.map((cell) => cell.outputs.map(describeOutput));
  const plotOutput = `display_data: ${[MIME_TYPE, "image/svg+xml", "text/plain"].sort().join(", ")}`;
  assert.deepEqual(lines[1], [plotOutput, "stdout: tsdask profile: 2 tasks on 1 worker"], JSON.stringify(lines, null, 1));
  assert.deepEqual(lines[2], ["stdout: the next cell"]);
  assert.equal(lines[3]?.length, 2, lines[3]?.join(" | "));
  assert.equal(lines[3]?.[0], plotOutput);
  assert.match(lines[3]?.[1] ?? "", /^stdout: tsdask profile: 2 tasks on 1 worker; \d+ resource samples$/);
  assert.deepEqual(lines[4], ["stdout: the cell after"]);
  for (const index of [1, 3]) {
    const data = cells[index]!.outputs[0]!.data as Record<string, unknown>;
    assert.match(String(data["image/svg+xml"]), /^<svg[\s\S]*<\/svg>$/);
    assert.equal((data[MIME_TYPE] as { kind: string }).kind, "plot");
    // On the wire: one display_data with the payload and the summary, sent before the cell went idle;
    // then the same output updated (by display id) with the image.
    const sent = report.cells.find((cell) => cell.index === index)!.messages;
    const shown = sent.findIndex((m) => m.msg_type === "display_data");
    const idle = sent.findIndex((m) => m.msg_type === "status" && m.content.execution_state === "idle");
    assert.ok(shown >= 0 && shown < idle, `cell ${index}: display_data at ${shown}, idle at ${idle}`);
    const displayId = sent[shown]!.display_id;
    const updates = report.cells.flatMap((cell) => cell.messages).filter((m) => m.msg_type === "update_display_data");
    assert.ok(updates.some((m) => m.display_id === displayId && "image/svg+xml" in (m.content.data as object)), `cell ${index}: no image update`);
    const next = report.cells.find((cell) => cell.index === index + 1)!;
    assert.deepEqual(next.messages.filter((m) => m.msg_type === "display_data"), [], "a display landed in the next cell");
  }
});
