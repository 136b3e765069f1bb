// A kernel interrupt (SIGINT) while a computation runs in tslab aborts it like an AbortSignal:
// no more tasks start, finish(errored) runs, the promise rejects with AbortError.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeFailures, runNotebook } from "./notebook/harness";

test("interrupting the tslab kernel aborts the running computation", async () => {
  const report = await runNotebook("test/notebooks/interrupt.ipynb", { inTemporaryCopy: true });
  assert.ok(report.ok, describeFailures(report));
  const interrupted = report.cells[1];
  assert.equal(interrupted.status, "error");
  assert.notEqual(interrupted.interrupted_at, null, "the harness interrupted once 5 tasks had started");
  const abortSeconds = interrupted.elapsed_seconds! - interrupted.interrupted_at!;
  assert.ok(abortSeconds < 2, `the cell replied ${abortSeconds.toFixed(2)} s after the interrupt`);
  const last = report.cells[2].stdout.trim().split("\n").at(-1)!;
  const outcome = JSON.parse(last) as { error: string; finishErrored: boolean; started: number; startedLater: number };
  assert.equal(outcome.error, "AbortError");
  assert.equal(outcome.finishErrored, true);
  assert.ok(outcome.started >= 5 && outcome.started < 40, `${outcome.started} tasks started before the abort`);
  assert.equal(outcome.startedLater, 0, "no task starts after the abort");
});
