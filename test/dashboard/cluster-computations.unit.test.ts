// How the dashboard counts a cluster's computations, against a scheduler stand-in (the real
// task-stream ring, a table of task states): finished tasks counted from the ring for the oldest
// computation expecting their prefix, never for one submitted after them; records the ring lost
// before anyone looked still counted; the outcome from the requested keys (finished, errored,
// cancelled when released). The real cluster is in cluster-feed.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ClusterComputations } from "../../src/kernel/distributed/dashboard";
import type { Scheduler } from "../../src/kernel/distributed/scheduler/scheduler";
import type { GraphSubmission, TaskListener, TaskStateName } from "../../src/kernel/distributed/scheduler/state";
import { TaskStreamRing } from "../../src/kernel/distributed/scheduler/task-stream";
import type { TaskStreamRecord } from "../../src/protocol/records";

/** Just what ClusterComputations reads of a Scheduler. */
class FakeScheduler {
  readonly taskStream = new TaskStreamRing(8);
  readonly tasks: { key: string; state: TaskStateName }[] = [];
  readonly listeners = new Map<number, TaskListener>();
  readonly state = {
    stateOf: (slot: number): TaskStateName => this.tasks[slot].state,
    keyOf: (slot: number): string => this.tasks[slot].key,
    addListener: (slot: number, listener: TaskListener): void => void this.listeners.set(slot, listener),
    removeListener: (slot: number): void => void this.listeners.delete(slot),
  };

  taskCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { state } of this.tasks) counts[state] = (counts[state] ?? 0) + 1;
    return counts;
  }

  /** Adds `keys` as waiting tasks; the last one is requested. Returns the submission and its slots. */
  submit(keys: readonly string[]): [GraphSubmission, Int32Array] {
    const slots = Int32Array.from(keys, (key) => this.tasks.push({ key, state: "waiting" }) - 1);
    const prefixes = keys.map((key) => key.split("-")[0]);
    const graph = { keys, names: keys, prefixes, groups: prefixes, tasks: keys.map(() => ["lit", 0]), wanted: [keys.length - 1] } as unknown as GraphSubmission;
    return [graph, slots];
  }

  finish(slot: number): void {
    const task = this.tasks[slot];
    task.state = "memory";
    const record: TaskStreamRecord = { key: task.key, prefix: task.key.split("-")[0], worker: "w", thread: 0, status: "OK", nbytes: 8, type: "number", startstops: [] };
    this.taskStream.push(record);
    this.listeners.get(slot)?.finished?.(slot, undefined, undefined);
  }
}

function setup(): { scheduler: FakeScheduler; computations: ClusterComputations; ends: { count: number } } {
  const scheduler = new FakeScheduler();
  const ends = { count: 0 };
  const computations = new ClusterComputations(scheduler as unknown as Scheduler, () => void ends.count++);
  return { scheduler, computations, ends };
}

test("finished tasks count for the oldest computation expecting their prefix, never for a later one", () => {
  const { scheduler, computations } = setup();
  const [first, firstSlots] = scheduler.submit(["inc-0", "inc-1", "sum-0"]);
  computations.submitted(first, firstSlots);
  scheduler.finish(firstSlots[0]);
  const [second, secondSlots] = scheduler.submit(["inc-2", "inc-3", "total-0"]);
  computations.submitted(second, secondSlots);
  scheduler.finish(secondSlots[0]);
  scheduler.finish(secondSlots[1]);
  const [b, a] = computations.progress();
  // inc-0 finished before the second was submitted: the first's. Then the first still expected one inc.
  assert.deepEqual({ label: a.label, done: a.done, total: a.total, state: a.state }, { label: "sum", done: 2, total: 3, state: "running" });
  assert.deepEqual({ label: b.label, done: b.done, total: b.total }, { label: "total", done: 1, total: 3 });
  assert.deepEqual(b.groups, [
    { name: "inc", done: 1, total: 2 },
    { name: "total", done: 0, total: 1 },
  ]);
});

test("records the ring dropped before anyone looked are still counted, oldest computation first", () => {
  const { scheduler, computations } = setup();
  const keys = Array.from({ length: 20 }, (_, i) => `inc-${i}`);
  const [graph, slots] = scheduler.submit([...keys, "sum-0"]);
  computations.submitted(graph, slots);
  for (let i = 0; i < 20; i++) scheduler.finish(slots[i]); // the ring holds 8
  const [run] = computations.progress();
  assert.equal(run.done, 20);
  assert.deepEqual(run.groups[0], { name: "inc", done: 20, total: 20 });
});

test("the outcome comes from the requested keys: finished, errored, or cancelled once released", () => {
  const { scheduler, computations, ends } = setup();
  const [ok, okSlots] = scheduler.submit(["inc-0", "sum-0"]);
  computations.submitted(ok, okSlots);
  scheduler.finish(okSlots[0]);
  scheduler.finish(okSlots[1]);
  assert.equal(ends.count, 1, "the end is news at once");
  assert.deepEqual(computations.progress().map((run) => [run.state, run.done, run.total]), [["finished", 2, 2]]);
  assert.equal(scheduler.listeners.size, 0, "no listener left behind");

  const [bad, badSlots] = scheduler.submit(["boom-0", "after-0"]);
  computations.submitted(bad, badSlots);
  for (const slot of badSlots) scheduler.tasks[slot].state = "erred";
  scheduler.listeners.get(badSlots[1])!.erred!(badSlots[1], { kind: "error", key: "boom-0", name: "boom-0", error: {} as never });
  assert.equal(computations.progress()[0].state, "errored");

  // Released before it ran: its requested key went back to released and the scheduler went idle.
  const [dropped, droppedSlots] = scheduler.submit(["slow-0", "slow-1"]);
  computations.submitted(dropped, droppedSlots);
  for (const slot of droppedSlots) scheduler.tasks[slot].state = "released";
  const [cancelled] = computations.progress();
  assert.deepEqual([cancelled.label, cancelled.state, cancelled.done], ["slow", "cancelled", 0]);
  assert.equal(scheduler.listeners.size, 0);
});

test("a graph whose tasks are all in memory already is no computation", () => {
  const { scheduler, computations } = setup();
  const [graph, slots] = scheduler.submit(["inc-0", "sum-0"]);
  for (const slot of slots) scheduler.tasks[slot].state = "memory";
  computations.submitted(graph, slots);
  assert.deepEqual(computations.progress(), []);
});
