// The user notebooks (notebooks/*.ipynb) run against the real tslab kernel, split over a few test
// files: run one after another they took minutes in one file, which then ran on alone at the end
// of the suite while the other lane had nothing left to do.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { describeFailures, type NotebookReport, runNotebook } from "./harness";

const root = resolve(__dirname, "../../..");

/** Which test file runs each user notebook (a new notebook needs a line here). */
export const NOTEBOOK_TEST_FILE: Readonly<Record<string, string>> = {
  "getting-started.ipynb": "notebook.test.ts",
  "quickstart.ipynb": "notebook.test.ts",
  "arrays.ipynb": "notebook-arrays.test.ts",
  "fine-performance-metrics.ipynb": "notebook-metrics.test.ts",
  "diagnosing-performance.ipynb": "notebook-diagnosing.test.ts",
};

export const userNotebooks = (): string[] => readdirSync(join(root, "notebooks")).filter((name) => name.endsWith(".ipynb"));

/** One kernel run per user notebook, shared by the tests of a file that look at it; its files go to a temporary folder. */
const userRuns = new Map<string, Promise<NotebookReport>>();
export const runUserNotebook = (name: string): Promise<NotebookReport> => {
  let run = userRuns.get(name);
  if (run === undefined) userRuns.set(name, (run = runNotebook(join("notebooks", name), { inTemporaryCopy: true })));
  return run;
};

/** The test that `name` runs clean as written, and that what its cells print now is saved in the file. */
export function testRunsAsWritten(name: string): void {
  test(name, async () => {
    const path = join("notebooks", name);
    const report = await runUserNotebook(name);
    assert.ok(report.ok, describeFailures(report));
    // Saved outputs let readers see results without a kernel: a cell that prints now must carry output.
    const saved = JSON.parse(readFileSync(join(root, path), "utf8")) as { cells: { outputs?: unknown[] }[] };
    for (const cell of report.cells) {
      const printed = cell.messages.some((m) => m.msg_type === "stream" || m.msg_type === "display_data");
      if (printed) assert.ok((saved.cells[cell.index]?.outputs ?? []).length > 0, `${name} cell ${cell.index} has no saved output; run npm run notebooks`);
    }
  });
}
