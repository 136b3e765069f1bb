// SpansState alone, fed the events a scheduler would: ports of Dask's tests/test_spans.py that do
// not need a cluster (numbers in brackets: research/dask-distributed.md §11.3), with explicit times.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SpanPath } from "../../src";
import { SpansState, groupOfKey } from "../../src/kernel/metrics/spans-state";
import type { MetricRecord, SpanRecord } from "../../src/protocol/records";

/** A span path as span() builds it: one id per name. */
function path(...names: string[]): SpanPath {
  return { names, ids: names.map((name, i) => `${names.slice(0, i + 1).join("/")}#id`) };
}

function idle(record: SpanRecord): number {
  return record.metrics.find((m) => m.prefix === "N/A" && m.activity === "idle or other spans")!.value;
}

function execute(span: string, prefix: string, activity: string, value: number, unit = "seconds"): MetricRecord {
  return { context: "execute", span, prefix, activity, unit, value };
}

describe("SpansState", () => {
  test("[1] nested spans and the default span: searches by name and tag, children, roots, annotations kept after tasks are forgotten", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 2);
    const p1 = path("my workflow", "p1");
    const p2 = path("my workflow", "p2");
    const ids = state.observeTasks(
      [
        { key: "x-1", group: "x", span: path("my workflow") },
        { key: "y-1", group: "y", span: p2 },
        { key: "z-1", group: "z", span: p1 },
        { key: "d-1", group: "d" },
      ],
      1,
    );
    const [wf, p2Id, p1Id, defaultId] = ids;
    assert.equal(new Set(ids).size, 4);
    assert.deepEqual(state.idsByName(["my workflow"]), [wf]);
    assert.deepEqual(state.idsByName(["my workflow", "p2"]), [p2Id]);
    assert.deepEqual(state.rootIds(), [wf, defaultId]);
    assert.deepEqual(state.get(wf, 2)!.children, [p2Id, p1Id]);
    assert.deepEqual(state.idsByTag("my workflow"), [wf, p2Id, p1Id]);
    assert.deepEqual(state.get(defaultId, 2)!.name, ["default"]);
    for (const key of ["x-1", "y-1", "z-1", "d-1"]) state.transition(key, "forgotten");
    assert.deepEqual(state.idsByName(["my workflow", "p1"]), [p1Id], "spans outlive their tasks");
  });

  test("[3] span(a, b) creates the child with its parent; [4] the same name thrice gives three spans", () => {
    const state = new SpansState();
    const [child] = state.observeTasks([{ key: "x-1", group: "x", span: path("foo", "bar") }], 0);
    const record = state.get(child, 1)!;
    assert.deepEqual(record.name, ["foo", "bar"]);
    assert.deepEqual(state.get(record.parent!, 1)!.name, ["foo"]);
    const again = [1, 2, 3].map((i) => state.ensureSpan({ names: ["foo"], ids: [`foo-${i}`] }, i));
    assert.equal(new Set(again).size, 3);
    assert.equal(state.idsByName(["foo"]).length, 4);
  });

  test("[5] the default span is reused while it has unfinished tasks, and a new one is opened once they are done", () => {
    const state = new SpansState();
    const [first] = state.observeTasks([{ key: "a", group: "a" }], 0);
    const [same] = state.observeTasks([{ key: "b", group: "b" }], 1);
    assert.equal(same, first);
    state.taskFinished("a", 1, 2, 8);
    assert.equal(state.get(first, 3)!.done, false);
    state.taskFinished("b", 2, 3, 8);
    assert.equal(state.get(first, 4)!.done, true);
    const [next] = state.observeTasks([{ key: "c", group: "c" }], 5);
    assert.notEqual(next, first);
    assert.deepEqual(state.get(next, 5)!.name, ["default"]);
  });

  test("[8] before any task finished: start 0, stop now, nothing stored; after: ordered times and bytes", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 1);
    const [id] = state.observeTasks([{ key: "x-1", group: "x", span: path("s") }, { key: "x-2", group: "x", span: path("s") }], 10);
    let record = state.get(id, 12)!;
    assert.deepEqual([record.start, record.stop, record.nbytesTotal, record.done], [0, 12, 0, false]);
    state.transition("x-1", "processing");
    state.taskFinished("x-1", 10.5, 11, 100);
    state.taskFinished("x-2", 11, 11.5, 140);
    record = state.get(id, 20)!;
    assert.ok(record.enqueued < record.start && record.start < record.stop);
    assert.deepEqual([record.start, record.stop, record.nbytesTotal, record.done], [10.5, 11.5, 240, true]);
    assert.deepEqual(record.states, { memory: 2 });
  });

  test("[9] the same key computed twice in one span: two lives of its group, both counted", () => {
    const state = new SpansState();
    const s = path("s");
    const [first] = state.observeTasks([{ key: "x-1", group: "x", span: s }], 0);
    state.taskFinished("x-1", 0, 1, 8);
    state.transition("x-1", "forgotten");
    const [second] = state.observeTasks([{ key: "x-1", group: "x", span: s }], 2);
    state.taskFinished("x-1", 2, 3, 8);
    state.transition("x-1", "forgotten");
    assert.equal(second, first);
    assert.deepEqual(state.get(first, 4)!.states, { forgotten: 2 });
  });

  test("task groups are Dask's: a tuple key's first element, any other key itself", () => {
    assert.deepEqual([groupOfKey(["x-2", 1]), groupOfKey("hello-world-1"), groupOfKey(7), groupOfKey([3, 1])], ["x-2", "hello-world-1", "7", "3"]);
  });

  test("[10] a task group belongs to the span of its first task: later tasks naming another span join it", () => {
    const state = new SpansState();
    const ids = state.observeTasks([{ key: "x-1", group: "x", span: path("a") }, { key: "x-2", group: "x", span: path("b") }], 0);
    assert.equal(ids[1], ids[0]);
    assert.equal(state.spanOf("x-2"), ids[0]);
    assert.deepEqual(state.idsByName(["b"]), [], "the coerced task opened no span");
  });

  test("[13] metrics: each span keeps its own, a parent sums its subtree, idle is the budget not spent", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 2);
    const [foo] = state.observeTasks([{ key: "x-1", group: "x", span: path("foo") }], 0);
    const [bar] = state.observeTasks([{ key: "y-1", group: "y", span: path("foo", "bar") }], 0);
    state.addMetrics([
      execute(foo, "x", "thread-cpu", 1),
      execute(foo, "x", "thread-noncpu", 0.5),
      execute(bar, "y", "thread-cpu", 2),
      execute(bar, "y", "memory-read", 7, "bytes"),
      execute(bar, "y", "memory-read", 3, "bytes"),
      { context: "get-data", activity: "network", unit: "seconds", value: 9 },
      execute("unknown-span", "z", "thread-cpu", 9),
    ]);
    state.taskFinished("x-1", 0, 4, 0);
    state.taskFinished("y-1", 0, 5, 0);
    const fooRecord = state.get(foo, 10)!;
    const barRecord = state.get(bar, 10)!;
    const value = (record: SpanRecord, prefix: string, activity: string, unit = "seconds"): number | undefined =>
      record.metrics.find((m) => m.prefix === prefix && m.activity === activity && m.unit === unit)?.value;
    assert.equal(value(barRecord, "y", "memory-read", "bytes"), 10);
    assert.equal(value(fooRecord, "y", "thread-cpu"), 2, "a parent includes its children");
    assert.equal(value(fooRecord, "x", "thread-cpu"), 1);
    assert.equal(fooRecord.activeCpuSeconds, 5 * 2);
    assert.equal(idle(fooRecord), 10 - 3.5);
    assert.equal(idle(barRecord), 10 - 2);
    assert.ok(fooRecord.metrics.every((m) => m.value >= 0 && m.span === undefined));
    assert.deepEqual(
      state.metricRecords().map((m) => [m.span, m.prefix, m.activity, m.unit, m.value]),
      [[foo, "x", "thread-cpu", "seconds", 1], [foo, "x", "thread-noncpu", "seconds", 0.5], [bar, "y", "thread-cpu", "seconds", 2], [bar, "y", "memory-read", "bytes", 10]],
    );
  });

  test("[14] findByTags returns the top-most matches only; [15] mergeByTags sums their metrics from the earliest enqueued", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 1);
    const ids = {
      foo1: state.ensureSpan({ names: ["foo"], ids: ["foo1"] }, 1),
      bar1: state.ensureSpan({ names: ["foo", "bar"], ids: ["foo1", "bar1"] }, 2),
      bar2: state.ensureSpan({ names: ["bar"], ids: ["bar2"] }, 3),
      foo2: state.ensureSpan({ names: ["bar", "foo"], ids: ["bar2", "foo2"] }, 4),
    };
    const found = (...tags: string[]): string[] => state.findByTags(tags, 10).map((s) => s.id).sort();
    assert.deepEqual(found("foo"), ["foo1", "foo2"]);
    assert.deepEqual(found("foo", "bar"), ["bar2", "foo1"]);
    assert.deepEqual(found("bar"), ["bar1", "bar2"]);
    state.addMetrics([execute(ids.bar1, "x", "thread-cpu", 1), execute(ids.bar2, "x", "thread-cpu", 2), execute(ids.foo1, "x", "thread-cpu", 4)]);
    const merged = state.mergeByTags(["bar"], 10);
    assert.deepEqual([merged.id, merged.name, merged.children, merged.enqueued], ["(merged)", ["(merged)"], ["bar1", "bar2"], 2]);
    assert.equal(merged.metrics.find((m) => m.prefix === "x" && m.activity === "thread-cpu")!.value, 3);
    assert.throws(() => state.mergeByTags(["nope"], 10), /No span has any of the tags \["nope"\]/);
  });

  test("[17] mergeAll merges the root spans; with no span at all it is an error", () => {
    const empty = new SpansState();
    assert.throws(() => empty.mergeAll(1), /no spans to merge/);
    const state = new SpansState();
    for (const name of ["x", "y", "z"]) state.ensureSpan(path(name), 0);
    assert.deepEqual(state.mergeAll(1).children, ["x#id", "y#id", "z#id"]);
  });

  test("[18] the active budget of a finished span is (stop − enqueued) × threads; idle is what tasks did not use", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 3);
    const [id] = state.observeTasks([{ key: "x-1", group: "x", span: path("s") }], 10);
    state.addMetrics([execute(id, "x", "thread-cpu", 0.2)]);
    state.taskFinished("x-1", 10.1, 10.3, 0);
    const record = state.get(id, 99)!;
    assert.deepEqual(record.intervals, [[10, 10.3, 3]]);
    assert.ok(Math.abs(record.activeCpuSeconds - 0.9) < 1e-9);
    assert.ok(Math.abs(idle(record) - 0.7) < 1e-9);
  });

  test("[19] a span still running: its budget runs until now", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 2);
    const [id] = state.observeTasks([{ key: "x-1", group: "x", span: path("s") }], 10);
    const record = state.get(id, 13)!;
    assert.deepEqual(record.intervals, [[10, 13, 2]]);
    assert.equal(record.activeCpuSeconds, 6);
    assert.equal(idle(record), 6);
  });

  test("[20] workers join and leave during the span: the budget follows; changes after it ended do not count", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 3);
    const [id] = state.observeTasks([{ key: "x-1", group: "x", span: path("s") }], 10);
    state.setTotalThreads(11, 7);
    state.setTotalThreads(12, 3);
    state.taskFinished("x-1", 10, 13, 0);
    state.setTotalThreads(14, 10);
    const record = state.get(id, 20)!;
    assert.deepEqual(record.intervals, [[10, 11, 3], [11, 12, 7], [12, 13, 3]]);
    assert.equal(record.activeCpuSeconds, 3 + 7 + 3);
  });

  test("[21] merging overlapping and gapped spans counts an overlap once and a gap not at all", () => {
    const state = new SpansState();
    state.setTotalThreads(0, 2);
    const finish = (name: string, from: number, to: number): string => {
      const [id] = state.observeTasks([{ key: name, group: name, span: path(name) }], from);
      state.taskFinished(name, from, to, 0);
      return id;
    };
    finish("a", 10, 14);
    finish("b", 12, 16); // overlaps a
    finish("c", 20, 21); // after a gap
    const merged = state.mergeAll(30);
    assert.equal(merged.activeCpuSeconds, (16 - 10) * 2 + (21 - 20) * 2);
    assert.equal(merged.enqueued, 10);
    assert.equal(merged.stop, 21);
  });

  test("task counts without task tracking (how the local callback feeds it)", () => {
    const state = new SpansState();
    const id = state.ensureSpan(undefined, 0);
    state.countTasks(id, null, "waiting", 5);
    state.countTasks(id, "waiting", "memory", 3);
    state.taskRan(id, 1, 2, 16);
    assert.deepEqual(state.get(id, 3)!.states, { waiting: 2, memory: 3 });
    assert.equal(state.get(id, 3)!.done, false);
    state.countTasks(id, "waiting", "erred", 2);
    assert.equal(state.get(id, 3)!.done, true);
    assert.throws(() => state.countTasks("nope", null, "waiting"), /No span with id "nope"/);
  });
});
