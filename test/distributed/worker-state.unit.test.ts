// The cluster worker's state machine alone (events in, instructions out, no processes), and its metrics bookkeeping.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ComputeTaskMessage, DependencyInfo, FromWorker } from "../../src/kernel/distributed/messages";
import { Digests, InstructionLedger, ExecuteLedger, type WorkerInstruction, WorkerStateMachine } from "../../src/kernel/distributed/worker";
import { runMetrics } from "../../src/kernel/distributed/worker/execute";
import { DEFAULT_THRESHOLDS, decideMemory, memoryThresholds } from "../../src/kernel/distributed/worker/memory";
import type { StartStop } from "../../src/protocol/records";

const ME = "unix:///tmp/me.sock";
const A = "unix:///tmp/a.sock";
const B = "unix:///tmp/b.sock";

function compute(key: string, dependencies: readonly DependencyInfo[] = [], priority = 0): ComputeTaskMessage {
  return { op: "compute-task", key, name: `'${key}'`, prefix: key, task: ["lit", key], dependencies, priority, spanId: "span-1" };
}

const held = (key: string, whoHas: readonly string[], nbytes = 100): DependencyInfo => ({ key, nbytes, whoHas });
const local = (key: string): DependencyInfo => ({ key, nbytes: 0, whoHas: [], local: true });
const transfer = (source: string): StartStop => ({ action: "transfer", start: 1, stop: 2, source });

function ops(instructions: readonly WorkerInstruction[]): string[] {
  return instructions.map((instruction) => {
    switch (instruction.op) {
      case "execute":
      case "cancel-execute":
      case "release-data":
        return `${instruction.op} ${instruction.key}`;
      case "gather-dep":
        return `gather-dep ${instruction.worker} ${instruction.keys.join(",")}`;
      case "send":
        return `send ${summary(instruction.message)}`;
    }
  });
}

function summary(message: FromWorker): string {
  switch (message.op) {
    case "task-finished":
    case "task-erred":
      return `${message.op} ${message.key}`;
    case "missing-data":
      return `missing-data ${message.key} ${message.errantWorker}`;
    case "add-keys":
      return `add-keys ${message.keys.join(",")}`;
    default:
      return message.op;
  }
}

function finished(state: WorkerStateMachine, key: string): WorkerInstruction[] {
  return state.handle({ type: "execute-success", key, nbytes: 8, resultType: "number", thread: 7, startstops: [] });
}

function sent(instructions: readonly WorkerInstruction[]): FromWorker[] {
  return instructions.flatMap((instruction) => (instruction.op === "send" ? [instruction.message] : []));
}

describe("WorkerStateMachine", () => {
  test("ready tasks run by priority, no more at once than there are threads", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 2 });
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("c", [], 3) })), ["execute c"]);
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("b", [], 2) })), ["execute b"]);
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("z", [], 9) })), []);
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("a", [], 1) })), []);
    assert.deepEqual(state.taskCounts(), { executing: 2, ready: 2 });
    const out = finished(state, "c");
    assert.deepEqual(ops(out), ["send task-finished c", "execute a"]);
    const report = sent(out)[0];
    assert.equal(report.op === "task-finished" && report.thread, 7);
    assert.deepEqual(ops(finished(state, "b")), ["send task-finished b", "execute z"]);
  });

  test("a task sent after its dependency on the same worker runs once it finishes, without fetching", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("x") });
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("y", [local("x")], 1) })), []);
    assert.equal(state.tasks.get("y")!.state, "waiting");
    assert.deepEqual(ops(finished(state, "x")), ["send task-finished x", "execute y"]);
  });

  test("inputs held by peers are fetched in one request per peer, then the task runs", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    const out = state.handle({ type: "compute-task", message: compute("z", [held("a1", [A]), held("a2", [A]), held("b1", [B])]) });
    assert.deepEqual(ops(out).sort(), [`gather-dep ${A} a1,a2`, `gather-dep ${B} b1`]);
    assert.equal(state.tasks.get("a1")!.state, "flight");
    const fromA = state.handle({
      type: "gather-dep-success",
      worker: A,
      received: [
        { key: "a1", nbytes: 100, type: "Float64Array" },
        { key: "a2", nbytes: 100, type: "Float64Array" },
      ],
      missing: [],
      transfer: [transfer(A)],
    });
    assert.deepEqual(ops(fromA), ["send add-keys a1,a2"]);
    const fromB = state.handle({ type: "gather-dep-success", worker: B, received: [{ key: "b1", nbytes: 5, type: "number" }], missing: [], transfer: [transfer(B)] });
    assert.deepEqual(ops(fromB), ["send add-keys b1", "execute z"]);
    // Each transfer shows once, on the task it served.
    const report = sent(finished(state, "z"))[0];
    assert.ok(report.op === "task-finished");
    assert.deepEqual(
      report.startstops.map((startstop) => startstop.source),
      [A, B],
    );
    // Fetched replicas stay until the scheduler frees them.
    assert.equal(state.tasks.get("a1")!.state, "memory");
    assert.deepEqual(ops(state.handle({ type: "free-keys", keys: ["a1"] })), ["release-data a1"]);
    assert.equal(state.tasks.has("a1"), false);
  });

  test("fetches are bounded: one per peer, and no more peers at once than the limit", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1, transferCountLimit: 1 });
    const out = state.handle({ type: "compute-task", message: compute("z", [held("a1", [A]), held("b1", [B])]) });
    assert.equal(ops(out).length, 1);
    const first = out[0];
    assert.ok(first.op === "gather-dep");
    const next = state.handle({
      type: "gather-dep-success",
      worker: first.worker,
      received: [{ key: first.keys[0], nbytes: 1, type: "number" }],
      missing: [],
      transfer: [transfer(first.worker)],
    });
    assert.deepEqual(
      ops(next).filter((op) => op.startsWith("gather-dep")),
      [`gather-dep ${first.worker === A ? B : A} ${first.worker === A ? "b1" : "a1"}`],
    );
  });

  test("a batch stops growing past the message size limit but always has one key", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1, transferMessageBytesLimit: 150 });
    const out = state.handle({ type: "compute-task", message: compute("z", [held("a1", [A], 100), held("a2", [A], 100), held("a3", [A], 40)]) });
    assert.deepEqual(ops(out), [`gather-dep ${A} a1,a3`]);
  });

  test("a peer that lacks a key: another holder is tried, and missing-data is sent only once none is left", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1, transferCountLimit: 1 });
    state.handle({ type: "compute-task", message: compute("z", [held("k", [A, B])]) });
    const [firstTry] = [...state.inFlight.keys()];
    const other = firstTry === A ? B : A;
    const retry = state.handle({ type: "gather-dep-success", worker: firstTry, received: [], missing: ["k"], transfer: [transfer(firstTry)] });
    assert.deepEqual(ops(retry), [`gather-dep ${other} k`]);
    const giveUp = state.handle({ type: "gather-dep-success", worker: other, received: [], missing: ["k"], transfer: [transfer(other)] });
    assert.deepEqual(ops(giveUp).sort(), [`send missing-data k ${A}`, `send missing-data k ${B}`]);
    // The task that needed it is dropped: the scheduler sends it again with fresh holders.
    assert.equal(state.tasks.has("z"), false);
    assert.equal(state.tasks.has("k"), false);
    const again = state.handle({ type: "compute-task", message: compute("z", [held("k", [B])]) });
    assert.deepEqual(ops(again), [`gather-dep ${B} k`]);
  });

  test("a peer that cannot be reached is dropped as a holder of everything", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1, transferCountLimit: 1 });
    state.handle({ type: "compute-task", message: compute("y", [held("a1", [A])]) });
    state.handle({ type: "compute-task", message: compute("z", [held("a2", [A, B])]) });
    const keysFromA = state.inFlight.get(A)!.keys;
    assert.deepEqual(keysFromA, ["a1"]);
    assert.equal(state.tasks.get("a2")!.state, "fetch");
    const out = state.handle({ type: "gather-dep-failure", worker: A, keys: keysFromA });
    const result = ops(out);
    assert.ok(result.includes(`send missing-data a1 ${A}`), result.join("; "));
    assert.equal(state.tasks.has("y"), false, "y needed a1, which nobody else holds");
    assert.equal(state.tasks.get("z")!.state, "waiting");
    assert.ok(result.some((op) => op.startsWith(`gather-dep ${B}`) && op.includes("a2")), result.join("; "));
    assert.ok(!result.includes(`send missing-data a2 ${A}`));
  });

  test("an input the scheduler says only this worker holds, and it does not, is reported with this worker as the errant one", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    const out = state.handle({ type: "compute-task", message: compute("z", [held("k", [ME])]) });
    assert.deepEqual(ops(out), [`send missing-data k ${ME}`]);
    assert.equal(state.tasks.size, 0);
  });

  test("free-keys: queued tasks are dropped, running ones cancelled and their outcome thrown away, data released", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("run") });
    state.handle({ type: "compute-task", message: compute("queued", [], 5) });
    state.handle({ type: "compute-task", message: compute("done", [], 9) });
    assert.deepEqual(ops(state.handle({ type: "free-keys", keys: ["queued"] })), []);
    assert.deepEqual(ops(state.handle({ type: "free-keys", keys: ["run"] })), ["cancel-execute run"]);
    assert.equal(state.tasks.get("run")!.state, "cancelled");
    // Its thread is free only when the outcome comes back.
    assert.deepEqual(
      ops(state.handle({ type: "execute-failure", key: "run", error: { kind: "value", value: "stopped" }, thread: 1, startstops: [] })),
      ["execute done"],
    );
    assert.equal(state.tasks.has("run"), false);
    assert.deepEqual(ops(finished(state, "done")), ["send task-finished done"]);
    assert.deepEqual(ops(state.handle({ type: "free-keys", keys: ["done", "never-seen"] })), ["release-data done"]);
    assert.equal(state.tasks.size, 0);
  });

  test("a cancelled task asked for again before it finished counts after all", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("x") });
    state.handle({ type: "free-keys", keys: ["x"] });
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("x") })), []);
    assert.deepEqual(ops(finished(state, "x")), ["send task-finished x"]);
  });

  test("an erring task is reported with its phases and the transfers that fed it", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("z", [held("a", [A])]) });
    const decoded: StartStop = { action: "deserialize", start: 2, stop: 2.5 };
    state.handle({ type: "gather-dep-success", worker: A, received: [{ key: "a", nbytes: 1, type: "number" }], missing: [], transfer: [transfer(A), decoded] });
    const compute_: StartStop = { action: "compute", start: 3, stop: 4 };
    const out = state.handle({ type: "execute-failure", key: "z", error: { kind: "value", value: 1 }, thread: 2, startstops: [compute_] });
    const [message] = sent(out);
    assert.ok(message.op === "task-erred");
    assert.deepEqual(message.startstops, [transfer(A), decoded, compute_]);
    assert.equal(state.tasks.get("z")!.state, "error");
  });

  test("paused: no task starts and nothing is fetched until resumed", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "pause" });
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("x") })), []);
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("y", [held("a", [A])]) })), []);
    assert.deepEqual(ops(state.handle({ type: "unpause" })), [`gather-dep ${A} a`, "execute x"]);
  });

  test("data that arrives after the task needing it was freed is dropped and not announced", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("z", [held("a", [A])]) });
    assert.deepEqual(ops(state.handle({ type: "free-keys", keys: ["z"] })), []);
    const out = state.handle({ type: "gather-dep-success", worker: A, received: [{ key: "a", nbytes: 1, type: "number" }], missing: [], transfer: [transfer(A)] });
    assert.deepEqual(ops(out), ["release-data a"]);
    assert.equal(state.tasks.size, 0);
  });

  test("a key fetched here and then asked to be computed is reported as finished", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("z", [held("a", [A])]) });
    state.handle({ type: "gather-dep-success", worker: A, received: [{ key: "a", nbytes: 1, type: "number" }], missing: [], transfer: [transfer(A)] });
    assert.deepEqual(ops(state.handle({ type: "compute-task", message: compute("a") })), ["send task-finished a"]);
  });
});

describe("WorkerStateMachine: steal requests (Dask's handle_steal_request)", () => {
  const steal = (state: WorkerStateMachine, key: string): FromWorker[] => sent(state.handle({ type: "steal-request", key, stimulusId: "steal-1" }));

  test("a ready task is given up and the answer says so; an executing one stays, and the answer gives its state", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("x", [], 0) });
    state.handle({ type: "compute-task", message: compute("y", [], 1) });
    assert.deepEqual(steal(state, "x"), [{ op: "steal-response", key: "x", stimulusId: "steal-1", state: "executing" }]);
    assert.equal(state.tasks.get("x")!.state, "executing");
    assert.deepEqual(steal(state, "y"), [{ op: "steal-response", key: "y", stimulusId: "steal-1", state: "released" }]);
    assert.equal(state.tasks.has("y"), false);
    assert.deepEqual(ops(finished(state, "x")), ["send task-finished x"], "the stolen task never runs here");
  });

  test("a task waiting for inputs is given up, and the fetch of its inputs let go", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("z", [held("a1", [A])]) });
    assert.deepEqual(steal(state, "z").map((m) => m.op === "steal-response" && m.state), ["released"]);
    assert.equal(state.tasks.has("z"), false);
    const out = state.handle({ type: "gather-dep-success", worker: A, received: [{ key: "a1", nbytes: 100, type: "number" }], missing: [], transfer: [] });
    assert.deepEqual(ops(out), ["release-data a1"], "the input that arrives is not kept");
  });

  // Port of distributed/tests/test_steal.py::test_dont_steal_already_released (the worker's answer)
  test("test_dont_steal_already_released: a key the worker no longer has is answered with state null", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("x") });
    state.handle({ type: "free-keys", keys: ["x"] });
    finished(state, "x");
    assert.deepEqual(steal(state, "x"), [{ op: "steal-response", key: "x", stimulusId: "steal-1", state: null }]);
  });

  test("a ready task whose dependents wait for it here stays", () => {
    const state = new WorkerStateMachine({ address: ME, nthreads: 1 });
    state.handle({ type: "compute-task", message: compute("busy", [], 0) });
    state.handle({ type: "compute-task", message: compute("x", [], 1) });
    state.handle({ type: "compute-task", message: compute("y", [local("x")], 2) });
    assert.deepEqual(steal(state, "x").map((m) => m.op === "steal-response" && m.state), ["ready"]);
    assert.equal(state.tasks.get("x")!.state, "ready");
  });
});

describe("worker metrics", () => {
  test("a task's execute metrics: cpu and non-cpu, or the pool's list for it; the executor gets the rest", () => {
    const timing = { startTime: 10, endTime: 10.5, cpuTime: 0.3 };
    const metrics = runMetrics(timing, 9.9, 10.7);
    assert.deepEqual(
      metrics.map(([activity, value, unit]) => [activity, Math.round(value * 1000) / 1000, unit]),
      [
        ["thread-cpu", 0.3, "seconds"],
        ["thread-noncpu", 0.2, "seconds"],
        ["executor", 0.3, "seconds"],
      ],
    );
    // With the pool's per-task list (user meters taken out of cpu/noncpu), that list is used as it is.
    const own = [
      ["thread-cpu", 0.1, "seconds"],
      ["thread-noncpu", 0.05, "seconds"],
      ["I/O", 0.35, "seconds"],
      ["rows", 12, "count"],
    ] as const;
    const withOwn = runMetrics({ ...timing, metrics: own, postSeconds: 0.1 }, 9.9, 10.7);
    assert.deepEqual(withOwn.slice(0, 4), own);
    // Seconds add up: what the list explains (the task's 0.5 s) is not the executor's; handing the
    // task over (cloning it into the thread's message, 0.1 s of it) is, as in Dask: no serialize.
    assert.deepEqual(withOwn.slice(4).map(([activity]) => activity), ["executor"]);
    assert.ok(Math.abs(withOwn[4][1] - 0.3) < 1e-9);
    // Never reached a thread: all of it was waiting.
    assert.deepEqual(runMetrics(undefined, 1, 1.25), [["executor", 0.25, "seconds"]]);
  });

  // Port of distributed/tests/test_worker_metrics.py::test_user_metrics_async (the worker's part)
  test("test_worker_metrics.py::test_user_metrics_async: a task that returned a promise is metered as Dask meters a coroutine task", () => {
    const own = [
      ["I/O", 5, "seconds"],
      ["thread-cpu", 0.02, "seconds"],
      ["thread-noncpu", 0.08, "seconds"],
    ] as const;
    const metrics = runMetrics({ startTime: 10, endTime: 10.1, cpuTime: 0.02, metrics: own, awaited: true }, 9.9, 10.7);
    // Dask runs it on the worker's event loop: its time all thread-noncpu, no thread-cpu, no executor.
    assert.deepEqual(
      metrics.map(([activity, value, unit]) => [activity, Math.round(value * 1000) / 1000, unit]),
      [
        ["I/O", 5, "seconds"],
        ["thread-noncpu", 0.1, "seconds"],
      ],
    );
    const digests = new Digests();
    digests.addTask("span-1", "x", new ExecuteLedger(), metrics, 0.8);
    assert.deepEqual(
      digests.tuples().map(([key]) => key),
      [
        ["execute", "span-1", "x", "I/O", "seconds"],
        ["execute", "span-1", "x", "thread-noncpu", "seconds"],
        ["execute", "span-1", "x", "other", "seconds"],
      ],
    );
  });

  test("digests sum under Dask's keys, ints stay ints, and the since-heartbeat copy is swapped out whole", () => {
    const digests = new Digests();
    digests.addAll(["execute", "span-1", "inc"], [
      ["memory-read", 1, "count"],
      ["memory-read", 8, "bytes"],
    ]);
    digests.add(["execute", "span-1", "inc", "memory-read", "count"], 2);
    digests.add(["gather-dep", "network", "seconds"], 0.25);
    assert.equal(digests.get(["execute", "span-1", "inc", "memory-read", "count"]), 3);
    assert.ok(Number.isInteger(digests.get(["execute", "span-1", "inc", "memory-read", "bytes"])));
    const first = digests.takeSinceHeartbeat();
    assert.deepEqual(first, [
      { context: "execute", span: "span-1", prefix: "inc", activity: "memory-read", unit: "count", value: 3 },
      { context: "execute", span: "span-1", prefix: "inc", activity: "memory-read", unit: "bytes", value: 8 },
      { context: "gather-dep", activity: "network", unit: "seconds", value: 0.25 },
    ]);
    digests.add(["gather-dep", "network", "seconds"], 0.5);
    assert.deepEqual(digests.takeSinceHeartbeat(), [{ context: "gather-dep", activity: "network", unit: "seconds", value: 0.5 }]);
    assert.deepEqual(digests.takeSinceHeartbeat(), []);
    assert.equal(digests.get(["gather-dep", "network", "seconds"]), 0.75);
    assert.deepEqual(digests.tuples()[0], [["execute", "span-1", "inc", "memory-read", "count"], 3]);
  });

  test("a finished task's digests: summed in place per span and prefix, the same as digesting each metric, folded when read or sent", () => {
    const run = [
      ["thread-cpu", 0.25, "seconds"],
      ["thread-noncpu", 0, "seconds"],
      ["I/O", 0.5, "seconds"],
      ["executor", 0.125, "seconds"],
    ] as const;
    const digests = new Digests();
    for (let i = 0; i < 2; i++) {
      const account = new ExecuteLedger();
      account.add("memory-read", 1, "count");
      account.add("memory-read", 8, "bytes");
      digests.addTask("span-1", "inc", account, run, 1);
    }
    // A task without inputs digests no memory reads; a failed one lumps its seconds under "failed".
    digests.addTask("span-1", "add", new ExecuteLedger(), run, 1);
    const failed = new ExecuteLedger();
    failed.add("memory-read", 1, "count");
    failed.add("memory-read", 4, "bytes");
    digests.addTask("span-1", "add", failed, run, 2, "failed");
    const expected = new Digests();
    for (let i = 0; i < 2; i++) {
      expected.addAll(["execute", "span-1", "inc"], [["memory-read", 1, "count"], ["memory-read", 8, "bytes"], ...run, ["other", 0.125, "seconds"]]);
    }
    expected.addAll(["execute", "span-1", "add"], [...run, ["other", 0.125, "seconds"]]);
    expected.addAll(["execute", "span-1", "add"], [["memory-read", 1, "count"], ["memory-read", 4, "bytes"], ["failed", 2, "seconds"]]);
    const byKey = (records: { activity: string; unit: string; prefix?: string; value: number }[]): Map<string, number> =>
      new Map(records.map((record) => [`${record.prefix} ${record.activity} ${record.unit}`, record.value]));
    assert.deepEqual(byKey(digests.records()), byKey(expected.records()));
    // thread-noncpu was digested as 0: it still has its entry, as when digested one by one.
    assert.equal(byKey(digests.records()).get("inc thread-noncpu seconds"), 0);
    assert.deepEqual(byKey(digests.takeSinceHeartbeat()), byKey(expected.takeSinceHeartbeat()));
    assert.deepEqual(digests.takeSinceHeartbeat(), []);
    // After a heartbeat, only what was added since goes with the next one; totals keep everything.
    digests.addTask("span-1", "inc", new ExecuteLedger(), run, 1);
    assert.deepEqual(
      byKey(digests.takeSinceHeartbeat()),
      new Map([
        ["inc I/O seconds", 0.5],
        ["inc thread-cpu seconds", 0.25],
        ["inc thread-noncpu seconds", 0],
        ["inc executor seconds", 0.125],
        ["inc other seconds", 0.125],
      ]),
    );
    assert.equal(digests.get(["execute", "span-1", "inc", "thread-cpu", "seconds"]), 0.75);
    // A spilled input's disk read (anything but memory reads) goes with the task's own list.
    const spilled = new ExecuteLedger();
    spilled.add("disk-read", 100, "bytes");
    digests.addTask("span-1", "inc", spilled, run, 1);
    assert.equal(digests.get(["execute", "span-1", "inc", "disk-read", "bytes"]), 100);
    assert.equal(digests.get(["execute", "span-1", "inc", "other", "seconds"]), 0.5);
  });

  test("an instruction's ledger: what nothing measured becomes other; a failure lumps all seconds under one label", async () => {
    const ledger = new InstructionLedger();
    ledger.add("thread-cpu", 0, "seconds");
    ledger.add("memory-read", 2, "count");
    await new Promise((resolve) => setTimeout(resolve, 20));
    const done = ledger.finalize();
    assert.equal(done.length, 3);
    assert.equal(done[2][0], "other");
    assert.ok(done[2][1] >= 0.015);
    const failed = ledger.finalize("failed");
    assert.deepEqual(failed.slice(0, 1), [["memory-read", 2, "count"]]);
    assert.equal(failed[1][0], "failed");
    assert.ok(failed[1][1] >= 0.015);
  });
});

describe("memory thresholds", () => {
  const limit = 1000;
  test("above the spill threshold the monitor spills down to the target; above pause it pauses", () => {
    assert.deepEqual(decideMemory(650, limit, DEFAULT_THRESHOLDS), { spillBytes: 0, paused: false });
    assert.deepEqual(decideMemory(750, limit, DEFAULT_THRESHOLDS), { spillBytes: 150, paused: false });
    assert.deepEqual(decideMemory(850, limit, DEFAULT_THRESHOLDS), { spillBytes: 250, paused: true });
    assert.deepEqual(decideMemory(850, limit, { target: false, spill: 0.7, pause: false }), { spillBytes: 150, paused: false });
    assert.deepEqual(decideMemory(990, limit, { target: 0.6, spill: false, pause: 0.8 }), { spillBytes: 0, paused: true });
  });

  test("thresholds are fractions, or false to turn one off", () => {
    assert.deepEqual(memoryThresholds({ pause: false }), { target: 0.6, spill: 0.7, pause: false });
    assert.throws(() => memoryThresholds({ spill: 70 }), /threshold spill must be a fraction in \(0, 1\] or false, got 70/);
  });
});
