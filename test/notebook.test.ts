// Notebooks against the real tslab kernel: every user notebook runs clean as written, and the
// display bridge delivers throttled, complete updates without losing a message.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { type CellReport, cellStartingWith, describeFailures, type IopubMessage, type NotebookReport, runNotebook } from "./notebook/harness";

const root = resolve(__dirname, "../..");
const MIME = "application/vnd.tsdask.v1+json";

describe("user notebooks run as written", () => {
  const notebooks = readdirSync(join(root, "notebooks")).filter((name) => name.endsWith(".ipynb"));

  test("there are notebooks to run", () => assert.ok(notebooks.includes("getting-started.ipynb")));

  for (const name of notebooks) {
    test(name, async () => {
      const path = join("notebooks", name);
      const report = await runNotebook(path);
      assert.ok(report.ok, describeFailures(report));
      // Saved outputs let readers see results without a kernel: a cell that prints now must carry output.
      const saved = JSON.parse(readFileSync(join(root, path), "utf8")) as { cells: { outputs?: unknown[] }[] };
      for (const cell of report.cells) {
        const printed = cell.messages.some((m) => m.msg_type === "stream" || m.msg_type === "display_data");
        if (printed) assert.ok((saved.cells[cell.index]?.outputs ?? []).length > 0, `${name} cell ${cell.index} has no saved output; run npm run notebooks`);
      }
    });
  }
});

describe("the display bridge in a real kernel", () => {
  // One kernel run for all the checks below, started by the first of them.
  let running: Promise<NotebookReport> | undefined;
  const bridgeReport = () => (running ??= runNotebook("test/notebooks/display-bridge.ipynb", { drainSeconds: 0.5 }));

  const displays = (cell: CellReport): IopubMessage[] =>
    cell.messages.filter((m) => m.msg_type === "display_data" || m.msg_type === "update_display_data");
  const printed = (cell: CellReport): Record<string, number> => JSON.parse(cell.stdout.trim().split("\n").at(-1)!);
  const dataOf = (message: IopubMessage): Record<string, unknown> => message.content.data as Record<string, unknown>;

  test("every cell ran and went idle; the bridge saw a notebook", async () => {
    const report = await bridgeReport();
    assert.ok(report.ok, describeFailures(report));
    assert.deepEqual(printed(cellStartingWith(report, "import")), { inNotebook: true });
  });

  test("2000 updates over a second: one display_data, then a bounded number of updates, the last one final", async () => {
    const cell = cellStartingWith(await bridgeReport(), "{\n  const live = newLiveDisplay();\n  const started");
    const { sends, seconds } = printed(cell);
    const messages = displays(cell);
    assert.equal(messages.length, sends, "every send arrived");
    assert.equal(messages[0]!.msg_type, "display_data");
    assert.ok(messages.slice(1).every((m) => m.msg_type === "update_display_data"));
    assert.equal(new Set(messages.map((m) => m.display_id)).size, 1, "one display id");
    assert.ok(messages[0]!.display_id);
    // At most ~10 sends per second of updating (plus the first and the flushed one), and more
    // than the first and last: the display kept the notebook up to date while updates ran.
    assert.ok(messages.length <= Math.ceil(seconds * 10) + 2, `${messages.length} sends in ${seconds} s`);
    assert.ok(messages.length >= 4, `${messages.length} sends in ${seconds} s: no intermediate updates`);
    // The payload travels as a JSON object, with its text fallback.
    assert.deepEqual(dataOf(messages.at(-1)!), { [MIME]: { kind: "test", done: 2000, total: 2000 }, "text/plain": "2000/2000" });
    const done = messages.map((m) => (dataOf(m)[MIME] as { done: number }).done);
    assert.deepEqual(done, [...done].sort((a, b) => a - b), "updates arrive in order");
  });

  test("a synchronous burst of 2000 updates becomes two messages and the cell still goes idle", async () => {
    const cell = cellStartingWith(await bridgeReport(), "{\n  const live = newLiveDisplay();\n  for");
    const messages = displays(cell);
    assert.deepEqual(printed(cell), { sends: 2 });
    assert.deepEqual(messages.map((m) => m.msg_type), ["display_data", "update_display_data"]);
    assert.equal(dataOf(messages[1]!)["text/plain"], "2000/2000");
    assert.ok(cell.idle);
  });

  test("an update left pending when the cell ends is still sent, to the same display", async () => {
    const report = await bridgeReport();
    const first = displays(cellStartingWith(report, "const late"));
    assert.deepEqual(first.map((m) => dataOf(m)["text/plain"]), ["1/2"]);
    // tslab routes it to the request running when it is sent: the next cell.
    const later = displays(cellStartingWith(report, "await new Promise"));
    assert.deepEqual(later.map((m) => [m.msg_type, m.display_id, dataOf(m)["text/plain"]]), [
      ["update_display_data", first[0]!.display_id, "2/2"],
    ]);
    assert.deepEqual(printed(cellStartingWith(report, "await new Promise")), { sends: 2 });
  });

  test("a one-shot display appears between the prints around it", async () => {
    const cell = cellStartingWith(await bridgeReport(), 'console.log("before")');
    const order = cell.messages
      .filter((m) => m.msg_type !== "status")
      .map((m) => (m.msg_type === "stream" ? (m.content.text as string).trim() : m.msg_type));
    assert.deepEqual(order, ["before", "display_data", "after"]);
  });
});
