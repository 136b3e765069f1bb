// The cluster scheduler's state machine alone: events in, instructions out, no processes.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ClusterState, type GraphSubmission, type TaskFailure, type TaskListener } from "../../src/kernel/distributed/scheduler/state";
import { TaskStreamRing } from "../../src/kernel/distributed/scheduler/task-stream";
import { formatKey, keyFromId, keyId } from "../../src/kernel/graph/keys";
import type { ComputeTaskMessage, FromWorker, RegisterMessage, ToWorker, WorkerMetrics } from "../../src/kernel/distributed/messages";
import type { TaskStreamRecord } from "../../src/protocol/records";
import { queueOps } from "../helpers/queue-instructions";

/** A graph from `key → dependencies`, listed dependencies first; `wanted`: the keys asked for (default: the last). */
function graph(edges: Record<string, readonly string[]>, wanted?: readonly string[]): GraphSubmission {
  const keys = Object.keys(edges);
  const index = new Map(keys.map((key, i) => [key, i]));
  const dependencyStart = new Int32Array(keys.length + 1);
  const dependencies: number[] = [];
  keys.forEach((key, i) => {
    for (const dep of edges[key]) {
      if (!index.has(dep)) throw new Error(`test graph: ${dep} must come before ${key}`);
      dependencies.push(index.get(dep)!);
    }
    dependencyStart[i + 1] = dependencies.length;
  });
  return {
    keys,
    // The scheduler's contract: a key's name is its repr (the task stream's str(key) reads it).
    names: keys.map((key) => formatKey(keyFromId(key))),
    prefixes: keys.map((key) => key.split("-")[0]),
    groups: keys.map((key) => key.split("-")[0]),
    tasks: keys.map((key) => ["call", 0, ...edges[key].map((dep) => ["ref", dep] as const)] as const),
    functions: keys.map(() => [0]),
    dependencyStart,
    dependencies: Int32Array.from(dependencies),
    order: Int32Array.from(keys.map((_, i) => i)),
    wanted: (wanted ?? [keys[keys.length - 1]]).map((key) => index.get(key)!),
  };
}

function registration(name: string, nthreads = 1, memoryLimit = 1e9): RegisterMessage {
  return { op: "register", address: `unix://${name}`, name, host: "localhost", pid: 1, nthreads, memoryLimit, globals: [], now: 0 };
}

function newState(options: Partial<ConstructorParameters<typeof ClusterState>[0]> = {}): ClusterState {
  return new ClusterState({ placement: "locality", functionSpec: () => ({ kind: "global", path: ["Math", "max"] }), ...options });
}

/** Everything sent, by worker name. */
function sent(state: ClusterState): Record<string, ToWorker[]> {
  const out: Record<string, ToWorker[]> = {};
  for (const [ws, messages] of state.takeMessages()) out[ws.name] = messages;
  return out;
}

function computeTasks(messages: readonly ToWorker[] | undefined): ComputeTaskMessage[] {
  return (messages ?? []).filter((m): m is ComputeTaskMessage => m.op === "compute-task");
}

function freed(messages: readonly ToWorker[] | undefined): string[] {
  return (messages ?? []).flatMap((m) => (m.op === "free-keys" ? m.keys : []));
}

function finished(key: string, nbytes = 8, start = 1, stop = 1.001): FromWorker {
  return { op: "task-finished", key, nbytes, type: "number", thread: 7, startstops: [{ action: "compute", start, stop }] };
}

class Recorder implements TaskListener {
  readonly events: string[] = [];
  constructor(private readonly state: ClusterState) {}
  dispatched(slot: number): void {
    this.events.push(`dispatched ${this.state.keyOf(slot)}`);
  }
  finished(slot: number): void {
    this.events.push(`finished ${this.state.keyOf(slot)}`);
  }
  erred(slot: number, failure: TaskFailure): void {
    this.events.push(`erred ${this.state.keyOf(slot)} (${failure.kind} in ${failure.key})`);
  }
}

describe("cluster scheduler state", () => {
  test("a chain goes to one worker at once, each task waiting there for the one before", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ "x-0": [], "x-1": ["x-0"], "x-2": ["x-1"] }));
    const out = sent(state);
    assert.equal(out.a[0].op, "define-functions", "the function is defined before the first task that calls it");
    const tasks = computeTasks(out.a);
    assert.deepEqual(tasks.map((t) => t.key), ["x-0", "x-1", "x-2"]);
    assert.deepEqual(tasks[1].dependencies, [{ key: "x-0", nbytes: 0, whoHas: [], local: true }]);
    assert.equal(computeTasks(sent(state).a).length, 0);
    // Results go as soon as their dependent has finished.
    state.handle("unix://a", [finished("x-0"), finished("x-1")], 2);
    assert.deepEqual(freed(sent(state).a), ["x-0"]);
    state.handle("unix://a", [finished("x-2")], 3);
    assert.deepEqual(freed(sent(state).a), ["x-1"]);
    assert.equal(state.stateOf(state.slotOf("x-2")!), "memory");
    state.unwant(state.slotOf("x-2")!);
    assert.deepEqual(freed(sent(state).a), ["x-2"]);
    assert.equal(state.taskCount, 0, "every task is forgotten once nothing holds the output");
  });

  test("without sending ahead, a dependent goes out only when its input is done", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ "x-0": [], "x-1": ["x-0"] }));
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["x-0"]);
    state.handle("unix://a", [finished("x-0", 16)], 1);
    const [task] = computeTasks(sent(state).a);
    assert.equal(task.key, "x-1");
    assert.deepEqual(task.dependencies, [{ key: "x-0", nbytes: 16, whoHas: ["unix://a"] }]);
  });

  test("a task goes to the worker holding most of its input bytes", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    state.addWorker(registration("b"), 0);
    sent(state);
    // Two independent inputs land on different workers; the big one decides where z runs.
    state.submit(graph({ big: [], small: [], z: ["big", "small"] }));
    const first = sent(state);
    const where = Object.fromEntries(Object.entries(first).flatMap(([name, msgs]) => computeTasks(msgs).map((t) => [t.key, name])));
    assert.notEqual(where.big, where.small, "the two inputs are spread over the idle workers");
    state.handle(`unix://${where.big}`, [finished("big", 80_000_000)], 1);
    state.handle(`unix://${where.small}`, [finished("small", 8)], 1);
    const second = sent(state);
    assert.deepEqual(computeTasks(second[where.big]).map((t) => t.key), ["z"]);
  });

  test("equal inputs: the less busy worker gets the task", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    state.addWorker(registration("b"), 0);
    sent(state);
    state.submit(graph({ p: [], q: [], busy: [] }, ["p", "q", "busy"]));
    const placed = sent(state);
    const where = Object.fromEntries(Object.entries(placed).flatMap(([name, msgs]) => computeTasks(msgs).map((t) => [t.key, name])));
    // Make p and q live on both workers, then load one worker and ask for a task using both.
    state.handle(`unix://${where.p}`, [finished("p", 100)], 1);
    state.handle(`unix://${where.q}`, [finished("q", 100)], 1);
    state.handle("unix://a", [{ op: "add-keys", keys: ["p", "q"] }], 1);
    state.handle("unix://b", [{ op: "add-keys", keys: ["p", "q"] }], 1);
    sent(state);
    const busyWorker = where.busy;
    state.submit(graph({ p: [], q: [], both: ["p", "q"] }, ["both"]));
    const [[ws]] = state.takeMessages().filter(([, msgs]) => computeTasks(msgs).length > 0);
    assert.notEqual(ws.name, busyWorker, "the worker still running a task is not chosen");
  });

  test("root tasks are queued: a million of them never flood the workers", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    state.addWorker(registration("b"), 0);
    sent(state);
    const n = 1_000_000;
    const keys = Array.from({ length: n }, (_, i) => `root-${i}`);
    const submission: GraphSubmission = {
      keys,
      names: keys,
      prefixes: keys.map(() => "root"),
      groups: keys.map(() => "root"),
      tasks: keys.map(() => ["call", 0] as const),
      functions: keys.map(() => [0]),
      dependencyStart: new Int32Array(n + 1),
      dependencies: new Int32Array(0),
      order: Int32Array.from(keys.map((_, i) => i)),
      wanted: keys.map((_, i) => i),
    };
    state.submit(submission);
    let out = sent(state);
    // Dask's worker-saturation 1.1 × 1 thread: two tasks each.
    assert.deepEqual(computeTasks(out.a).map((t) => t.key), ["root-0", "root-1"], "a run of neighbours per worker");
    assert.deepEqual(computeTasks(out.b).map((t) => t.key), ["root-2", "root-3"]);
    assert.equal(state.queuedCount, n - 4);
    // Once durations are known to be tiny, more go at once, but still a bounded number.
    state.handle("unix://a", [finished("root-0", 8, 1, 1.000002)], 1);
    out = sent(state);
    const given = computeTasks(out.a).length + computeTasks(out.b).length;
    for (const name of ["a", "b"]) {
      const processing = state.workers.get(`unix://${name}`)!.processing.size;
      assert.ok(processing > 2 && processing <= 1000, `a worker with tiny tasks gets a bounded batch (has ${processing})`);
    }
    assert.equal(state.stateCounts().queued, n - 4 - given);
  });

  test("a queue of tiny root tasks shorter than the workers' room is shared out evenly, chains with their roots", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    state.addWorker(registration("b"), 0);
    sent(state);
    // A first computation makes the prefix known as tiny, so each worker has room for hundreds.
    state.submit(graph({ "warm-0": [], "warm-1": [], "warm-2": [], "warm-3": [], "warm-4": [] }, ["warm-0"]));
    const first = sent(state);
    for (const [name, messages] of Object.entries(first)) {
      state.handle(`unix://${name}`, computeTasks(messages).map((t) => finished(t.key, 8, 1, 1.000001)), 1);
    }
    sent(state);
    // 400 chains of 2 (Dask's 400×2 independent): 400 root tasks, one group.
    const edges: Record<string, string[]> = {};
    for (let i = 0; i < 400; i++) edges[`warm-root${i}`] = [];
    for (let i = 0; i < 400; i++) edges[`warm-next${i}`] = [`warm-root${i}`];
    state.submit(graph(edges, Object.keys(edges).slice(400)));
    const out = sent(state);
    const roots = (name: string): number => computeTasks(out[name]).filter((t) => t.key.startsWith("warm-root")).length;
    assert.deepEqual([roots("a"), roots("b")], [200, 200], "each worker starts with half the roots, not one worker with all of them");
    assert.equal(computeTasks(out.a).length + computeTasks(out.b).length, 800, "each chain's next task follows its root");
    assert.equal(state.queuedCount, 0);
  });

  test("a root task's big results hold the queue back to a share of the memory limit", () => {
    const state = newState();
    state.addWorker(registration("a", 1, 1000), 0);
    sent(state);
    const edges: Record<string, string[]> = {};
    for (let i = 0; i < 50; i++) edges[`big-${i}`] = [];
    state.submit(graph(edges, Object.keys(edges)));
    sent(state);
    state.handle("unix://a", [finished("big-0", 400, 1, 1.000001)], 1);
    // 10 % of 1000 bytes allows no 400-byte result beyond Dask's own 2 slots.
    assert.equal(computeTasks(sent(state).a).length, 1);
  });

  test("a task error reaches the task and every dependent; nothing else runs for them", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    const recorder = new Recorder(state);
    state.submit(graph({ x: [], y: ["x"], z: ["y"] }), recorder);
    sent(state);
    const error = { kind: "error", className: "Error", name: "Error", message: "boom", stack: undefined, props: {} } as const;
    state.handle("unix://a", [{ op: "task-erred", key: "x", error, thread: 1, startstops: [{ action: "compute", start: 1, stop: 2 }] }], 2);
    assert.deepEqual(recorder.events, ["dispatched x", "erred x (error in x)", "erred y (error in x)", "erred z (error in x)"]);
    assert.equal(state.stateOf(state.slotOf("z")!), "erred");
    assert.deepEqual(state.failureOf(state.slotOf("z")!), { kind: "error", key: "x", name: "'x'", error });
    assert.equal(state.taskStream.collect()[0].status, "error");
    state.unwant(state.slotOf("z")!);
    assert.equal(state.taskCount, 0);
  });

  test("unwantAll drops one hold on each key as unwant in turn would: the same frees, in the same order", () => {
    // Two requested keys done and one still running whose input the other depends on; "x-0" held twice.
    const build = (): { state: ClusterState; recorder: Recorder; slots: number[] } => {
      const state = newState({ sendAhead: false });
      state.addWorker(registration("a"), 0);
      sent(state);
      const recorder = new Recorder(state);
      state.submit(graph({ "x-0": [], "y-0": [], "z-0": ["x-0", "y-0"], "w-0": [] }, ["x-0", "z-0", "w-0"]), recorder);
      state.want(state.slotOf("x-0")!);
      state.handle("unix://a", computeTasks(sent(state).a).map((task) => finished(task.key)), 1);
      assert.equal(state.stateOf(state.slotOf("z-0")!), "processing");
      return { state, recorder, slots: ["z-0", "x-0", "w-0"].map((key) => state.slotOf(key)!) };
    };
    const oneByOne = build();
    for (const slot of oneByOne.slots) oneByOne.state.unwant(slot);
    const together = build();
    together.state.unwantAll(together.slots);
    const messages = sent(together.state);
    assert.deepEqual(messages, sent(oneByOne.state));
    // z-0 cancelled, then its input y-0 (nobody else needs it), then w-0: the order of the keys given.
    assert.deepEqual(freed(messages.a), ["z-0", "y-0", "w-0"]);
    for (const { state } of [oneByOne, together]) {
      // x-0 alone is left, kept by its second hold.
      assert.equal(state.taskCount, 1);
      assert.equal(state.stateOf(state.slotOf("x-0")!), "memory");
    }
    assert.deepEqual(together.recorder.events, oneByOne.recorder.events);
  });

  test("an erring task frees the dependents sent ahead to its worker", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ "x-0": [], "x-1": ["x-0"] }));
    sent(state);
    const error = { kind: "value", value: 1 } as const;
    state.handle("unix://a", [{ op: "task-erred", key: "x-0", error, thread: 1, startstops: [] }], 1);
    assert.deepEqual(freed(sent(state).a), ["x-1"]);
  });

  test("releasing the last hold cancels a running computation on its workers", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [], y: ["x"] }));
    sent(state);
    state.unwant(state.slotOf("y")!);
    assert.deepEqual(freed(sent(state).a), ["x"]);
    assert.equal(state.taskCount, 0);
    assert.equal(state.workers.get("unix://a")!.processing.size, 0);
    // A late report of the cancelled task is told to go away.
    state.handle("unix://a", [finished("x")], 1);
    assert.deepEqual(freed(sent(state).a), ["x"]);
  });

  test("a worker lost mid-computation: its tasks run elsewhere, its results are recomputed", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [], y: ["x"], z: ["y"] }));
    sent(state);
    state.handle("unix://a", [finished("x")], 1);
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["y"]);
    state.addWorker(registration("b"), 1);
    sent(state);
    state.removeWorker("unix://a", "killed", 2);
    // x lived only on a: it runs again on b, then y.
    assert.deepEqual(computeTasks(sent(state).b).map((t) => t.key), ["x"]);
    assert.equal(state.stateOf(state.slotOf("y")!), "waiting");
    state.handle("unix://b", [finished("x")], 3);
    assert.deepEqual(computeTasks(sent(state).b).map((t) => t.key), ["y"]);
  });

  test("tasks sent ahead to a worker that dies are all rescheduled", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    state.addWorker(registration("b"), 0);
    sent(state);
    state.submit(graph({ "x-0": [], "x-1": ["x-0"], "x-2": ["x-1"] }));
    const first = sent(state);
    const [owner] = Object.keys(first).filter((name) => computeTasks(first[name]).length > 0);
    const other = owner === "a" ? "b" : "a";
    state.removeWorker(`unix://${owner}`, "killed", 1);
    assert.deepEqual(computeTasks(sent(state)[other]).map((t) => t.key), ["x-0", "x-1", "x-2"]);
  });

  test("a task that keeps killing its workers errs with KilledWorker after allowed-failures", () => {
    const state = newState({ allowedFailures: 3, sendAhead: false });
    const recorder = new Recorder(state);
    state.addWorker(registration("w0"), 0);
    state.submit(graph({ poison: [] }), recorder);
    for (let death = 0; death < 4; death++) {
      sent(state);
      state.addWorker(registration(`w${death + 1}`), death);
      state.removeWorker(`unix://w${death}`, "killed", death);
    }
    assert.equal(state.stateOf(state.slotOf("poison")!), "erred");
    assert.deepEqual(state.failureOf(state.slotOf("poison")!), { kind: "killed", key: "poison", name: "'poison'", worker: "unix://w3", failures: 4 });
    assert.equal(recorder.events.filter((e) => e.startsWith("dispatched")).length, 4, "tried on allowed-failures + 1 workers");
  });

  test("missing data: the holder is dropped, the key recomputed, the dependent sent again", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [], y: ["x"] }));
    sent(state);
    state.handle("unix://a", [finished("x")], 1);
    sent(state);
    state.handle("unix://a", [{ op: "missing-data", key: "x", errantWorker: "unix://a" }], 2);
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["x"]);
    state.handle("unix://a", [finished("x")], 3);
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["y"]);
  });

  test("a known key is reused, not recomputed, and lives while anyone holds it", () => {
    const state = newState({ sendAhead: false });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [] }));
    sent(state);
    state.handle("unix://a", [finished("x")], 1);
    const recorder = new Recorder(state);
    state.submit(graph({ x: [], y: ["x"] }), recorder);
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["y"]);
    state.unwant(state.slotOf("x")!);
    assert.deepEqual(freed(sent(state).a), [], "y still needs x");
  });

  test("no worker yet: ready tasks wait and go when one joins", () => {
    const state = newState();
    state.submit(graph({ x: [] }));
    assert.deepEqual(sent(state), {});
    state.addWorker(registration("late"), 1);
    assert.deepEqual(computeTasks(sent(state).late).map((t) => t.key), ["x"]);
  });

  test("a paused worker gets no new tasks until it resumes", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    state.handle("unix://a", [{ op: "worker-status-change", status: "paused" }], 1);
    state.submit(graph({ x: [] }));
    assert.deepEqual(computeTasks(sent(state).a), []);
    assert.equal(state.stateOf(state.slotOf("x")!), "no-worker");
    state.handle("unix://a", [{ op: "worker-status-change", status: "running" }], 2);
    assert.deepEqual(computeTasks(sent(state).a).map((t) => t.key), ["x"]);
  });

  test("queue placement: ready tasks go to the shared queue, results to the store", () => {
    const state = newState({ placement: "queue" });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [], y: ["x"] }));
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["enqueue", ["x"]]]);
    state.handle("unix://a", [finished("x")], 1);
    const instructions = state.takeQueueInstructions();
    assert.deepEqual(queueOps(instructions), [["enqueue", ["y"]]]);
    assert.deepEqual(instructions[0].op === "enqueue" && instructions[0].tasks[0].dependencies, [{ key: "x", nbytes: 8, whoHas: [] }]);
    state.handle("unix://b-unknown", [finished("y")], 2);
    state.handle("unix://a", [finished("y")], 2);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["forget", ["x"]]]);
    state.unwant(state.slotOf("y")!);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["forget", ["y"]]]);
  });

  test("queue placement: a key released and submitted again before the transport hears of it is forgotten first, then queued again", () => {
    const state = newState({ placement: "queue" });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [] }));
    state.takeQueueInstructions();
    state.handle("unix://a", [finished("x")], 1);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), []);
    // Released and submitted again within one turn: the old value goes before the new job is queued.
    state.unwant(state.slotOf("x")!);
    state.submit(graph({ x: [] }));
    state.submit(graph({ z: [] }));
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [
      ["forget", ["x"]],
      ["enqueue", ["x", "z"]],
    ]);
    assert.equal(state.stateOf(state.slotOf("x")!), "processing");
  });

  test("queue placement: a rescheduled task is queued again with its input kept; one missing its input has the input recomputed first", () => {
    const state = newState({ placement: "queue" });
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ x: [], y: ["x"] }));
    state.takeQueueInstructions();
    state.handle("unix://a", [finished("x")], 1);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["enqueue", ["y"]]]);
    // y's worker left after handing x over: y goes back to the queue, x stays in memory.
    state.handle("redis", [{ op: "reschedule", key: "y" }], 2);
    assert.equal(state.stateOf(state.slotOf("x")!), "memory");
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["enqueue", ["y"]]]);
    // y's worker left with x: x is computed again before y is queued again.
    state.handle("redis", [{ op: "missing-data", key: "x", errantWorker: "unix://a", task: "y" }], 3);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["enqueue", ["x"]]]);
    assert.equal(state.stateOf(state.slotOf("y")!), "waiting");
  });

  test("heartbeats: clock offset, memory, bandwidth and cumulative metrics; the reply carries the time", () => {
    const state = newState();
    state.addWorker({ ...registration("a"), now: 105 }, 100);
    assert.equal(state.workers.get("unix://a")!.clockOffset, 5);
    sent(state);
    const metrics: WorkerMetrics = {
      cpu: 50,
      memory: 1000,
      managedBytes: 300,
      reportedResultBytes: 0,
      spilledBytes: { memory: 300, disk: 200 },
      taskCounts: { memory: 3 },
      digests: [
        { context: "execute", span: "s1", prefix: "add", activity: "thread-cpu", unit: "seconds", value: 1.5 },
        { context: "execute", span: "s2", prefix: "add", activity: "thread-cpu", unit: "seconds", value: 0.5 },
        { context: "gather-dep", activity: "network", unit: "seconds", value: 0.25 },
      ],
      transfer: { incomingBytes: 10, outgoingBytes: 20, incomingCount: 1, outgoingCount: 1 },
      bandwidth: { total: 200_000_000, workers: { "unix://b": 300_000_000 }, types: { Float64Array: 250_000_000 } },
    };
    state.handle("unix://a", [{ op: "heartbeat", now: 110.5, metrics }], 108);
    assert.deepEqual(sent(state).a, [{ op: "heartbeat-reply", time: 108, heartbeatInterval: 0.5 }]);
    const ws = state.workers.get("unix://a")!;
    assert.equal(ws.clockOffset, 2.5);
    assert.deepEqual(state.memory(), {
      process: 1000,
      managed: 300,
      unmanaged: 700,
      unmanagedOld: 700,
      unmanagedRecent: 0,
      spilled: 200,
      managedTotal: 500,
      optimistic: 1000,
    });
    assert.deepEqual(state.cumulativeMetrics.records(), [
      { context: "execute", prefix: "add", activity: "thread-cpu", unit: "seconds", value: 2 },
      { context: "gather-dep", activity: "network", unit: "seconds", value: 0.25 },
    ]);
    const bandwidth = state.bandwidth.summary();
    assert.equal(bandwidth.total, 200_000_000, "one worker: its estimate replaces the default");
    assert.deepEqual(bandwidth.byWorkers, [{ source: "unix://b", destination: "unix://a", bandwidth: 300_000_000 }]);
    assert.deepEqual(bandwidth.byType, [{ type: "Float64Array", bandwidth: 250_000_000 }]);
    // Unmanaged memory that dropped shows as old only over the window.
    state.handle("unix://a", [{ op: "heartbeat", now: 111, metrics: { ...metrics, memory: 500 } }], 109);
    assert.equal(state.memory().unmanagedOld, 200);
  });

  /** A state with worker "a" (50 MB of process memory) and task x-1 sent to it. */
  function oneTaskOnWorkerA(): ClusterState {
    const state = newState();
    state.addWorker({ ...registration("a"), memory: 50_000_000 }, 0);
    sent(state);
    state.submit(graph({ "x-1": [] }));
    sent(state);
    return state;
  }

  /** A heartbeat's metrics: these memory figures, nothing else measured. */
  function memoryMetrics(memory: Pick<WorkerMetrics, "memory" | "managedBytes" | "reportedResultBytes">): WorkerMetrics {
    return { cpu: 0, ...memory, spilledBytes: { memory: 0, disk: 0 }, taskCounts: {}, digests: [], transfer: { incomingBytes: 0, outgoingBytes: 0, incomingCount: 0, outgoingCount: 0 }, bandwidth: { total: 100_000_000, workers: {}, types: {} } };
  }

  test("managed memory counts a result the moment it lands and drops it when released, between heartbeats (Dask's ws.nbytes)", () => {
    const state = oneTaskOnWorkerA();
    assert.equal(state.memory().managed, 0);
    state.handle("unix://a", [finished("x-1", 8_000_000)], 1);
    assert.equal(state.memory().managed, 8_000_000, "no heartbeat yet: the result counts already");
    assert.equal(state.workers.get("unix://a")!.record().memory.managed, 8_000_000);
    // The heartbeat that counts it does not count it twice; one that reports more (a Redis
    // worker's inputs held by a running task) is believed.
    const metrics = memoryMetrics({ memory: 60_000_000, managedBytes: 8_000_000, reportedResultBytes: 8_000_000 });
    state.handle("unix://a", [{ op: "heartbeat", now: 2, metrics }], 2);
    assert.equal(state.memory().managed, 8_000_000);
    state.handle("unix://a", [{ op: "heartbeat", now: 3, metrics: { ...metrics, managedBytes: 10_000_000 } }], 3);
    assert.equal(state.memory().managed, 10_000_000);
    state.unwant(state.slotOf("x-1")!);
    assert.equal(state.memory().managed, 2_000_000, "released: its bytes leave at once");
    // Never more than the process holds, as Dask's MemoryState.
    // (x-1 was released: the worker no longer reports it as a result it holds.)
    state.handle("unix://a", [{ op: "heartbeat", now: 4, metrics: { ...metrics, memory: 1_000_000, managedBytes: 5_000_000, reportedResultBytes: 0 } }], 4);
    assert.equal(state.memory().managed, 1_000_000);
  });

  test("a heartbeat written before a release and read after it does not count the released result again", () => {
    const state = oneTaskOnWorkerA();
    state.handle("unix://a", [finished("x-1", 40)], 1);
    assert.equal(state.memory().managed, 40);
    state.unwant(state.slotOf("x-1")!);
    assert.equal(state.memory().managed, 0);
    // Written while the worker still held x-1 (as a result the scheduler counts), read now.
    const metrics = memoryMetrics({ memory: 60_000_000, managedBytes: 40, reportedResultBytes: 40 });
    state.handle("unix://a", [{ op: "heartbeat", now: 2, metrics }], 2);
    assert.equal(state.memory().managed, 0, "the scheduler's own count rules for results it knows");
    // What only the worker holds still counts from its heartbeat.
    state.handle("unix://a", [{ op: "heartbeat", now: 3, metrics: { ...metrics, managedBytes: 64, reportedResultBytes: 0 } }], 3);
    assert.equal(state.memory().managed, 64);
  });

  test("the task stream keeps records of finished tasks, with the worker's thread and timings", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ "add-1": [] }));
    sent(state);
    state.handle("unix://a", [finished("add-1", 8, 5, 6)], 6);
    const [record] = state.taskStream.collect();
    assert.deepEqual(record, {
      key: "add-1",
      prefix: "add",
      worker: "unix://a",
      thread: 7,
      status: "OK",
      nbytes: 8,
      type: "number",
      startstops: [{ action: "compute", start: 5, stop: 6 }],
      span: state.spans.idsByName(["default"])[0],
    });
  });

  test("task stream keys are Dask's str(key): a string key itself, a tuple or number key its repr", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    const keys = ["len-0", "it's", keyId(["x", 0, 1]), keyId(7)];
    state.submit(graph(Object.fromEntries(keys.map((key) => [key, []])), keys));
    sent(state);
    state.handle("unix://a", keys.map((key) => finished(key)), 2);
    assert.deepEqual(state.taskStream.collect().map((record) => record.key), ["len-0", "it's", "('x', 0, 1)", "7"]);
  });
});

describe("cluster scheduler spans", () => {
  const load = { names: ["load"], ids: ["load-id"] };
  const parse = { names: ["load", "parse"], ids: ["load-id", "parse-id"] };

  /** Runs every task sent to worker a at time `at`, one after the other, until none is left. */
  function runAll(state: ClusterState, at: number): void {
    for (let tasks = computeTasks(sent(state).a); tasks.length > 0; tasks = computeTasks(sent(state).a)) {
      state.handle("unix://a", tasks.map((task, i) => finished(task.key, 8, at + i, at + i + 0.5)), at + tasks.length);
    }
  }

  test("a submission's tasks join its span, tagged tasks theirs; compute-task and the task stream carry the span id", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    const submission = graph({ "read-1": [], "parse-1": ["read-1"], "sum-1": ["parse-1"] });
    state.submit({ ...submission, span: load, taskSpans: [undefined, parse, undefined] }, undefined, 10);
    const tasks = computeTasks(sent(state).a);
    assert.deepEqual(
      tasks.map((task) => [task.key, task.spanId]),
      [["read-1", "load-id"], ["parse-1", "parse-id"], ["sum-1", "load-id"]],
    );
    state.handle("unix://a", [finished("read-1", 8, 11, 12), finished("parse-1", 16, 12, 13), finished("sum-1", 24, 13, 14)], 14);
    assert.deepEqual(state.taskStream.collect().map((record) => record.span), ["load-id", "parse-id", "load-id"]);
    const spans = state.spans.records(20);
    assert.deepEqual(spans.map((span) => [span.id, span.name, span.parent, span.children]), [
      ["load-id", ["load"], null, ["parse-id"]],
      ["parse-id", ["load", "parse"], "load-id", []],
    ]);
    const [loadSpan, parseSpan] = spans;
    // The parent's counts, times and bytes cover its subtree (inputs stay released while a dependent holds them).
    assert.deepEqual(loadSpan.states, { memory: 1, released: 2 });
    assert.deepEqual(parseSpan.states, { released: 1 });
    assert.deepEqual([loadSpan.enqueued, loadSpan.start, loadSpan.stop, loadSpan.done], [10, 11, 14, true]);
    assert.deepEqual([parseSpan.start, parseSpan.stop, parseSpan.nbytesTotal, loadSpan.nbytesTotal], [12, 13, 16, 48]);
  });

  test("a task group stays in the span of its first task; tasks outside any span share the default span until it is done", () => {
    const state = newState();
    state.addWorker(registration("a"), 0);
    sent(state);
    state.submit(graph({ "inc-1": [], "dec-1": [] }, ["inc-1", "dec-1"]), undefined, 1);
    // Submitted inside "load" while inc-1 lives: inc-2 joins inc's group, in the default span.
    state.submit({ ...graph({ "inc-2": [], "other-1": [] }, ["inc-2", "other-1"]), span: load }, undefined, 2);
    const spanOf = (key: string): string => state.spanOf(state.slotOf(key)!);
    const [first] = state.spans.idsByName(["default"]);
    assert.deepEqual([spanOf("inc-1"), spanOf("dec-1"), spanOf("inc-2"), spanOf("other-1")], [first, first, first, "load-id"]);
    // A second submission outside any span while the first default span has work: the same span.
    state.submit(graph({ "more-1": [] }), undefined, 3);
    assert.equal(spanOf("more-1"), first);
    runAll(state, 4);
    for (const key of ["inc-1", "dec-1", "inc-2", "other-1", "more-1"]) state.unwant(state.slotOf(key)!);
    assert.equal(state.taskCount, 0);
    // Everything done: the next submission outside any span opens a new default span.
    state.submit(graph({ "inc-3": [] }), undefined, 20);
    const defaults = state.spans.idsByName(["default"]);
    assert.equal(defaults.length, 2);
    assert.equal(spanOf("inc-3"), defaults[1]);
    assert.deepEqual(state.spans.get(first, 30)!.states, { forgotten: 4 });
  });

  test("a span's thread budget follows workers joining and leaving; execute digests from heartbeats land in their spans", () => {
    const state = newState();
    state.addWorker(registration("a", 2), 0);
    sent(state);
    state.submit({ ...graph({ "slow-1": [] }), span: load }, undefined, 10);
    sent(state);
    state.addWorker(registration("b", 3), 12);
    state.removeWorker("unix://b", "test", 15);
    state.handle("unix://a", [finished("slow-1", 8, 10, 20)], 20);
    // Later changes do not touch a span that is done.
    state.addWorker(registration("c", 4), 25);
    const [span] = state.spans.records(30);
    assert.deepEqual(span.intervals, [
      [10, 12, 2],
      [12, 15, 5],
      [15, 20, 2],
    ]);
    assert.equal(span.activeCpuSeconds, 2 * 2 + 3 * 5 + 5 * 2);
    const metrics: WorkerMetrics = {
      cpu: 0,
      memory: 0,
      managedBytes: 0,
      reportedResultBytes: 0,
      spilledBytes: { memory: 0, disk: 0 },
      taskCounts: {},
      digests: [
        { context: "execute", span: "load-id", prefix: "slow", activity: "thread-cpu", unit: "seconds", value: 6 },
        { context: "execute", span: "load-id", prefix: "slow", activity: "memory-read", unit: "count", value: 3 },
        { context: "get-data", activity: "network", unit: "seconds", value: 1 },
      ],
      transfer: { incomingBytes: 0, outgoingBytes: 0, incomingCount: 0, outgoingCount: 0 },
      bandwidth: { total: 0, workers: {}, types: {} },
    };
    state.handle("unix://a", [{ op: "heartbeat", now: 21, metrics }], 21);
    assert.deepEqual(state.spans.records(30)[0].metrics, [
      { context: "execute", prefix: "slow", activity: "thread-cpu", unit: "seconds", value: 6 },
      { context: "execute", prefix: "slow", activity: "memory-read", unit: "count", value: 3 },
      { context: "execute", prefix: "N/A", activity: "idle or other spans", unit: "seconds", value: 29 - 6 },
    ]);
  });

  test("no-worker tasks count as queued in their span; erred ones as erred", () => {
    const state = newState({ sendAhead: false });
    state.submit({ ...graph({ "bad-1": [], "after-1": ["bad-1"] }), span: load }, undefined, 1);
    assert.deepEqual(state.spans.records(2)[0].states, { queued: 1, waiting: 1 });
    state.addWorker(registration("a"), 3);
    sent(state);
    state.handle("unix://a", [{ op: "task-erred", key: "bad-1", error: { kind: "error", className: "Error", name: "Error", message: "no", stack: undefined, props: {} }, thread: 1, startstops: [] }], 4);
    assert.deepEqual(state.spans.records(5)[0].states, { erred: 2 });
    assert.equal(state.spans.records(5)[0].done, true);
  });
});

describe("task-stream ring", () => {
  const record = (stop: number): TaskStreamRecord => ({
    key: `k${stop}`,
    prefix: "k",
    worker: "w",
    thread: 1,
    status: "OK",
    nbytes: 0,
    type: "number",
    startstops: [{ action: "compute", start: stop - 0.5, stop }],
  });

  test("a bounded buffer: the oldest records go, the index keeps counting", () => {
    const ring = new TaskStreamRing(5);
    for (let i = 1; i <= 10; i++) ring.push(record(i));
    assert.equal(ring.length, 5);
    assert.equal(ring.index, 10);
    assert.deepEqual(ring.collect().map((r) => r.key), ["k6", "k7", "k8", "k9", "k10"]);
  });

  test("collect by start index returns exactly the newer records, by time it bisects on the last stop", () => {
    const ring = new TaskStreamRing(100);
    for (let i = 1; i <= 10; i++) ring.push(record(i));
    const mid = ring.index;
    for (let i = 11; i <= 15; i++) ring.push(record(i));
    assert.deepEqual(ring.collect({ startIndex: mid }).map((r) => r.key), ["k11", "k12", "k13", "k14", "k15"]);
    assert.deepEqual(ring.collect({ start: 3, stop: 6 }).map((r) => r.key), ["k3", "k4", "k5"]);
    assert.deepEqual(ring.collect({ count: 2 }).map((r) => r.key), ["k14", "k15"]);
    // Dask's start_index ignores count (it returns every record since the cursor).
    assert.deepEqual(ring.collect({ startIndex: 10, count: 1 }).map((r) => r.key), ["k11", "k12", "k13", "k14", "k15"]);
  });

  test("a cleared ring takes new records (its columns start over, after any length it had grown to)", () => {
    const ring = new TaskStreamRing(100_000);
    for (let i = 1; i <= 5000; i++) ring.push(record(i));
    ring.clear();
    assert.equal(ring.length, 0);
    for (let i = 1; i <= 3; i++) ring.push(record(i));
    assert.deepEqual(ring.collect().map((r) => [r.key, r.startstops[0].stop]), [["k1", 1], ["k2", 2], ["k3", 3]]);
  });

  test("a bad length is refused", () => {
    assert.throws(() => new TaskStreamRing(0), /task stream length must be a whole number/);
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_maxlen
  test("test_maxlen: a ring of 5 after 10 tasks holds 5", () => {
    const ring = new TaskStreamRing(5);
    for (let i = 0; i < 10; i++) ring.push(record(i + 1));
    assert.equal(ring.collect().length, 5);
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_collect
  // Dask's run: 10 slowinc(delay=0.1) on 3 threads, so they stop 0.1, 0.2, 0.3 and 0.4 s after
  // `start` in threes; read at start + 0.45 s (the ring is pure: "now" is passed in).
  test("test_collect: all, from a time, relative times, count alone, with stop, with start", () => {
    const ring = new TaskStreamRing();
    const start = 1_000_000;
    for (let i = 0; i < 10; i++) ring.push(record(start + 0.1 * (Math.floor(i / 3) + 1)));
    const now = start + 0.45;
    const all = ring.collect({}, now);
    assert.equal(all.length, 10);
    assert.equal(ring.collect({ start }, now).length, 10);
    const late = ring.collect({ start: start + 0.2 }, now).length;
    assert.ok(late >= 4 && late <= 10, `${late} records stopped 0.2 s after the start`);
    assert.equal(ring.collect({ start: "20 s" }, now).length, 10);
    const recent = ring.collect({ start: "500ms" }, now).length;
    assert.ok(recent > 0 && recent <= 10);
    const three = ring.collect({ count: 3 }, now);
    assert.deepEqual(three, all.slice(-3));
    assert.deepEqual(ring.collect({ stop: start + 100, count: 3 }, now), ring.collect({ count: 3 }, now));
    assert.deepEqual(ring.collect({ start, count: 3 }, now), all.slice(0, 3));
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_collect_start_index
  test("test_collect_start_index: by append position, whatever the times", () => {
    const ring = new TaskStreamRing();
    for (let i = 0; i < 5; i++) ring.push(record(100 + i));
    const midpoint = ring.index;
    // Stopped "earlier" than the first five (a worker's clock behind): still after the cursor.
    for (let i = 0; i < 5; i++) ring.push(record(50 + i));
    assert.equal(ring.collect({ startIndex: 0 }).length, 10);
    assert.equal(ring.collect({ startIndex: midpoint }).length, 5);
    assert.equal(ring.collect({ startIndex: ring.index }).length, 0);
  });

  test("collect with both start and stop ignores count, as Dask's; stop before start gives nothing", () => {
    const ring = new TaskStreamRing();
    for (let i = 1; i <= 10; i++) ring.push(record(i));
    assert.deepEqual(ring.collect({ start: 3, stop: 7, count: 2 }).map((r) => r.key), ["k3", "k4", "k5", "k6"]);
    assert.deepEqual(ring.collect({ start: 7, stop: 3 }), []);
    assert.deepEqual(ring.collect({ stop: 6, count: 2 }).map((r) => r.key), ["k4", "k5"]);
    assert.deepEqual(ring.collect({ count: 50 }).length, 10);
  });

  test("bad collect options are refused, naming the option", () => {
    const ring = new TaskStreamRing();
    assert.throws(() => ring.collect({ count: -1 }), /option count must be a whole number ≥ 0, got -1/);
    assert.throws(() => ring.collect({ start: Number.NaN }), /option start must be epoch seconds or a duration/);
    assert.throws(() => ring.collect({ stop: "2 fortnights" }), /Option stop of the task stream must be a duration .*unknown unit "fortnights"/);
    assert.throws(() => ring.collect({ strat: 1 } as never), /Unknown task stream option "strat"/);
  });
});
