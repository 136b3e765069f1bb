// The pool schedulers inside the real tslab kernel: cell functions run in workers when they are
// self-contained, are rejected with a clear error when they use another cell's variable, and a
// kernel interrupt stops running worker tasks.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeFailures, runNotebook } from "./notebook/harness";

test("threads and processes run notebook cell functions; interrupt stops the workers", async () => {
  const report = await runNotebook("test/notebooks/executors.ipynb", { inTemporaryCopy: true });
  assert.ok(report.ok, describeFailures(report));
  const outcome = JSON.parse(report.cells[3].stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
  assert.equal(outcome.threads, 42);
  assert.equal(outcome.processes, 42);
  for (const scheduler of ["threads", "processes"]) {
    const message = outcome[`${scheduler} closure`] as string;
    assert.match(message, /^UnshippableFunctionError: Function "addK" of task 'c' cannot run in a worker: it uses "k"/);
  }
  assert.equal(report.cells[2].status, "error");
  assert.equal(outcome.interrupted, "AbortError");
  assert.ok((outcome.interruptSeconds as number) < 3, `interrupt took ${outcome.interruptSeconds} s`);
  assert.equal(outcome.afterInterrupt, 4);
});
