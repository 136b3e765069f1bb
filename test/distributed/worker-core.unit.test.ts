// The runtime both worker kinds share (src/kernel/distributed/worker/core.ts), in this process
// with made-up holdings: the live view `client.run` functions see, the log, run and plugin
// replies, heartbeat metrics and the times it reports on the scheduler's clock.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { describe, test } from "node:test";
import { WorkerClock } from "../../src/kernel/distributed/worker/clock";
import { type HeldBytes, WorkerCore, type WorkerCoreOptions } from "../../src/kernel/distributed/worker/core";
import type { TaskRun } from "../../src/kernel/distributed/worker/execute";
import type { FnSpec, PackedError } from "../../src/kernel/execution/wire";
import type { ShippedWorkerPlugin } from "../../src/kernel/distributed/messages";

const source = (text: string, method = false): FnSpec => ({ kind: "source", source: text, method });

/** A core over holdings the test changes; `printed` collects what it prints. */
function makeCore(options: Partial<WorkerCoreOptions> = {}) {
  const held: { -readonly [field in keyof HeldBytes]: number } & { reported: number; tasks: Record<string, number>; executed: number } = { managed: 0, spilled: 0, spilledFileBytes: 0, reported: 0, tasks: { executing: 0 }, executed: 0 };
  const data = new Map<string, unknown>([["x", 42]]);
  const printed: string[] = [];
  const core = new WorkerCore({
    identity: { address: "unix:///tmp/w1.sock", name: "w1", nthreads: 2, memoryLimit: 1e9, localDirectory: "/tmp/w1" },
    clock: new WorkerClock(),
    profile: false,
    holdings: {
      layout: () => ({ memory: [...data.keys()], disk: [] }),
      has: (key) => data.has(key),
      get: (key) => data.get(key),
      nbytes: (key) => (data.has(key) ? 8 : undefined),
      held: () => ({ managed: held.managed, spilled: held.spilled, spilledFileBytes: held.spilledFileBytes }),
      reportedResultBytes: () => held.reported,
      tasks: () => held.tasks,
      executedCount: () => held.executed,
    },
    digestsInHeartbeats: true,
    print: (line) => printed.push(line),
    ...options,
  });
  return { core, held, data, printed };
}

function errorMessage(error: PackedError | undefined): string {
  assert.ok(error !== undefined && error.kind === "error", `expected a packed Error, got ${JSON.stringify(error)}`);
  return error.message;
}

describe("WorkerCore: the live view", () => {
  test("reads the holdings, the status and the records when asked", () => {
    const { core, held } = makeCore();
    const view = core.view;
    assert.equal(view.address, "unix:///tmp/w1.sock");
    assert.equal(view.localDirectory, "/tmp/w1");
    assert.deepEqual(view.data.keys, ["x"]);
    assert.equal(view.data.get("x"), 42);
    assert.equal(view.data.nbytes("x"), 8);
    held.managed = 1234;
    held.spilled = 99;
    held.executed = 3;
    held.tasks = { executing: 2, ready: 1 };
    assert.equal(view.memory.managed, 1234);
    assert.equal(view.memory.spilled, 99);
    assert.ok(view.memory.process > 0);
    assert.equal(view.executedCount, 3);
    assert.deepEqual(view.tasks, { executing: 2, ready: 1 });
    assert.equal(view.status, "running");
    core.status = "paused";
    assert.equal(view.status, "paused");
    core.digests.add(["gather-dep", "network", "seconds"], 0.5);
    assert.deepEqual(view.digestsTotal, [{ context: "gather-dep", activity: "network", unit: "seconds", value: 0.5 }]);
    core.transfers.received({ start: 1, stop: 2, who: "redis", keys: { x: 8 }, wireBytes: 8, types: ["number"] });
    core.transfers.sent({ start: 2, stop: 3, who: "redis", keys: { y: 16 }, wireBytes: 16, types: ["number"] });
    assert.deepEqual([view.incomingTransferLog.length, view.outgoingTransferLog.length], [1, 1]);
    assert.deepEqual(view.digestsTotalTuples, [[["gather-dep", "network", "seconds"], 0.5]]);
    assert.equal(view.bandwidth, core.transfers.bandwidth);
    core.clock.observe(100, 100, 130);
    assert.equal(view.clockOffset, -30);
  });

  test("a worker without a folder shows an empty localDirectory and logs no Local Directory line", () => {
    const { core } = makeCore({ identity: { address: "redis-w", name: "redis-w", nthreads: 1, memoryLimit: 0, localDirectory: undefined } });
    core.noteStart();
    assert.equal(core.view.localDirectory, "");
    assert.deepEqual(
      core.view.logs.map((line) => line.message),
      ["Start worker at: redis-w", "Worker name: redis-w", "Threads: 1", "Memory: no limit"],
    );
  });
});

describe("WorkerCore: its log", () => {
  test("a warning is kept with the worker's prefix and printed; a note is only kept, on the scheduler's clock", () => {
    const { core, printed } = makeCore({ warningPrefix: "tsdask worker w1: " });
    const clock = core.clock;
    clock.observe(clock.now(), clock.now(), clock.now() + 1000);
    core.warn("Redis unreachable");
    core.note("INFO", "Spilled 1 MiB to disk");
    assert.deepEqual(printed, ["tsdask worker w1: Redis unreachable"]);
    const lines = core.view.logs;
    assert.deepEqual(lines.map(({ level, message }) => [level, message]), [["WARNING", "tsdask worker w1: Redis unreachable"], ["INFO", "Spilled 1 MiB to disk"]]);
    // Kept on the scheduler's clock: 1000 s ahead of this one.
    assert.ok(Math.abs(lines[1].time - (clock.now() + 1000)) < 5, `${lines[1].time} vs ${clock.now() + 1000}`);
  });
});

describe("WorkerCore: requests", () => {
  test("run hands the function its arguments, then the view, and replies with its value", async () => {
    const { core } = makeCore();
    const reply = await core.run({ op: "run", requestId: 7, fn: source("(a, b, worker) => [a + b, worker.name, worker.data.get('x')]"), args: [1, 2] });
    assert.deepEqual(reply, { op: "run-reply", requestId: 7, ok: true, value: [3, "w1", 42] });
  });

  test("run replies with the error the function threw, or one it cannot resolve", async () => {
    const { core } = makeCore();
    const thrown = await core.run({ op: "run", requestId: 1, fn: source("() => { throw new RangeError('too far') }") });
    assert.equal(thrown.ok, false);
    assert.equal(errorMessage(thrown.error), "too far");
    const unresolvable = await core.run({ op: "run", requestId: 2, fn: { kind: "module", path: "/nonexistent/tsdask-module.js", name: "f" } });
    assert.equal(unresolvable.ok, false);
    assert.match(errorMessage(unresolvable.error), /Cannot find module/);
  });

  test("run calls the function as the worker admits it, not as sent", async () => {
    const { core } = makeCore();
    const reply = await core.run({ op: "run", requestId: 3, fn: source("() => 'as sent'") }, source("() => 'as admitted'"));
    assert.equal(reply.value, "as admitted");
  });

  test("a value the transport cannot send is answered by an error naming the worker", () => {
    const { core } = makeCore();
    const reply = core.unsendable(4, new Error("could not clone a function"));
    assert.equal(reply.ok, false);
    assert.equal(errorMessage(reply.error), "The run function's result cannot be sent back from worker unix:///tmp/w1.sock: could not clone a function");
  });

  test("plugins: setup sees the view, a failing setup is logged and answered, a refusal by admit too", async () => {
    const watched: boolean[] = [];
    const { core, printed } = makeCore({ watchTransitions: (on) => watched.push(on) });
    const plugin = (name: string, setup: string): ShippedWorkerPlugin => ({
      name,
      idempotent: false,
      data: {},
      build: { kind: "methods", methods: { setup: source(setup, true), transition: source("transition() {}", true) } },
    });
    const added = await core.pluginReply({ op: "plugin-add", requestId: 1, plugin: plugin("ok", "setup(worker) { if (worker.name !== 'w1') throw new Error('wrong view') }") });
    assert.deepEqual(added, { op: "run-reply", requestId: 1, ok: true });
    assert.deepEqual(core.plugins.names, ["ok"]);
    assert.deepEqual(watched, [true]);

    const broken = await core.pluginReply({ op: "plugin-add", requestId: 2, plugin: plugin("broken", "setup(worker) { throw new Error('no setup on ' + worker.name) }") });
    assert.equal(broken.ok, false);
    assert.equal(errorMessage(broken.error), "no setup on w1");
    assert.match(printed.join("\n"), /Plugin broken failed to setup: Error: no setup on w1/);

    const refused = await core.pluginReply({ op: "plugin-add", requestId: 3, plugin: plugin("refused", "setup() {}") }, () => {
      throw new Error("worker w1 cannot run it");
    });
    assert.equal(errorMessage(refused.error), "worker w1 cannot run it");
    assert.ok(!core.plugins.names.includes("refused"));

    const removed = await core.pluginReply({ op: "plugin-remove", requestId: 4, name: "ok" });
    assert.deepEqual(removed, { op: "run-reply", requestId: 4, ok: true });
    assert.ok(!core.plugins.names.includes("ok"));
    await core.plugins.teardownAll();
    core.close();
  });

  test("a worker that does not profile answers a profile request with no windows", async () => {
    const { core } = makeCore();
    const reply = await core.profileReply({ op: "profile", requestId: 9 });
    assert.equal(reply.op, "profile-reply");
    assert.equal(reply.requestId, 9);
    assert.equal(reply.enabled, false);
    core.close();
  });
});

describe("WorkerCore: heartbeats", () => {
  test("report the holdings, and the digests and transfers since the previous heartbeat", () => {
    const { core, held } = makeCore();
    held.managed = 500;
    held.reported = 480;
    held.spilled = 20;
    held.spilledFileBytes = 10;
    held.tasks = { executing: 1 };
    core.digests.add(["gather-dep", "network", "seconds"], 0.25);
    core.transfers.sent({ start: 1, stop: 2, who: "w2", keys: { x: 8 }, wireBytes: 16, types: ["number"] });
    const first = core.heartbeatMetrics();
    assert.equal(first.managedBytes, 500);
    assert.equal(first.reportedResultBytes, 480);
    assert.deepEqual(first.spilledBytes, { memory: 20, disk: 10 });
    assert.deepEqual(first.taskCounts, { executing: 1 });
    assert.ok(first.memory > 0);
    assert.ok(first.cpu >= 0 && Number.isFinite(first.cpu));
    assert.deepEqual(first.digests, [{ context: "gather-dep", activity: "network", unit: "seconds", value: 0.25 }]);
    assert.deepEqual(first.transfer, { incomingBytes: 0, outgoingBytes: 16, incomingCount: 0, outgoingCount: 1 });
    const second = core.heartbeatMetrics();
    assert.deepEqual(second.digests, []);
    assert.deepEqual(second.transfer, { incomingBytes: 0, outgoingBytes: 0, incomingCount: 0, outgoingCount: 0 });
  });

  test("a worker whose digests travel with its tasks' outcomes sends none, yet keeps them for its view", () => {
    const { core } = makeCore({ digestsInHeartbeats: false });
    core.digests.add(["gather-dep", "network", "seconds"], 0.25);
    assert.deepEqual(core.heartbeatMetrics().digests, []);
    assert.equal(core.view.digestsTotal.length, 1);
  });

  test("the CPU a heartbeat reports is this process's since the previous one", () => {
    const { core } = makeCore();
    core.heartbeatMetrics();
    const before = process.cpuUsage();
    // Busy until this process has used 20 ms of CPU, however long a loaded machine takes to give it.
    while (process.cpuUsage(before).user < 20_000);
    const { cpu } = core.heartbeatMetrics();
    assert.ok(cpu > 0 && cpu <= 110 * availableParallelism(), `cpu ${cpu}`);
  });
});

describe("WorkerCore: times on the scheduler's clock", () => {
  const run = (fields: Partial<TaskRun>): TaskRun => ({
    ok: true,
    value: 1,
    error: undefined,
    thread: 0,
    submitted: 1000,
    start: 1000,
    end: 1002,
    arrived: 1002,
    ranOnThread: true,
    queued: 0,
    metrics: [],
    ...fields,
  });

  test("a run's compute phase goes through the simulated offset and the scheduler's delay", () => {
    const { core } = makeCore({ clock: new WorkerClock(5) });
    // The scheduler's clock is 20 s behind this worker's (simulated) one.
    core.clock.observe(2000, 2000, 1980);
    assert.deepEqual(core.computePhase(run({})), { action: "compute", start: 985, stop: 987 });
    assert.deepEqual(core.phase("disk-read", 2000, 2001), { action: "disk-read", start: 1980, stop: 1981 });
    assert.equal(core.view.simulatedClockOffset, 5);
    assert.equal(core.view.clockOffset, 20);
  });

  test("a run that never reached a thread, or whose thread died, has no compute phase", () => {
    const { core } = makeCore();
    assert.equal(core.computePhase(run({ ranOnThread: false })), undefined);
  });
});
