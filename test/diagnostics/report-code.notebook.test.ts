// performanceReport in a real tslab kernel: its Calling code is the cell as the user typed it
// (TypeScript, its own names), not the JavaScript tslab runs (`exports.base + 1`).
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeFailures, runNotebook } from "../notebook/harness";

test("the report's Calling code is the notebook cell's TypeScript", async () => {
  const report = await runNotebook("test/notebooks/report-code.ipynb", { inTemporaryCopy: true });
  assert.ok(report.ok, describeFailures(report));
  const { result, code } = JSON.parse(report.cells[1].stdout.trim().split("\n").at(-1)!) as { result: number; code: string };
  assert.equal(result, 21);
  assert.match(code, /^\/\/ the block as typed\nconst report = await performanceReport\(/);
  assert.match(code, /async \(\) => base \+ 1\)/);
  assert.doesNotMatch(code, /exports\./);
});
