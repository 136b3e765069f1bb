// Notebooks against the real tslab kernel: the user notebooks are shared out among the notebook
// test files and each runs clean as written (this file: the short ones); the display bridge
// delivers throttled, complete updates without losing a message; the quick start's live outputs.
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { type CellReport, cellStartingWith, describeFailures, displays, type IopubMessage, type NotebookReport, runNotebook } from "./notebook/harness";
import { NOTEBOOK_TEST_FILE, runUserNotebook, testRunsAsWritten, userNotebooks } from "./notebook/user-notebooks";

const root = resolve(__dirname, "../..");
const MIME = "application/vnd.tsdask.v1+json";

describe("user notebooks run as written", () => {
  test("there are notebooks to run, and each is run by one of the notebook test files", () => {
    const notebooks = userNotebooks();
    assert.ok(notebooks.includes("getting-started.ipynb") && notebooks.includes("quickstart.ipynb"));
    const unassigned = notebooks.filter((name) => NOTEBOOK_TEST_FILE[name] === undefined);
    assert.deepEqual(unassigned, [], "notebooks no test file runs: give each a line in test/notebook/user-notebooks.ts");
    const gone = Object.keys(NOTEBOOK_TEST_FILE).filter((name) => !notebooks.includes(name));
    assert.deepEqual(gone, [], "test/notebook/user-notebooks.ts names notebooks that are not in notebooks/");
  });

  for (const name of userNotebooks()) if (NOTEBOOK_TEST_FILE[name] === "notebook.test.ts") testRunsAsWritten(name);
});

describe("the display bridge in a real kernel", () => {
  // One kernel run for all the checks below, started by the first of them.
  let running: Promise<NotebookReport> | undefined;
  const bridgeReport = () => (running ??= runNotebook("test/notebooks/display-bridge.ipynb", { drainSeconds: 0.5, inTemporaryCopy: true }));

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

describe("the quick start, live and as saved", () => {
  type SavedOutput = { output_type: string; data?: Record<string, unknown>; text?: string | string[] };
  type SavedCell = { cell_type: string; source: string | string[]; outputs?: SavedOutput[] };
  const file = join(root, "notebooks/quickstart.ipynb");
  const saved = (): SavedCell[] => (JSON.parse(readFileSync(file, "utf8")) as { cells: SavedCell[] }).cells;
  const joined = (text: string | string[] | undefined): string => (Array.isArray(text) ? text.join("") : (text ?? ""));
  const savedCell = (start: string): SavedCell => {
    const found = saved().find((c) => c.cell_type === "code" && joined(c.source).startsWith(start));
    assert.ok(found !== undefined, `no saved cell starts with ${JSON.stringify(start)}`);
    return found;
  };
  const tsdaskOutputs = (cell: SavedCell): Record<string, unknown>[] =>
    (cell.outputs ?? []).flatMap((o) => (o.data?.[MIME] === undefined ? [] : [o.data[MIME] as Record<string, unknown>]));
  const payloadOf = (m: IopubMessage): Record<string, unknown> => (m.content.data as Record<string, unknown>)[MIME] as Record<string, unknown>;

  test("the saved file is a small, valid notebook whose plots carry a static SVG", () => {
    assert.ok(statSync(file).size < 2_000_000, `${statSync(file).size} bytes`);
    // The seeds' own lines, without await: the plot and its image are still saved in their cell.
    for (const start of ["prof.visualize()", "visualize(["]) {
      const output = (savedCell(start).outputs ?? []).find((o) => o.data?.[MIME] !== undefined);
      assert.ok(output?.data !== undefined, `${start}: no tsdask output saved`);
      assert.match(joined(output.data["image/svg+xml"] as string | string[]), /^<svg[\s\S]*<\/svg>$/);
      // Arrays run on the thread pool: one row per thread (as many as the machine that saved it has cores).
      const workers = Number(/^tsdask profile: \d+ tasks on (\d+) workers?/.exec(joined(output.data["text/plain"] as string | string[]))?.[1]);
      assert.ok(workers >= 2 || availableParallelism() === 1, `${start}: ${workers} workers`);
    }
  });

  test("the progress bar: one live output whose last state, sent before the cell went idle, is finished", async () => {
    const cell = cellStartingWith(await runUserNotebook("quickstart.ipynb"), "const a = da.random.normal");
    const messages = displays(cell);
    assert.ok(messages.length >= 3, `${messages.length} display messages: the bar did not update while running`);
    assert.equal(new Set(messages.map((m) => m.display_id)).size, 1);
    const last = payloadOf(messages.at(-1)!);
    assert.equal(last.kind, "progress");
    assert.equal(last.state, "finished");
    assert.equal(last.done, last.total);
    assert.ok((last.total as number) > 100, `total ${String(last.total)}`);
    assert.ok(messages.slice(0, -1).every((m) => payloadOf(m).state === "running"));
    const idle = cell.messages.findIndex((m) => m.msg_type === "status" && m.content.execution_state === "idle");
    assert.ok(idle > cell.messages.indexOf(messages.at(-1)!), "the finished state arrived after the cell went idle (a frontend drops it)");
    // And so it is what the saved notebook shows.
    const [savedBar] = tsdaskOutputs(savedCell("const a = da.random.normal"));
    assert.equal(savedBar?.state, "finished");
    assert.equal(savedBar?.done, savedBar?.total);
  });

  test("visualize stacks the three profilers' plots, one linked zoom over all three", async () => {
    const cell = cellStartingWith(await runUserNotebook("quickstart.ipynb"), "visualize([");
    const [plot] = displays(cell).map(payloadOf);
    assert.equal(plot?.kind, "plot");
    const spec = plot!.spec as { vconcat: unknown[]; params: { bind: string; views: string[] }[] };
    assert.equal(spec.vconcat.length, 3);
    const names = ["plot_0", "plot_1", "plot_2"];
    assert.deepEqual(spec.params.map((p) => [p.bind, p.views]), [["scales", names]]);
    // Each name is a unit inside its own plot, top to bottom.
    spec.vconcat.forEach((view, i) => assert.ok(JSON.stringify(view).includes(`"name":"${names[i]}"`), `plot ${i} holds no ${names[i]}`));
    assert.deepEqual(tsdaskOutputs(savedCell("visualize([")).map((p) => (p.spec as { vconcat: unknown[] }).vconcat.length), [3]);
  });

  test("the records print like Dask's: a resource sample has time, mem and cpu", async () => {
    const report = await runUserNotebook("quickstart.ipynb");
    const sample = cellStartingWith(report, "rprof.results[0]").stdout;
    assert.match(sample, /^\{ time: \d{10}\.\d+, mem: [\d.]+, cpu: [\d.]+ \}\n$/);
    assert.match(cellStartingWith(report, "prof.results[0]").stdout, /key: \[ 'random_sample-[0-9a-f]+', \d, 0 \][\s\S]*startTime: \d+[\s\S]*workerId: \d+/);
    assert.match(cellStartingWith(report, "cprof.results[0]").stdout, /metric: 1,[\s\S]*cacheTime: \d+[\s\S]*freeTime: \d+/);
    assert.equal(cellStartingWith(report, "class PrintKeys").stdout, "Computing: 'a'!\nComputing: 'b'!\nComputing: 'c'!\n18\n");
  });
});
