// Deep graphs and listeners on the pure state machines (no processes): a chain of a million tasks
// is submitted, computed, failed and cancelled without a stack frame per task, and listeners hear
// about tasks only once the event that moved them is fully handled.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ComputeTaskMessage, FromWorker, RegisterMessage, ToWorker } from "../../src/kernel/distributed/messages";
import { ClusterState, type GraphSubmission, type SchedulerOptions, type TaskListener } from "../../src/kernel/distributed/scheduler/state";
import { type WorkerInstruction, WorkerStateMachine } from "../../src/kernel/distributed/worker";
import { queueOps } from "../helpers/queue-instructions";

const MILLION = 1_000_000;
/** For the walks that are long on this machine at a million (each is linear: a longer chain takes longer, nothing more). */
const LONG = 200_000;
const WORKER = "unix://a";

/** x-0 ← x-1 ← … ← x-(n-1), the last one wanted, in columns built directly (a million entries). */
function chain(n: number, prefix = "x"): GraphSubmission {
  const keys = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const dependencyStart = new Int32Array(n + 1);
  const dependencies = new Int32Array(Math.max(0, n - 1));
  for (let i = 1; i < n; i++) {
    dependencies[i - 1] = i - 1;
    dependencyStart[i + 1] = i;
  }
  return {
    keys,
    names: keys.map((key) => `'${key}'`),
    prefixes: keys.map(() => prefix),
    groups: keys.map(() => prefix),
    tasks: keys.map((_, i) => (i === 0 ? ["call", 0] : ["call", 0, ["ref", keys[i - 1]]]) as never),
    functions: keys.map(() => [0]),
    dependencyStart,
    dependencies,
    order: Int32Array.from(keys, (_, i) => i),
    wanted: [n - 1],
  };
}

function registration(name: string): RegisterMessage {
  return { op: "register", address: `unix://${name}`, name, host: "localhost", pid: 1, nthreads: 1, memoryLimit: 1e9, globals: [], now: 0 };
}

function newState(options: Partial<SchedulerOptions> = {}): ClusterState {
  const state = new ClusterState({ placement: "locality", functionSpec: () => ({ kind: "global", path: ["Math", "max"] }), metrics: false, ...options });
  state.addWorker(registration("a"), 0);
  state.takeMessages();
  return state;
}

function messagesFor(state: ClusterState): ToWorker[] {
  return state.takeMessages().flatMap(([, messages]) => messages);
}

function computeTasks(state: ClusterState): ComputeTaskMessage[] {
  return messagesFor(state).filter((m): m is ComputeTaskMessage => m.op === "compute-task");
}

function finished(key: string): FromWorker {
  return { op: "task-finished", key, nbytes: 8, type: "number", thread: 0, startstops: [] };
}

function erred(key: string): FromWorker {
  return { op: "task-erred", key, error: { name: "Error", message: "boom" } as never, thread: 0, startstops: [] };
}

describe("long chains in the scheduler state", () => {
  test("submitted, then released: the tasks sent ahead are cancelled in one free-keys message, every task forgotten", () => {
    const state = newState();
    const slots = state.submit(chain(MILLION));
    const sent = computeTasks(state);
    assert.equal(sent.length, 1 + 1000, "the first task and a window of 1000 sent ahead to the worker");
    state.unwant(slots[MILLION - 1]);
    const out = messagesFor(state);
    assert.equal(out.length, 1);
    assert.equal(out[0].op, "free-keys");
    assert.equal((out[0] as { keys: readonly string[] }).keys.length, sent.length);
    assert.equal(state.taskCount, 0);
    assert.deepEqual(state.stateCounts(), {});
  });

  test("computed to the end: each input goes once its dependent has finished", () => {
    const state = newState();
    const last = state.submit(chain(LONG))[LONG - 1];
    // The worker reports each window of tasks sent ahead; the next window follows.
    let windows = 0;
    for (let sent = computeTasks(state); sent.length > 0; sent = computeTasks(state), windows++) {
      state.handle(WORKER, sent.map((task) => finished(task.key)), 1);
    }
    assert.ok(windows >= LONG / 1000, `${windows} windows`);
    // Every result but the wanted one is released (its entry stays while a dependent could need it again).
    assert.deepEqual(state.stateCounts(), { memory: 1, released: LONG - 1 });
    assert.equal(state.stateOf(last), "memory");
    state.unwant(last);
    assert.equal(state.taskCount, 0);
  });

  test("its first task fails: the failure reaches the last one and the chain is forgotten", () => {
    const state = newState();
    const last = state.submit(chain(LONG))[LONG - 1];
    messagesFor(state);
    const heard: string[] = [];
    state.addListener(last, { erred: (_slot, failure) => heard.push(failure.key) });
    state.handle(WORKER, [erred("x-0")], 1);
    assert.deepEqual(heard, ["x-0"]);
    assert.equal(state.stateOf(last), "erred");
    state.unwant(last);
    assert.equal(state.taskCount, 0);
  });

  test("queue placement: a released chain is taken off the shared queue and the store", () => {
    const state = newState({ placement: "queue" });
    const last = state.submit(chain(LONG))[LONG - 1];
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["enqueue", ["x-0"]]], "only the first task is ready");
    state.unwant(last);
    assert.deepEqual(queueOps(state.takeQueueInstructions()), [["forget", ["x-0"]]]);
    assert.equal(state.taskCount, 0);
  });
});

describe("long chains in the worker state", () => {
  function loaded(n: number): { worker: WorkerStateMachine; keys: string[] } {
    const worker = new WorkerStateMachine({ address: "unix:///tmp/me.sock", nthreads: 1 });
    const keys: string[] = [];
    for (let i = 0; i < n; i++) {
      const key = `x-${i}`;
      keys.push(key);
      const dependencies = i === 0 ? [] : [{ key: keys[i - 1], nbytes: 0, whoHas: [], local: true }];
      worker.handle({ type: "compute-task", message: { op: "compute-task", key, name: key, prefix: "x", task: ["lit", 1], dependencies, priority: i, spanId: "s" } });
    }
    return { worker, keys };
  }

  const count = (instructions: readonly WorkerInstruction[], op: WorkerInstruction["op"]): number => instructions.filter((i) => i.op === op).length;

  test("freed inputs first (the order that recursed): the running task is cancelled, every task forgotten", () => {
    const { worker, keys } = loaded(MILLION);
    assert.equal(worker.executing.size, 1);
    const out = worker.handle({ type: "free-keys", keys });
    assert.equal(count(out, "cancel-execute"), 1);
    assert.equal(worker.tasks.size, 1, "only the cancelled task, until its outcome arrives");
    worker.handle({ type: "execute-success", key: "x-0", nbytes: 8, resultType: "number", thread: 0, startstops: [] });
    assert.equal(worker.tasks.size, 0);
  });

  test("freed last task first, as the scheduler sends them", () => {
    const { worker, keys } = loaded(LONG);
    const out = worker.handle({ type: "free-keys", keys: keys.reverse() });
    assert.equal(count(out, "cancel-execute"), 1);
    assert.equal(worker.tasks.size, 1);
  });

  test("computed to the end: results are dropped as their dependents finish", () => {
    const { worker } = loaded(LONG);
    for (let i = 0; i < LONG; i++) worker.handle({ type: "execute-success", key: `x-${i}`, nbytes: 8, resultType: "number", thread: 0, startstops: [] });
    // The scheduler still holds every result it was told of until it frees them.
    const out = worker.handle({ type: "free-keys", keys: Array.from({ length: LONG }, (_, i) => `x-${i}`) });
    assert.equal(count(out, "release-data"), LONG);
    assert.equal(worker.tasks.size, 0);
  });
});

describe("listeners hear about a task once the event that moved it is handled", () => {
  test("a finished task's dependent is already dispatched and its input released when its listener runs", () => {
    const state = newState({ sendAhead: false });
    const slots = state.submit(chain(3));
    messagesFor(state);
    state.handle(WORKER, [finished("x-0")], 1);
    messagesFor(state);
    const seen: string[] = [];
    state.addListener(slots[1], {
      finished: () => seen.push(`x-2 ${state.stateOf(slots[2])}`, `x-0 ${state.stateOf(slots[0])}`, `x-1 ${state.stateOf(slots[1])}`),
    });
    state.handle(WORKER, [finished("x-1")], 2);
    assert.deepEqual(seen, ["x-2 processing", "x-0 released", "x-1 memory"]);
  });

  test("a failed task's dependents have all failed when its listener runs", () => {
    const state = newState();
    const slots = state.submit(chain(4));
    messagesFor(state);
    let seen: string[] = [];
    state.addListener(slots[0], { erred: () => (seen = [1, 2, 3].map((i) => state.stateOf(slots[i]))) });
    state.handle(WORKER, [erred("x-0")], 1);
    assert.deepEqual(seen, ["erred", "erred", "erred"]);
  });

  test("a listener may call back into the state; one it stops listening hears nothing more", () => {
    const state = newState();
    const events: string[] = [];
    const first = state.submit(chain(2, "a"));
    const second = state.submit(chain(2, "b"));
    messagesFor(state);
    const secondListener: TaskListener = { erred: () => events.push("b-1 erred") };
    state.addListener(first[0], {
      finished: () => {
        events.push(`a-0 finished, b-1 ${state.stateOf(second[1])}`);
        state.removeListener(second[1], secondListener);
        state.unwant(second[1]);
      },
    });
    state.addListener(second[1], secondListener);
    state.addListener(first[1], { finished: () => events.push("a-1 finished") });
    state.handle(WORKER, [finished("a-0"), finished("a-1"), erred("b-0")], 1);
    assert.deepEqual(events, ["a-0 finished, b-1 erred", "a-1 finished"]);
    assert.equal(state.stateOf(second[1]), "forgotten", "the listener's own event took effect");
    assert.equal(state.stateOf(first[1]), "memory");
  });

  test("a listener that throws: the others still hear, its error is routed, and the state goes on", () => {
    const routed: unknown[] = [];
    const state = newState({ listenerFailed: (error) => routed.push(error) });
    const slots = state.submit(chain(3));
    messagesFor(state);
    const heard: string[] = [];
    const broken: TaskListener = {
      finished: () => {
        throw new Error("listener broke");
      },
    };
    state.addListener(slots[0], broken);
    state.addListener(slots[0], { finished: () => heard.push("x-0") });
    state.addListener(slots[2], { finished: () => heard.push("x-2") });
    state.handle(WORKER, [finished("x-0"), finished("x-1"), finished("x-2")], 1);
    assert.deepEqual(heard, ["x-0", "x-2"]);
    assert.deepEqual(routed.map((e) => (e as Error).message), ["listener broke"]);
    assert.equal(state.stateOf(slots[2]), "memory");
    // The next graph runs as if nothing happened.
    const next = state.submit(chain(1, "y"));
    state.handle(WORKER, [finished("y-0")], 2);
    assert.equal(state.stateOf(next[0]), "memory");
  });

  test("with nowhere to route it, a listener's error is thrown once the event is complete", () => {
    const state = newState();
    const slots = state.submit(chain(2));
    messagesFor(state);
    state.addListener(slots[0], {
      finished: () => {
        throw new Error("listener broke");
      },
    });
    assert.throws(() => state.handle(WORKER, [finished("x-0"), finished("x-1")], 1), /listener broke/);
    assert.equal(state.stateOf(slots[1]), "memory", "the whole batch was handled first");
    assert.deepEqual(state.stateCounts(), { memory: 1, released: 1 });
  });
});
