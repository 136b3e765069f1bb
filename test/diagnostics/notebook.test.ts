// ProgressBar and the profilers in a real tslab kernel: the bar is one live output carrying the
// tsdask progress payload and a text fallback, throttled, ending in the right state.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ProgressPayload } from "../../src/protocol";
import { type CellReport, cellStartingWith, describeFailures, type IopubMessage, type NotebookReport, runNotebook } from "../notebook/harness";

const MIME = "application/vnd.tsdask.v1+json";

describe("diagnostics in a real kernel", () => {
  let running: Promise<NotebookReport> | undefined;
  const report = () => (running ??= runNotebook("test/notebooks/diagnostics.ipynb", { drainSeconds: 0.5, inTemporaryCopy: true }));
  const displays = (cell: CellReport): IopubMessage[] =>
    cell.messages.filter((m) => m.msg_type === "display_data" || m.msg_type === "update_display_data");
  const payloads = (cell: CellReport): ProgressPayload[] =>
    displays(cell).map((m) => (m.content.data as Record<string, unknown>)[MIME] as ProgressPayload);
  const printed = (cell: CellReport): Record<string, unknown> => JSON.parse(cell.stdout.trim().split("\n").at(-1)!);

  test("every cell ran and went idle", async () => {
    const result = await report();
    assert.ok(result.ok, describeFailures(result));
  });

  test("a ProgressBar is one live output, updated while running, ending finished", async () => {
    const cell = cellStartingWith(await report(), "{\n  const started");
    const messages = displays(cell);
    const { seconds } = printed(cell) as { seconds: number };
    assert.equal(messages[0]!.msg_type, "display_data");
    assert.ok(messages.slice(1).every((m) => m.msg_type === "update_display_data"));
    assert.equal(new Set(messages.map((m) => m.display_id)).size, 1);
    assert.ok(messages.length >= 3, `${messages.length} messages: no updates while running`);
    assert.ok(messages.length <= Math.ceil(seconds * 10) + 2, `${messages.length} messages in ${seconds} s`);
    const all = payloads(cell);
    const last = all.at(-1)!;
    assert.equal(last.kind, "progress");
    assert.equal(last.state, "finished");
    assert.deepEqual([last.done, last.total], [150, 150]);
    assert.deepEqual(last.groups, [{ name: "nap", done: 150, total: 150 }]);
    assert.ok(all.slice(0, -1).every((p) => p.state === "running"));
    const text = (messages.at(-1)!.content.data as Record<string, unknown>)["text/plain"];
    assert.match(String(text), /^\[#{40}\] \| 100% Completed \| /);
    assert.ok(!cell.stdout.includes("Completed"), "no text bar on stdout in a notebook");
  });

  test("profilers alongside a bar in one block", async () => {
    const cell = cellStartingWith(await report(), "{\n  const prof");
    assert.deepEqual(printed(cell), { tasks: 150, cached: 150, samples: true, aligned: true });
    assert.equal(payloads(cell).at(-1)!.state, "finished");
  });

  test("an aborted computation ends the bar as cancelled", async () => {
    const cell = cellStartingWith(await report(), "{\n  const controller");
    assert.deepEqual(printed(cell), { failed: "AbortError" });
    const last = payloads(cell).at(-1)!;
    assert.equal(last.state, "cancelled");
    assert.ok(last.done < last.total);
  });
});
