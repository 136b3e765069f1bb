// The task stream on the local schedulers: records with Dask's fields, one row per worker thread,
// failed tasks black, phases in seed 003's colours, binned past 5 000 phases.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import { TaskStreamCollector, TaskStreamTable, getTaskStream, get, now, withCallbacks } from "../../src";
import { PHASE_COLORS, streamRows, taskStreamSpec } from "../../src/kernel/diagnostics/taskstream";
import { DETAIL_LIMIT, binCount } from "../../src/protocol/plot/bins";
import { recentTaskStream } from "../../src/protocol/plot/taskstream-window";
import type { TaskStreamRecord } from "../../src/protocol/records";
import { add, boom, busy } from "./tasks";

const EVIL = "<img src=x onerror=globalThis.__xss=1>";

type Spec = Record<string, unknown> & { data: { values: Record<string, unknown>[] }; encoding: Record<string, { scale?: { domain: string[]; range?: string[] } }> };
const specOf = (table: TaskStreamTable): Spec => taskStreamSpec(table, { width: 800, title: "t", palette: ["#4c78a8", "#54a24b"] }) as Spec;
const colorOf = (spec: Spec, group: string): string => {
  const { domain, range } = spec.encoding.color.scale!;
  return range![domain.indexOf(group)];
};

function fourBusy(ms: number): Record<string, unknown> {
  return { a: [busy, ms], b: [busy, ms], c: [busy, ms], d: [busy, ms], total: [add, "a", "b"], total2: [add, "c", "d"] };
}

describe("getTaskStream", () => {
  test("sync: every task is a record on the calling thread, with Dask's fields", async () => {
    const ts = await getTaskStream(() => get({ x: 1, y: [add, "x", 2], z: [add, "y", "y"] }, "z"));
    assert.equal(ts.result, 6);
    assert.equal(ts.figure, undefined);
    assert.deepEqual(ts.data.map((r) => r.key).sort(), ["y", "z"]);
    const record = ts.data.find((r) => r.key === "z")!;
    assert.deepEqual(Object.keys(record).sort(), ["key", "nbytes", "prefix", "startstops", "status", "thread", "type", "worker"]);
    assert.equal(record.worker, "main");
    assert.equal(record.thread, threadId);
    assert.equal(record.status, "OK");
    assert.equal(record.type, "number");
    assert.equal(record.nbytes, 8);
    assert.equal(record.startstops.length, 1);
    assert.equal(record.startstops[0].action, "compute");
    assert.ok(record.startstops[0].stop >= record.startstops[0].start);
    assert.deepEqual(streamRows(ts.table).labels, ["main"]);
  });

  test("threads: one row per worker thread, tasks on the worker's own clock", async () => {
    const before = now();
    const ts = await getTaskStream(() => get(fourBusy(60), ["total", "total2"], { scheduler: "threads", numWorkers: 2 }));
    const after = now();
    assert.equal((ts.result as unknown[]).length, 2);
    const workers = new Set(ts.data.map((r) => r.worker));
    assert.equal(workers.size, 2, `workers: ${[...workers].join(", ")}`);
    for (const record of ts.data) {
      assert.equal(record.worker, String(record.thread));
      assert.ok(record.startstops[0].start >= before && record.startstops[0].stop <= after);
    }
    const busyOnes = ts.data.filter((r) => r.prefix === "a" || r.prefix === "b" || r.prefix === "c" || r.prefix === "d");
    for (const record of busyOnes) assert.ok(record.startstops[0].stop - record.startstops[0].start >= 0.055);
    assert.equal(streamRows(ts.table).labels.length, 2);
  });

  test("processes: rows are the worker processes", async () => {
    const ts = await getTaskStream(() => get(fourBusy(30), ["total", "total2"], { scheduler: "processes", numWorkers: 2 }));
    assert.equal(new Set(ts.data.map((r) => r.worker)).size, 2);
    assert.ok(ts.data.every((r) => Number(r.worker) !== process.pid));
  });

  test("a failed task is in the stream, black; the block's error is raised", async () => {
    const collector = new TaskStreamCollector();
    await assert.rejects(
      withCallbacks(collector, () => get({ a: 1, b: [add, "a", 1], [EVIL]: [boom, "b"] }, EVIL)),
      /boom/,
    );
    const failed = collector.data.find((r) => r.status === "error")!;
    assert.equal(failed.key, EVIL);
    assert.equal(failed.type, "RangeError");
    assert.equal(failed.nbytes, 0);
    const spec = specOf(collector.table);
    const mark = spec.data.values.find((v) => v.key === EVIL)!;
    assert.equal(mark.color, "error");
    assert.equal(mark.status, "error");
    assert.equal(colorOf(spec, "error"), "#000000");
    assert.equal(colorOf(spec, String(spec.data.values.find((v) => v.status === "OK")!.color)), "#4c78a8");
  });

  test("plot: true shows or saves the plot; bad options are refused", async () => {
    await assert.rejects(getTaskStream(() => 1, { plot: "yes" as never }), /Option plot must be true, false or "save"/);
    // A call that plots returns a DisplayHandle, not a promise: bad options throw at the call, as visualize()'s do.
    assert.throws(() => getTaskStream(() => 1, { plot: true, colour: "red" } as never), /Unknown visualize option "colour"/);
    await assert.rejects(getTaskStream(1 as never), /getTaskStream takes the block to run as a function/);
    assert.throws(() => getTaskStream(1 as never, { plot: true }), /getTaskStream takes the block to run as a function/);
    await assert.rejects(getTaskStream(() => 1, { width: 300 } as never), /Unknown getTaskStream option "width" \(plot options need plot: true\)/);
    const dir = mkdtempSync(join(tmpdir(), "tsdask-ts-plot-"));
    try {
      const file = join(dir, "stream.html");
      const ts = await getTaskStream(() => get({ a: [(x: number) => x + 1, 1] }, "a"), { plot: "save", filename: file });
      assert.equal(ts.result, 2);
      assert.equal(ts.data.length, 1);
      assert.equal(ts.figure.file, file);
      assert.ok(existsSync(file));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the task-stream plot", () => {
  const record = (key: string, worker: string, thread: number, phases: TaskStreamRecord["startstops"], status: "OK" | "error" = "OK"): TaskStreamRecord => ({
    key,
    prefix: key.split("-")[0],
    worker,
    thread,
    status,
    nbytes: 1024,
    type: "Float64Array",
    startstops: phases,
  });

  test("phases in seed 003's colours: transfer red, disk orange, deserialize grey; rows are worker threads", () => {
    const table = TaskStreamTable.fromRecords([
      record("inc-1", "tcp://a", 1, [{ action: "transfer", start: 0, stop: 1, source: "tcp://b" }, { action: "compute", start: 1, stop: 3 }]),
      record("inc-2", "tcp://a", 2, [{ action: "disk-read", start: 0, stop: 0.5 }, { action: "deserialize", start: 0.5, stop: 0.7 }, { action: "compute", start: 0.7, stop: 2 }]),
      record("dec-1", "tcp://b", 1, [{ action: "compute", start: 0, stop: 2 }, { action: "disk-write", start: 2, stop: 2.2 }]),
    ]);
    assert.equal(table.taskCount, 3);
    assert.equal(table.phaseCount, 7);
    assert.deepEqual(table.records()[0].startstops[0], { action: "transfer", start: 0, stop: 1, source: "tcp://b" });
    const spec = specOf(table);
    assert.deepEqual(streamRows(table).labels, ["tcp://a-1", "tcp://a-2", "tcp://b"]);
    const groups = spec.data.values.map((v) => v.color);
    assert.deepEqual(groups, ["transfer", "inc", "disk-read", "deserialize", "inc", "dec", "disk-write"]);
    assert.equal(colorOf(spec, "transfer"), PHASE_COLORS.transfer);
    assert.equal(colorOf(spec, "disk-read"), PHASE_COLORS["disk-read"]);
    assert.equal(colorOf(spec, "disk-write"), PHASE_COLORS["disk-write"]);
    assert.equal(colorOf(spec, "deserialize"), PHASE_COLORS.deserialize);
    assert.equal(colorOf(spec, "inc"), "#4c78a8", "the busiest prefix gets the first colour");
    const hover = spec.data.values[0];
    assert.equal(hover.key, "inc-1");
    assert.equal(hover.phase, "transfer");
    assert.equal(hover.duration, "1.00 s");
    assert.equal(hover.bytes, "1.00 kiB");
    const tooltip = (spec.encoding.tooltip as unknown as { title: string }[]).map((t) => t.title);
    assert.deepEqual(tooltip.slice(0, 6), ["Key", "Phase", "Prefix", "Duration", "Start (s)", "Bytes"]);
    assert.deepEqual((spec.params as { bind: string }[])[0].bind, "scales", "the wheel zooms the time axis");
  });

  test(`above ${DETAIL_LIMIT} phases the plot shows per-row time bins, bounded whatever the count`, () => {
    const records: TaskStreamRecord[] = [];
    for (let i = 0; i < 40_000; i++) {
      const start = i * 0.001;
      records.push(record(i % 3 === 0 ? `inc-${i}` : `dec-${i}`, "w", i % 4, [{ action: "compute", start, stop: start + 0.0009 }], i === 17 ? "error" : "OK"));
    }
    const spec = specOf(TaskStreamTable.fromRecords(records));
    const rows = 4;
    assert.ok(spec.data.values.length <= rows * binCount(800), `${spec.data.values.length} marks`);
    assert.ok(spec.data.values.length > rows * 10);
    assert.ok(spec.encoding.opacity !== undefined, "busy share shades the bins");
    assert.match(String((spec.title as { subtitle: string }).subtitle), /40000 tasks on 4 threads, shown in time bins/);
    const busyShare = spec.data.values.map((v) => v.busy as number);
    assert.ok(busyShare.every((b) => b >= 0 && b <= 1));
    assert.ok(JSON.stringify(spec).length < 400_000);
  });

  test("keys with HTML in them are plain data (the views show text)", () => {
    const spec = specOf(TaskStreamTable.fromRecords([record(EVIL, "w", 1, [{ action: "compute", start: 0, stop: 1 }])]));
    assert.equal(spec.data.values[0].key, EVIL);
  });
});

describe("the live task stream's rolling window (Dask's dashboard TaskStream)", () => {
  /** `n` tasks of `prefix` back to back on two threads from `start`, each `ms` long. */
  const burst = (prefix: string, n: number, start: number, ms: number): TaskStreamRecord[] =>
    Array.from({ length: n }, (_, i) => {
      const begin = start + Math.floor(i / 2) * (ms / 1000);
      return {
        key: `('${prefix}-${i}')`,
        prefix,
        worker: "tcp://127.0.0.1:1",
        thread: i % 2,
        status: "OK" as const,
        nbytes: 8,
        type: "number",
        startstops: [{ action: "compute" as const, start: begin, stop: begin + ms / 1000 }],
      };
    });
  const names = (records: readonly TaskStreamRecord[]): Record<string, number> => {
    const counts: Record<string, number> = {};
    for (const record of records) counts[record.prefix] = (counts[record.prefix] ?? 0) + 1;
    return counts;
  };

  // Port of distributed/dashboard/tests/test_scheduler_bokeh.py::test_task_stream_clear_interval
  test("test_task_stream_clear_interval: work after a short pause joins the window; after a long one it starts a new window", () => {
    const inc = burst("inc", 10, 1000, 1);
    const dec = burst("dec", 10, 1000.01 + 0.01, 1);
    assert.deepEqual(names(recentTaskStream([...inc, ...dec], { clearInterval: 0.2 })), { inc: 10, dec: 10 });
    const later = burst("inc", 10, 1000.02 + 0.3 + 0.01, 1).map((record, i) => ({ ...record, key: `('inc-${10 + i}')` }));
    const shown = recentTaskStream([...inc, ...dec, ...later], { clearInterval: 0.2 });
    assert.deepEqual(names(shown), { inc: 10 });
    assert.deepEqual(shown, later);
  });

  test("the default clear interval is Dask's 20 s: a 5 s pause keeps the window, a minute's pause after a short run starts a new one", () => {
    const first = burst("load", 20, 1000, 100);
    const soon = burst("qr", 20, 1002 + 5, 100);
    assert.deepEqual(names(recentTaskStream([...first, ...soon])), { load: 20, qr: 20 });
    const much = burst("again", 20, 1002 + 60, 100);
    assert.deepEqual(names(recentTaskStream([...first, ...soon, ...much])), { again: 20 });
    // Dense old work wider than the pause stays: a 25 s pause after 30 s of work on every thread.
    const long = burst("long", 600, 1000, 100);
    const after = burst("after", 4, 1030 + 25, 100);
    assert.deepEqual(names(recentTaskStream([...long, ...after])), { long: 600, after: 4 });
  });

  test("records keep their order; none, or a bad interval, are handled", () => {
    assert.deepEqual(recentTaskStream([]), []);
    const shuffled = [...burst("b", 4, 1001, 10), ...burst("a", 4, 1000, 10)];
    assert.deepEqual(recentTaskStream(shuffled), shuffled);
    assert.throws(() => recentTaskStream(shuffled, { clearInterval: -1 }), /clearInterval must be a number of seconds ≥ 0, got -1/);
  });
});
