// visualize() inside a real tslab kernel (run by nbclient): the cell shows one display_data with
// the tsdask plot payload, a static SVG and a text summary, and no HTML file is written.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { MIME_TYPE } from "../../src/protocol";

const root = join(__dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "tsdask-visualize-notebook-"));
after(() => rmSync(dir, { recursive: true, force: true }));

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
  // The notebook's folder sees this package as "tsdask", as a user's project would.
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules/tsdask"), "dir");
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
