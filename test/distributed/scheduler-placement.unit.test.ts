// Placement in the cluster scheduler's state machine, driven directly (events in, instructions
// out, no processes): worker restrictions (Dask's workers= and allow_other_workers=) and work
// stealing (Dask's WorkStealing), with the steal handshake answered as workers answer it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ClusterState, type GraphSubmission, type WorkerRestriction } from "../../src/kernel/distributed/scheduler/state";
import type { ComputeTaskMessage, FromWorker, RegisterMessage, StealRequestMessage, ToWorker } from "../../src/kernel/distributed/messages";

interface Call {
  readonly key: string;
  /** Keys it depends on (already known to the scheduler, or earlier in the same submission). */
  readonly deps?: readonly string[];
}

/** A submission of `calls` (each a task, prefix = the key up to its last "-"), with an optional restriction. */
function submission(calls: readonly Call[], restriction?: WorkerRestriction, known: readonly string[] = []): GraphSubmission {
  const keys = [...calls.map((call) => call.key), ...known];
  const index = new Map(keys.map((key, i) => [key, i]));
  const dependencyStart = new Int32Array(keys.length + 1);
  const dependencies: number[] = [];
  calls.forEach((call, i) => {
    for (const dep of call.deps ?? []) dependencies.push(index.get(dep)!);
    dependencyStart[i + 1] = dependencies.length;
  });
  dependencyStart.fill(dependencies.length, calls.length + 1);
  const prefixes = keys.map((key) => key.slice(0, Math.max(0, key.lastIndexOf("-"))) || key);
  return {
    keys,
    names: keys,
    prefixes,
    groups: prefixes,
    tasks: [...calls.map((call) => ["call", 0, ...(call.deps ?? []).map((dep) => ["ref", dep] as const)] as const), ...known.map(() => undefined)],
    functions: keys.map(() => [0]),
    dependencyStart,
    dependencies: Int32Array.from(dependencies),
    order: Int32Array.from(keys, (_, i) => i),
    wanted: calls.map((_, i) => i),
    ...(restriction === undefined ? {} : { restriction }),
  };
}

const only = (...workers: string[]): WorkerRestriction => ({ workers: new Set(workers), allowOtherWorkers: false });
const prefer = (...workers: string[]): WorkerRestriction => ({ workers: new Set(workers), allowOtherWorkers: true });

function registration(name: string, nthreads = 1, host = "127.0.0.1"): RegisterMessage {
  return { op: "register", address: `tcp://${name}`, name, host, pid: 1, nthreads, memoryLimit: 1e9, globals: [], now: 0 };
}

function newState(options: Partial<ConstructorParameters<typeof ClusterState>[0]> = {}): ClusterState {
  return new ClusterState({ placement: "locality", sendAhead: false, functionSpec: () => ({ kind: "global", path: ["Math", "max"] }), ...options });
}

function finished(key: string, nbytes = 8, seconds = 0.001): FromWorker {
  return { op: "task-finished", key, nbytes, type: "number", thread: 0, startstops: [{ action: "compute", start: 1, stop: 1 + seconds }] };
}

/**
 * Workers as the scheduler sees them answer: each runs one task at a time (the first it gets
 * while idle is executing, the rest wait ready), keeps its tasks until told to finish them, and
 * answers steal requests as a worker does.
 */
class Cluster {
  readonly tasks = new Map<string, string[]>();
  readonly executing = new Map<string, string>();

  constructor(readonly state: ClusterState) {}

  join(name: string, nthreads = 1, host?: string): void {
    this.state.addWorker(registration(name, nthreads, host), 0);
    this.tasks.set(name, []);
    this.deliver();
  }

  /** Carries the scheduler's messages to the workers, and their steal answers back, until none is left. */
  deliver(): void {
    for (let round = 0; round < 100; round++) {
      const answers: [string, FromWorker][] = [];
      for (const [ws, messages] of this.state.takeMessages()) {
        for (const message of messages) {
          const answer = this.receive(ws.name, message);
          if (answer !== undefined) answers.push([ws.address, answer]);
        }
      }
      if (answers.length === 0) return;
      for (const [address, answer] of answers) this.state.handle(address, [answer], 1);
    }
    throw new Error("test cluster: messages never settle");
  }

  private receive(worker: string, message: ToWorker): FromWorker | undefined {
    const tasks = this.tasks.get(worker)!;
    if (message.op === "compute-task") {
      tasks.push(message.key);
      if (!this.executing.has(worker)) this.executing.set(worker, message.key);
    } else if (message.op === "steal-request") {
      return this.stealAnswer(worker, message);
    } else if (message.op === "free-keys") {
      for (const key of message.keys) this.drop(worker, key);
    }
    return undefined;
  }

  private stealAnswer(worker: string, request: StealRequestMessage): FromWorker {
    const tasks = this.tasks.get(worker)!;
    let state: string | null = null;
    if (this.executing.get(worker) === request.key) state = "executing";
    else if (tasks.includes(request.key)) {
      this.drop(worker, request.key);
      state = "released";
    }
    return { op: "steal-response", key: request.key, stimulusId: request.stimulusId, state };
  }

  private drop(worker: string, key: string): void {
    const tasks = this.tasks.get(worker)!;
    const at = tasks.indexOf(key);
    if (at >= 0) tasks.splice(at, 1);
    if (this.executing.get(worker) === key) this.executing.delete(worker);
  }

  /** `worker` finishes `key` (after `seconds` of compute) and starts its next task. */
  finish(worker: string, key: string, seconds = 0.001, nbytes = 8): void {
    this.drop(worker, key);
    const next = this.tasks.get(worker)![0];
    if (next !== undefined && !this.executing.has(worker)) this.executing.set(worker, next);
    this.state.handle(`tcp://${worker}`, [finished(key, nbytes, seconds)], 1);
    this.deliver();
  }

  submit(graph: GraphSubmission): void {
    this.state.submit(graph, undefined, 0);
    this.deliver();
  }

  balance(): void {
    this.state.balance();
    this.deliver();
  }

  /** Where each of `keys` is processing (worker name), from the scheduler's side. */
  where(key: string): string | undefined {
    return this.state.processingWorker(this.state.slotOf(key)!)?.name;
  }
}

function computeTasks(messages: readonly ToWorker[] | undefined): ComputeTaskMessage[] {
  return (messages ?? []).filter((m): m is ComputeTaskMessage => m.op === "compute-task");
}

describe("worker restrictions (Dask's workers= and allow_other_workers=)", () => {
  // Port of distributed/tests/test_client.py::test_restrictions_ip_port
  test("test_restrictions_ip_port: each task runs on the worker its restriction names, by address", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "x" }], only("tcp://a")));
    assert.equal(cluster.where("x"), "a");
    cluster.finish("a", "x");
    cluster.submit(submission([{ key: "y", deps: ["x"] }], only("tcp://b"), ["x"]));
    assert.equal(cluster.where("y"), "b", "y goes to b although its input is on a");
  });

  // Port of distributed/tests/test_client.py::test_restrictions_map
  test("test_restrictions_map: every task of a restricted map runs on the named worker (by name), none elsewhere", () => {
    const cluster = new Cluster(newState());
    cluster.join("a", 1);
    cluster.join("b", 2);
    cluster.submit(submission(Array.from({ length: 5 }, (_, i) => ({ key: `inc-${i}` })), only("a")));
    assert.deepEqual(cluster.tasks.get("a"), ["inc-0", "inc-1", "inc-2", "inc-3", "inc-4"], "restricted tasks are not root-ish: none waits on the scheduler");
    assert.deepEqual(cluster.tasks.get("b"), []);
  });

  test("a restriction by host name allows every worker on that host", () => {
    const cluster = new Cluster(newState());
    cluster.join("a", 1, "10.0.0.1");
    cluster.join("b", 1, "10.0.0.2");
    cluster.submit(submission([{ key: "x-0" }, { key: "x-1" }, { key: "x-2" }], only("10.0.0.2")));
    assert.deepEqual(cluster.tasks.get("b"), ["x-0", "x-1", "x-2"]);
  });

  // Port of distributed/tests/test_client.py::test_unrunnable_task_runs
  test("test_unrunnable_task_runs: a task restricted to a worker that left waits (no-worker) and runs when one matching joins", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "x" }], only("a")));
    assert.equal(cluster.where("x"), "a");
    cluster.state.removeWorker("tcp://a", "closed", 1);
    const slot = cluster.state.slotOf("x")!;
    assert.equal(cluster.state.stateOf(slot), "no-worker", "b may not run it");
    assert.deepEqual(cluster.tasks.get("b"), []);
    cluster.join("a");
    assert.equal(cluster.where("x"), "a");
  });

  test("a restriction naming no worker waits, as Dask's does, until such a worker joins", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.submit(submission([{ key: "x" }], only("nobody")));
    assert.equal(cluster.state.stateOf(cluster.state.slotOf("x")!), "no-worker");
    cluster.join("nobody");
    assert.equal(cluster.where("x"), "nobody");
  });

  // Port of distributed/tests/test_client.py::test_allow_restrictions
  test("test_allow_restrictions: a loose restriction is kept while the worker exists, and ignored when none matches", () => {
    const cluster = new Cluster(newState());
    cluster.join("a", 1, "127.0.0.1");
    cluster.join("b", 2, "127.0.0.2");
    cluster.submit(submission([{ key: "x-2" }], prefer("127.0.0.1")));
    assert.equal(cluster.where("x-2"), "a");
    cluster.submit(submission(Array.from({ length: 10 }, (_, i) => ({ key: `inc-${i + 3}` })), prefer("127.0.0.1")));
    assert.ok(Array.from({ length: 10 }, (_, i) => cluster.where(`inc-${i + 3}`)).every((name) => name === "a"));
    cluster.submit(submission([{ key: "x-15" }], prefer("127.0.0.3")));
    assert.ok(cluster.where("x-15") !== undefined, "no worker on 127.0.0.3: another one runs it");
  });

  test("queue placement (Redis) refuses restrictions: its workers take any task from a shared queue", () => {
    const state = newState({ placement: "queue" });
    assert.throws(() => state.submit(submission([{ key: "x" }], only("a")), undefined, 0), /Worker restrictions .* Redis workers take any task from a shared queue/);
    assert.equal(state.taskCount, 0);
  });
});

describe("work stealing (Dask's WorkStealing)", () => {
  test("the issue's case: a tiny task queued behind a 4 s task moves to the worker that just went idle", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "sleep-4" }]));
    cluster.submit(submission([{ key: "sleep-1" }]));
    cluster.submit(submission([{ key: "tiny" }]));
    const first = cluster.where("sleep-4")!;
    const other = first === "a" ? "b" : "a";
    assert.equal(cluster.where("sleep-1"), other);
    const behind = cluster.where("tiny")!;
    cluster.balance();
    assert.equal(cluster.where("tiny"), behind, "both workers busy: nothing to steal");
    cluster.finish(other, "sleep-1", 1);
    if (behind === other) return assert.deepEqual(cluster.tasks.get(other), ["tiny"]);
    assert.deepEqual(cluster.tasks.get(first), ["sleep-4", "tiny"], "queued behind the long task");
    cluster.balance();
    assert.equal(cluster.where("tiny"), other);
    assert.deepEqual(cluster.tasks.get(first), ["sleep-4"], "the busy worker gave it up");
    assert.deepEqual(cluster.tasks.get(other), ["tiny"]);
  });

  // Port of distributed/tests/test_steal.py::test_dont_steal_executing_tasks_2
  test("test_dont_steal_executing_tasks_2: a task the victim already runs stays there", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "slowinc-1" }, { key: "slowinc-2" }], only("a")));
    cluster.submit(submission([{ key: "x-1" }], prefer("a")));
    cluster.state.handle("tcp://a", [{ op: "steal-response", key: "slowinc-1", stimulusId: "steal-999", state: "released" }], 1);
    assert.equal(cluster.where("slowinc-1"), "a", "an answer to no request is ignored");
    cluster.balance();
    assert.equal(cluster.where("x-1"), "b", "the ready task moves");
    assert.equal(cluster.where("slowinc-1"), "a");
    assert.deepEqual(cluster.tasks.get("b"), ["x-1"]);
  });

  test("a victim that answers it has started the task keeps it; nothing goes to the thief", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "long-1" }], only("a")));
    cluster.submit(submission([{ key: "x-1" }], prefer("a")));
    // The victim starts x-1 before the request reaches it.
    cluster.executing.set("a", "x-1");
    cluster.balance();
    assert.equal(cluster.where("x-1"), "a");
    assert.deepEqual(cluster.tasks.get("b"), []);
    assert.equal(cluster.state.stealsInFlight, 0);
  });

  test("the thief leaves before the victim answers: the task is placed again", () => {
    const state = newState();
    const cluster = new Cluster(state);
    cluster.join("a");
    cluster.join("b");
    cluster.join("c");
    cluster.submit(submission([{ key: "long-1" }, { key: "long-2" }], only("a")));
    cluster.submit(submission([{ key: "x-1" }, { key: "x-2" }, { key: "x-3" }], prefer("a")));
    cluster.submit(submission([{ key: "busy-1" }, { key: "busy-2" }], only("c")));
    state.balance();
    const requests = state.takeMessages().flatMap(([ws, messages]) => messages.filter((m) => m.op === "steal-request").map((m) => [ws, m] as const));
    assert.ok(requests.length > 0);
    const [victim, request] = requests[0];
    assert.equal(victim.name, "a");
    state.removeWorker("tcp://b", "gone", 1);
    state.handle("tcp://a", [{ op: "steal-response", key: (request as StealRequestMessage).key, stimulusId: (request as StealRequestMessage).stimulusId, state: "released" }], 1);
    const key = (request as StealRequestMessage).key;
    assert.notEqual(state.processingWorker(state.slotOf(key)!)?.name, "b");
    assert.equal(state.stateOf(state.slotOf(key)!), "processing", "placed again on a live worker");
  });

  test("a task released while its steal request is out: the answer is ignored", () => {
    const state = newState();
    const cluster = new Cluster(state);
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "long-1" }], only("a")));
    state.submit(submission([{ key: "x-1" }], prefer("a")), undefined, 0);
    cluster.deliver();
    state.balance();
    const [request] = state.takeMessages().flatMap(([, messages]) => messages.filter((m): m is StealRequestMessage => m.op === "steal-request"));
    assert.equal(request.key, "x-1");
    state.unwant(state.slotOf("x-1")!);
    assert.equal(state.slotOf("x-1"), undefined);
    state.handle("tcp://a", [{ op: "steal-response", key: "x-1", stimulusId: request.stimulusId, state: "released" }], 1);
    assert.deepEqual(computeTasks(state.takeMessages().find(([ws]) => ws.name === "b")?.[1]), []);
    assert.equal(state.stealsInFlight, 0);
  });

  // Port of distributed/tests/test_steal.py::test_dont_steal_worker_restrictions
  test("test_dont_steal_worker_restrictions: tasks restricted to a busy worker stay there", () => {
    const cluster = new Cluster(newState());
    cluster.join("a", 1);
    cluster.join("b", 2);
    cluster.submit(submission(Array.from({ length: 100 }, (_, i) => ({ key: `slowinc-${i}` })), only("tcp://a")));
    assert.equal(cluster.tasks.get("a")!.length, 100);
    cluster.balance();
    assert.equal(cluster.tasks.get("a")!.length, 100);
    assert.equal(cluster.tasks.get("b")!.length, 0);
  });

  // Port of distributed/tests/test_steal.py::test_steal_worker_restrictions
  test("test_steal_worker_restrictions: a thief outside the restriction steals nothing", () => {
    const cluster = new Cluster(newState());
    cluster.join("wa", 1);
    cluster.join("wb", 2);
    cluster.join("wc", 2);
    cluster.submit(submission(Array.from({ length: 100 }, (_, i) => ({ key: `slowinc-${i}` })), only("tcp://wa", "tcp://wb")));
    const count = (name: string): number => cluster.tasks.get(name)!.length;
    assert.ok(count("wa") > 20 && count("wa") < 80, `wa has ${count("wa")}`);
    assert.ok(count("wb") > 20 && count("wb") < 80, `wb has ${count("wb")}`);
    cluster.balance();
    assert.ok(count("wa") > 20 && count("wa") < 80);
    assert.ok(count("wb") > 20 && count("wb") < 80);
    assert.equal(count("wc"), 0);
  });

  // Port of distributed/tests/test_steal.py::test_work_steal_allow_other_workers
  test("test_work_steal_allow_other_workers: loosely restricted tasks are shared with the idle worker", () => {
    const cluster = new Cluster(newState());
    cluster.join("a", 2);
    cluster.join("b", 2);
    // Learn that slowinc is slow (50 ms), as the worker reports would.
    cluster.submit(submission([{ key: "slowinc-learn" }], only("a")));
    cluster.finish("a", "slowinc-learn", 0.05);
    cluster.submit(submission(Array.from({ length: 100 }, (_, i) => ({ key: `slowinc-${i}` })), prefer("tcp://a")));
    for (let round = 0; round < 10; round++) cluster.balance();
    const onA = cluster.tasks.get("a")!.length;
    const onB = cluster.tasks.get("b")!.length;
    assert.equal(onA + onB, 100);
    assert.ok(onA > 20 && onA < 80 && onB > 20 && onB < 80, `a has ${onA}, b has ${onB}`);
  });

  // Port of distributed/tests/test_steal.py::test_dont_steal_expensive_data_fast_computation
  test("test_dont_steal_expensive_data_fast_computation: fast tasks on 8 MB of input stay with their input", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "arange" }], only("tcp://a")));
    cluster.finish("a", "arange", 0.01, 8_000_000);
    cluster.submit(submission([{ key: "sum-learn" }], only("tcp://a")));
    cluster.finish("a", "sum-learn", 0.001);
    cluster.submit(submission(Array.from({ length: 10 }, (_, i) => ({ key: `sum-${i}`, deps: ["arange"] })), prefer("tcp://a"), ["arange"]));
    for (let round = 0; round < 10; round++) cluster.balance();
    assert.equal(cluster.tasks.get("a")!.length, 10);
    assert.equal(cluster.tasks.get("b")!.length, 0);
  });

  // Port of distributed/tests/test_steal.py::test_steal_cheap_data_slow_computation
  test("test_steal_cheap_data_slow_computation: slow tasks without inputs are shared out", () => {
    const cluster = new Cluster(newState());
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "slowinc-learn" }]));
    cluster.finish(cluster.where("slowinc-learn")!, "slowinc-learn", 0.1);
    cluster.submit(submission(Array.from({ length: 10 }, (_, i) => ({ key: `slowinc-${i}` })), prefer("tcp://a")));
    cluster.balance();
    const onA = cluster.tasks.get("a")!.length;
    const onB = cluster.tasks.get("b")!.length;
    assert.equal(onA + onB, 10);
    assert.ok(onB > 0 && Math.abs(onA - onB) <= 5, `a has ${onA}, b has ${onB}`);
  });

  test("tasks sent ahead (waiting on the victim for inputs it computes) are never stolen", () => {
    const cluster = new Cluster(newState({ sendAhead: true }));
    cluster.join("a");
    cluster.join("b");
    const chain = Array.from({ length: 6 }, (_, i) => ({ key: `chain-${i}`, deps: i === 0 ? [] : [`chain-${i - 1}`] }));
    cluster.submit(submission(chain, prefer("a")));
    assert.equal(cluster.tasks.get("a")!.length, 6);
    cluster.balance();
    assert.equal(cluster.tasks.get("a")!.length, 6);
    assert.equal(cluster.tasks.get("b")!.length, 0);
  });

  test("work stealing off (workStealing: false): nothing moves", () => {
    const cluster = new Cluster(newState({ workStealing: false }));
    cluster.join("a");
    cluster.join("b");
    cluster.submit(submission([{ key: "long-1" }], only("a")));
    cluster.submit(submission([{ key: "x-1" }], prefer("a")));
    cluster.balance();
    assert.equal(cluster.where("x-1"), "a");
  });
});

describe("Dask's test_balance, on the state machine", () => {
  // Port of distributed/tests/test_steal.py::test_balance (and its assert_balanced): each worker
  // has one thread; tasks (compute 1 s each, Dask's default-task-durations there) depend on data
  // of t × bandwidth bytes held where they run (no data for t = 0), are pinned there loosely
  // (allow_other_workers), the first of each worker is executing; balance runs once per worker.
  const cases: [string, number[][], number[][]][] = [
    ["don't move unnecessarily", [[1], []], [[1], []]],
    ["balance", [[0, 0], []], [[0], [0]]],
    ["balance even if results in even", [[0.1, 0.1], []], [[0], [0]]],
    ["don't over balance", [[0, 0, 0], []], [[0, 0], [0]]],
    ["move from larger", [[0, 0], [0, 0, 0], []], [[0, 0], [0, 0], [0]]],
    ["move to smaller", [[0, 0, 0], [0], []], [[0, 0], [0], [0]]],
    ["choose easier first", [[0, 1], []], [[1], [0]]],
    ["spread evenly", [[0, 0, 0, 0], [], []], [[0, 0], [0], [0]]],
    ["move easier", [[1, 0, 2, 0], [], []], [[2, 1], [0], [0]]],
    ["be willing to move costly items", [[1, 1, 1], []], [[1, 1], [1]]],
    ["but don't move too many", [[1, 1, 1, 1], []], [[1, 1, 1], [1]]],
    ["no one clearly saturated", [[0, 0], [0, 0], [0, 0], []], [[0, 0], [0, 0], [0], [0]]],
    ["balance multiple saturated workers", [[4, 2, 2, 2, 2, 1, 1], [4, 2, 1, 1], [], [], []], [[4, 2, 2, 2], [4, 2, 1, 1], [2], [1], [1]]],
  ];
  for (const [name, input, expected] of cases) {
    test(`test_balance[${name}]`, () => {
      const defaultTaskDurations = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), 1]));
      const cluster = new Cluster(newState({ defaultTaskDurations }));
      const workers = input.map((_, i) => `w${i}`);
      for (const worker of workers) cluster.join(worker);
      const bandwidth = cluster.state.bandwidth.total;
      let counter = 0;
      input.forEach((tasks, w) => {
        for (const t of [...tasks].sort((a, b) => b - a)) {
          const i = counter++;
          const deps: string[] = [];
          if (t > 0) {
            const data = `SizeOf-${i}`;
            cluster.submit(submission([{ key: data }], only(workers[w])));
            cluster.finish(workers[w], data, 0.001, t * bandwidth);
            deps.push(data);
          }
          cluster.submit(submission([{ key: `${Math.trunc(t)}-${i}`, deps }], prefer(workers[w]), deps));
        }
      });
      for (const worker of workers) {
        const executing = cluster.executing.get(worker);
        if (cluster.tasks.get(worker)!.length > 0) assert.equal(executing, cluster.tasks.get(worker)![0], "the first task executes, the others are ready");
      }
      for (let round = 0; round < workers.length; round++) cluster.balance();
      const result = workers.map((worker) => cluster.tasks.get(worker)!.map((key) => Number(key.split("-")[0])).sort((a, b) => b - a));
      const sorted = (lists: number[][]): number[][] => [...lists].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? 1 : -1));
      assert.deepEqual(sorted(result), sorted(expected.map((list) => list.map(Math.trunc))));
    });
  }
});
