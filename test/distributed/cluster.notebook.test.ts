// A LocalCluster in the real tslab kernel: the cell that starts it shows the cluster's card
// (tsdask's MIME type plus text), re-running that cell replaces the cluster without leaking its
// processes, get() runs on the open Client, and a kernel interrupt stops a cluster computation.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { MIME_TYPE, type ClusterPayload } from "../../src/protocol";
import { parsePayload } from "../../src/views/payload";
import { describeFailures, runNotebook, type CellReport } from "../notebook/harness";

function card(cell: CellReport): { payload: ClusterPayload; text: string } {
  const shown = cell.messages.filter((m) => m.msg_type === "display_data");
  assert.equal(shown.length, 1, `one display in: ${cell.source}`);
  const data = shown[0].content.data as Record<string, unknown>;
  const payload = parsePayload(data[MIME_TYPE]);
  assert.equal(payload.kind, "cluster");
  return { payload: payload as ClusterPayload, text: String(data["text/plain"]) };
}

test("a cluster started in a notebook cell: its card, a re-run that leaks nothing, get on the cluster", async () => {
  const report = await runNotebook("test/notebooks/cluster.ipynb", { inTemporaryCopy: true });
  assert.ok(report.ok, describeFailures(report));
  const [, first, rerun, check, interrupted, afterInterrupt, clientCell, closing] = report.cells;

  const { payload, text } = card(first);
  assert.equal(payload.title, "LocalCluster");
  assert.equal(payload.name, "local");
  assert.equal(payload.workers.length, 2);
  assert.equal(payload.threads, 2);
  assert.ok(payload.memory > 0);
  // 8787 unless something else holds it (then a free port, with a warning, as in Dask).
  assert.match(payload.dashboardLink ?? "", /^http:\/\/127\.0\.0\.1:\d+\/status$/);
  assert.match(text, /^LocalCluster\('local', workers=2, threads=2, memory=[\d.]+ [KMGT]iB, dashboard=http:\/\/127\.0\.0\.1:\d+\/status\)$/);
  assert.match(first.stdout, /LocalCluster\('local', workers=2/, "the last expression's text too");

  assert.match(rerun.stdout, /Closing the earlier LocalCluster\('local'/);
  const second = card(rerun).payload;
  assert.notDeepEqual(second.workers.map((w) => w.pid), payload.workers.map((w) => w.pid));

  const outcome = JSON.parse(check.stdout.trim().split("\n").pop()!) as { result: number; onCluster: boolean; alive: boolean[]; folder: string };
  assert.equal(outcome.result, 42);
  assert.ok(outcome.onCluster, "get ran on the cluster");
  assert.deepEqual(outcome.alive, [false, false, true, true], "the first cluster's workers are gone, the second's run");

  assert.equal(interrupted.status, "error");
  const interrupt = JSON.parse(afterInterrupt.stdout.trim().split("\n").pop()!) as {
    interrupted: string;
    seconds: number;
    after: number;
    tasksLeft: number;
    workers: number;
    alive: boolean[];
  };
  assert.equal(interrupt.interrupted, "AbortError");
  assert.ok(interrupt.seconds < 5, `the interrupt stopped the computation (${interrupt.seconds} s)`);
  assert.equal(interrupt.after, 2, "the cluster is usable after an interrupt");
  assert.equal(interrupt.tasksLeft, 0, "the interrupted task was released on the cluster");
  assert.equal(interrupt.workers, 2);
  assert.deepEqual(interrupt.alive, [false, false, true, true], "the interrupt did not reach the worker processes");

  assert.equal(card(clientCell).payload.title, "Client");

  const end = JSON.parse(closing.stdout.trim().split("\n").pop()!) as { alive: boolean[]; status: string };
  assert.deepEqual(end.alive, [false, false, false, false]);
  assert.match(end.status, /closed\)$/);
  assert.ok(!existsSync(outcome.folder));
});
