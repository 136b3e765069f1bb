// FinePerformanceMetrics on the three local schedulers, with real worker threads and processes:
// what tasks report (thread-cpu, thread-noncpu, contextMeter labels and units) and spans. The
// seed's own check that the activities add up to wall time × threads: fpm-invariant.test.ts.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import {
  FinePerformanceMetrics,
  array as da,
  type MetricRecord,
  type SchedulerName,
  closePools,
  delayed,
  get,
  span,
  withCallbacks,
} from "../../src";
import { asyncRead, busy, combine, digestAcrossAwaits, leaveLateDigest, nested, readLike, sleepSync } from "../fixtures/metered-tasks";

after(() => closePools());

const SCHEDULERS: readonly SchedulerName[] = ["sync", "threads", "processes"];

/** Sum of the records matching prefix, activity and unit. */
function value(records: readonly MetricRecord[], prefix: string, activity: string, unit = "seconds"): number {
  return records.filter((r) => r.prefix === prefix && r.activity === activity && r.unit === unit).reduce((sum, r) => sum + r.value, 0);
}

/**
 * How far a task's own wall time (read inside its function) and the worker's (around the call) may
 * differ: the call itself, and on a busy machine the thread being descheduled in between. Counting
 * the 0.05–0.2 s sleeps below twice would show as far more.
 */
const WALL_SLACK = 0.03;

/** The task's own time (everything measured where it ran), in seconds. */
function taskSeconds(records: readonly MetricRecord[], prefix: string): number {
  return records
    .filter((r) => r.prefix === prefix && r.unit === "seconds" && r.activity !== "executor" && r.activity !== "serialize")
    .reduce((sum, r) => sum + r.value, 0);
}

async function collect(graph: Record<string, unknown>, keys: string | string[], scheduler: SchedulerName): Promise<{ fpm: FinePerformanceMetrics; results: unknown }> {
  const fpm = new FinePerformanceMetrics();
  const results = await withCallbacks(fpm, () => get(graph, keys, { scheduler, numWorkers: 2 }));
  return { fpm, results };
}

for (const scheduler of SCHEDULERS) {
  describe(`FinePerformanceMetrics (${scheduler})`, () => {
    test("a CPU-bound task shows the CPU time its thread got as thread-cpu, the rest of its wall time as thread-noncpu", async () => {
      const { fpm, results } = await collect({ "busy-1": [busy, 300] }, "busy-1", scheduler);
      const own = results as { wallMs: number; cpuMs: number };
      const records = fpm.records();
      const cpu = value(records, "busy", "thread-cpu");
      const noncpu = value(records, "busy", "thread-noncpu");
      // The OS's own count, read by the task itself: on an idle machine that is the wall time; on a
      // busy one the spinning thread gets less of a CPU, and the rest shows as thread-noncpu.
      assert.ok(own.cpuMs > 0, "the spinning thread got no CPU at all?");
      assert.ok(Math.abs(cpu - own.cpuMs / 1000) < 0.03 + 0.1 * (own.cpuMs / 1000), `thread-cpu ${cpu} s, the thread's own count ${own.cpuMs} ms`);
      assert.ok(Math.abs(cpu + noncpu - own.wallMs / 1000) < WALL_SLACK, `cpu ${cpu} + noncpu ${noncpu} vs wall ${own.wallMs} ms`);
    });

    test("a task that sleeps shows thread-noncpu", async () => {
      const { fpm } = await collect({ "sleep-1": [sleepSync, 200] }, "sleep-1", scheduler);
      const records = fpm.records();
      assert.ok(value(records, "sleep", "thread-noncpu") >= 0.19, `thread-noncpu ${value(records, "sleep", "thread-noncpu")}`);
      assert.ok(value(records, "sleep", "thread-cpu") < 0.03, `thread-cpu ${value(records, "sleep", "thread-cpu")}`);
    });

    test('meter("I/O") around a 200 ms sleep moves it from thread-noncpu to "I/O", counting nothing twice; digests keep their unit', async () => {
      const { fpm, results } = await collect(
        { "plain-1": [readLike, 200, null, 0], "metered-1": [readLike, 200, "I/O", 123_456] },
        ["plain-1", "metered-1"],
        scheduler,
      );
      const [plain, metered] = results as { wallMs: number; cpuMs: number; spinMs: number }[];
      const records = fpm.records();
      const io = value(records, "metered", "I/O");
      assert.ok(io >= 0.195 && io < 0.6, `I/O ${io} s`);
      // The sleep is thread-noncpu in the plain task, and not in the metered one, whose thread-noncpu
      // is only what its spinning did not get of a CPU.
      const spinNoncpu = (task: { cpuMs: number; spinMs: number }): number => (task.spinMs - task.cpuMs) / 1000;
      const plainNoncpu = value(records, "plain", "thread-noncpu");
      const meteredNoncpu = value(records, "metered", "thread-noncpu");
      assert.ok(plainNoncpu >= 0.19 + spinNoncpu(plain) - 0.03, `plain thread-noncpu ${plainNoncpu} s`);
      assert.ok(Math.abs(meteredNoncpu - spinNoncpu(metered)) < 0.03 + 0.1 * spinNoncpu(metered), `metered thread-noncpu ${meteredNoncpu} s, spinning off-CPU ${spinNoncpu(metered)} s`);
      // Nothing counted twice: the task's activities add up to its own wall time.
      for (const [prefix, own] of [["plain", plain], ["metered", metered]] as const) {
        const total = taskSeconds(records, prefix);
        assert.ok(Math.abs(total - own.wallMs / 1000) < WALL_SLACK, `${prefix}: Σ ${total} s, wall ${own.wallMs} ms`);
      }
      // The CPU time outside the meter stays thread-cpu (Dask would floor it to 0 here).
      const cpu = value(records, "metered", "thread-cpu");
      assert.ok(Math.abs(cpu - metered.cpuMs / 1000) < 0.03 + 0.1 * (metered.cpuMs / 1000), `thread-cpu ${cpu} s, the spinning's own count ${metered.cpuMs} ms`);
      assert.equal(value(records, "metered", "S3 Infrequent Access", "bytes"), 123_456);
      assert.ok(fpm.breakdown({ unit: "bytes" }).activities.some((slice) => slice.activity === "S3 Infrequent Access" && slice.value === 123_456));
    });

    test("nested meters log each one's own time; async tasks keep their meters across awaits", async () => {
      const { fpm, results } = await collect({ "nested-1": [nested], "async-1": [asyncRead] }, ["nested-1", "async-1"], scheduler);
      const [nestedWallMs] = results as number[];
      const records = fpm.records();
      // (Lower bounds are the sleeps; a busy machine may wake a sleeper late, so upper ones are loose.)
      const [inner, outer] = [value(records, "nested", "inner"), value(records, "nested", "outer")];
      assert.ok(inner >= 0.099 && inner < 0.5, `inner ${inner}`);
      assert.ok(outer >= 0.049 && outer < 0.5, `outer ${outer}`);
      assert.ok(Math.abs(taskSeconds(records, "nested") - nestedWallMs / 1000) < WALL_SLACK, `Σ ${taskSeconds(records, "nested")} s, wall ${nestedWallMs} ms`);
      const io = value(records, "async", "I/O");
      assert.ok(io >= 0.145 && io < 0.6, `async I/O ${io}`);
      const rest = value(records, "async", "thread-noncpu") + value(records, "async", "thread-cpu");
      assert.ok(rest >= 0.045 && rest < 0.5, `async task outside its meter ${rest} s`);
    });

    test("tasks never see each other's metrics, neither a later task on the same thread nor a concurrent one", async () => {
      const fpm = new FinePerformanceMetrics();
      // The "late" digest fires after its task returned, while the next task on that worker sleeps.
      const late = { "late-1": [leaveLateDigest, 20], "after-1": [sleepSync, 100], out: [combine, "late-1", "after-1"] };
      await withCallbacks(fpm, async () => {
        await get(late, "out", { scheduler, numWorkers: 1 });
        // Two computations at once, each of whose async tasks digests across awaits.
        await Promise.all([
          get({ "x-1": [digestAcrossAwaits, "from-x", 10] }, "x-1", { scheduler, numWorkers: 2 }),
          get({ "y-1": [digestAcrossAwaits, "from-y", 10] }, "y-1", { scheduler, numWorkers: 2 }),
        ]);
      });
      const records = fpm.records();
      assert.equal(records.filter((r) => r.activity === "late").length, 0, JSON.stringify(records.filter((r) => r.activity === "late")));
      assert.equal(value(records, "x", "from-x", "count"), 10);
      assert.equal(value(records, "y", "from-y", "count"), 10);
      assert.equal(value(records, "x", "from-y", "count") + value(records, "y", "from-x", "count"), 0);
    });
  });
}

describe("FinePerformanceMetrics: the three schedulers agree", () => {
  test("the same execute records (prefix, activity, unit) on sync, threads and processes", async () => {
    const graph = { "busy-2": [busy, 50], "sleep-2": [sleepSync, 50], "metered-2": [readLike, 50, "I/O", 10], "async-2": [asyncRead] };
    const keys = Object.keys(graph);
    const seen = new Map<SchedulerName, string[]>();
    for (const scheduler of SCHEDULERS) {
      const { fpm } = await collect(graph, keys, scheduler);
      // serialize (cloning tasks to a pool worker) exists only where tasks are cloned.
      const kinds = fpm.records().filter((r) => r.activity !== "serialize").map((r) => `${r.prefix} ${r.activity} ${r.unit}`);
      seen.set(scheduler, [...new Set(kinds)].sort());
      // (A sleeping thread may wake late on a busy machine: that is I/O time too.)
      const io = value(fpm.records(), "metered", "I/O");
      assert.ok(io >= 0.049 && io < 0.5, `${scheduler}: I/O ${io}`);
    }
    assert.deepEqual(seen.get("threads"), seen.get("sync"));
    assert.deepEqual(seen.get("processes"), seen.get("sync"));
    assert.ok(seen.get("sync")!.includes("metered S3 Infrequent Access bytes"));
  });
});

describe("FinePerformanceMetrics: spans", () => {
  const inc = (x: number): number => x + 1;

  test("tasks outside any span are in a span named default; nested spans give ['load', 'parse']", async () => {
    const fpm = new FinePerformanceMetrics();
    let loadId = "";
    let parseId = "";
    await withCallbacks(fpm, async () => {
      await get({ "a-1": [inc, 1] }, "a-1");
      await span("load", async (id) => {
        loadId = id;
        await span("parse", (inner) => {
          parseId = inner;
          return get({ "b-1": [inc, 1], "b-2": [inc, "b-1"] }, "b-2");
        });
      });
    });
    const spans = fpm.spans();
    const byName = new Map(spans.map((s) => [JSON.stringify(s.name), s]));
    assert.deepEqual([...byName.keys()].sort(), ['["default"]', '["load","parse"]', '["load"]'].sort());
    const load = byName.get('["load"]')!;
    const parse = byName.get('["load","parse"]')!;
    assert.equal(load.id, loadId);
    assert.equal(parse.id, parseId);
    assert.equal(parse.parent, loadId);
    assert.deepEqual(load.children, [parseId]);
    assert.deepEqual(parse.states, { forgotten: 2 });
    assert.deepEqual(load.states, { forgotten: 2 }, "a span's counts cover its subtree");
    assert.deepEqual(byName.get('["default"]')!.states, { forgotten: 1 });
    assert.equal(parse.nbytesTotal, 2 * 8, "two numbers");
    for (const s of [load, parse]) {
      assert.ok(s.done && s.enqueued <= s.start && s.start <= s.stop, JSON.stringify(s));
      assert.ok(s.metrics.some((m) => m.prefix === "b" && m.activity === "thread-cpu"));
    }
    assert.ok(!byName.get('["default"]')!.metrics.some((m) => m.prefix === "b"));
  });

  test("delayed values and arrays belong to the span they were built in; raw graphs to the span they run in", async () => {
    const fpm = new FinePerformanceMetrics();
    const double = delayed((x: number) => 2 * x, { name: "double" });
    const built = span("build", () => ({ value: double(21), blocks: da.ones([4, 4], { chunks: [2, 2] }) }));
    const outside = da.zeros([4, 4], { chunks: [2, 2] });
    await withCallbacks(fpm, async () => {
      assert.equal(await built.value.compute(), 42);
      await built.blocks.sum().compute({ scheduler: "threads" });
      await span("compute", () => outside.sum().compute());
      await span("raw", () => get({ "r-1": [inc, 1] }, "r-1"));
    });
    const prefixesIn = (name: string): Set<string> => {
      const found = fpm.spans().filter((s) => s.name.join("/") === name);
      return new Set(found.flatMap((s) => s.metrics.filter((m) => m.activity === "thread-cpu").map((m) => m.prefix!)));
    };
    assert.deepEqual(prefixesIn("build"), new Set(["double", "ones"]));
    // The sum was built outside any span and computed outside too: the default span.
    assert.ok(prefixesIn("default").has("sum") && prefixesIn("default").has("sum-aggregate"));
    assert.deepEqual(prefixesIn("compute"), new Set(["zeros", "sum", "sum-aggregate"]));
    assert.deepEqual(prefixesIn("raw"), new Set(["r"]));
    // Blocks in shared memory count though a thread pool moved none of their bytes.
    const build = fpm.spans().find((s) => s.name.join("/") === "build")!;
    assert.ok(build.nbytesTotal >= 4 * 4 * 8, `build span holds ${build.nbytesTotal} bytes`);
    // Computing the delayed value outside any span opened no empty default span.
    assert.ok(fpm.spans().every((s) => Object.keys(s.states).length > 0), JSON.stringify(fpm.spans().map((s) => [s.name, s.states])));
  });

  test("span() needs a name, like Dask's", () => {
    assert.throws(() => span([], () => 1), /span: must specify at least one span tag/);
    assert.throws(() => span("", () => 1), /must specify at least one span tag/);
    assert.throws(() => (span as unknown as (fn: () => number) => number)(() => 1), /at least one span tag .*a function \(the name comes first/);
    assert.throws(() => span("x", 3 as never), /span\("x", fn\): fn must be a function/);
  });
});
