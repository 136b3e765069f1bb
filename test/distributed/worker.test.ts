// The cluster worker as a real process, driven by a test that plays the scheduler over the real
// sockets: tasks, peer transfers between two workers, spilling, pausing, clocks, metrics, faults
// and leaving nothing behind.
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { after, afterEach, before, describe, test } from "node:test";
import { now } from "../../src/kernel/clock";
import type { ComputeTaskMessage, DependencyInfo, WireTask } from "../../src/kernel/distributed/messages";
import type { MetricRecord, StartStop, TransferLogEntry } from "../../src/protocol/records";
import { waitFor } from "../helpers/wait";
import { FakeScheduler, type WorkerHandle, moduleFunction } from "../helpers/worker-driver";

const FUNCTIONS = ["inc", "add", "sleep", "spin", "throwMine", "ramp", "total", "describeArrays", "noise"] as const;
const fn = (name: (typeof FUNCTIONS)[number]): number => FUNCTIONS.indexOf(name);
const call = (name: (typeof FUNCTIONS)[number], ...args: WireTask[]): WireTask => ["call", fn(name), ...args];
const lit = (value: unknown): WireTask => ["lit", value];
const ref = (key: string): WireTask => ["ref", key];

function defineAll(worker: WorkerHandle): void {
  worker.send({ op: "define-functions", functions: FUNCTIONS.map((name, id) => [id, moduleFunction(name)] as const) });
}

function task(key: string, expression: WireTask, dependencies: readonly DependencyInfo[] = [], priority = 0): ComputeTaskMessage {
  return { op: "compute-task", key, name: `'${key}'`, prefix: key.split("-")[0], task: expression, dependencies, priority, spanId: "span-a" };
}

const MB = 1e6;
/**
 * How far a worker's clock estimate may be off once it has had a few heartbeats: half its
 * shortest round trip. Tests that do not wait for them only check that times are not grossly off.
 */
const CLOCK_SLACK = 0.005;
const FRESH_CLOCK_SLACK = 0.05;
/** One million float64 values: 8 MB. */
const BLOCK = 1_000_000;

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function phase(startstops: readonly StartStop[], action: StartStop["action"]): StartStop | undefined {
  return startstops.find((startstop) => startstop.action === action);
}

function digest(records: readonly MetricRecord[], match: Partial<MetricRecord>): number | undefined {
  const found = records.filter((record) => Object.entries(match).every(([name, value]) => record[name as keyof MetricRecord] === value));
  return found.length === 0 ? undefined : found.reduce((sum, record) => sum + record.value, 0);
}

describe("cluster worker process", () => {
  let scheduler: FakeScheduler;
  before(async () => {
    scheduler = await FakeScheduler.start();
  });
  afterEach(async () => {
    await scheduler.killAll();
  });
  after(async () => {
    await scheduler.close();
  });

  test("registers, runs tasks by priority on its threads, reports them on the scheduler's clock and answers gathers", async () => {
    const worker = await scheduler.spawn({ nthreads: 1 });
    const register = await worker.next("register");
    assert.equal(register.address, `unix://${worker.config.listenPath}`);
    assert.equal(register.pid, worker.pid);
    assert.equal(register.nthreads, 1);
    assert.ok(register.globals.includes("Math") && register.globals.includes("Float64Array"));
    assert.ok(existsSync(worker.config.localDirectory), "the worker's folder exists while it runs");

    defineAll(worker);
    const sent = now();
    worker.send(
      task("slow", call("sleep", lit(100)), [], 0),
      // Queued behind "slow" on the only thread; "first" has the better priority.
      task("later", call("inc", lit(1)), [], 5),
      task("first", call("inc", lit(10)), [], 1),
      task("sum", call("add", ref("first"), lit(100)), [{ key: "first", nbytes: 0, whoHas: [], local: true }], 2),
    );
    const finished = await Promise.all(["slow", "first", "sum", "later"].map((key) => worker.next("task-finished", (m) => m.key === key)));
    const received = now();
    assert.deepEqual(
      worker.all("task-finished").map((message) => message.key),
      ["slow", "first", "sum", "later"],
    );
    for (const message of finished) {
      const compute = phase(message.startstops, "compute")!;
      assert.ok(compute !== undefined, `${message.key} has a compute phase`);
      assert.ok(compute.start <= compute.stop, message.key);
      assert.ok(sent - FRESH_CLOCK_SLACK <= compute.start && compute.stop <= received + FRESH_CLOCK_SLACK, `${message.key}'s times are on the scheduler's clock`);
      assert.equal(typeof message.thread, "number");
    }
    assert.equal(finished[2].nbytes, 8);
    assert.equal(finished[2].type, "number");
    assert.ok(phase(finished[0].startstops, "compute")!.stop - phase(finished[0].startstops, "compute")!.start >= 0.09);

    const reply = await worker.gather(["sum", "later", "nope"]);
    assert.deepEqual(reply.values, { sum: 111, later: 2 });
    assert.deepEqual(reply.missing, ["nope"]);

    worker.send(task("bad", call("throwMine", lit("no luck"))));
    const erred = await worker.next("task-erred", (m) => m.key === "bad");
    assert.ok(erred.error.kind === "error" && erred.error.name === "MyError" && erred.error.message === "no luck");
    assert.ok(phase(erred.startstops, "compute") !== undefined);
  });

  test("a small result a client wants comes with its task's report; big or unasked ones stay for gather", async () => {
    const worker = await scheduler.spawn({ nthreads: 1 });
    defineAll(worker);
    const wanted = (message: ComputeTaskMessage): ComputeTaskMessage => ({ ...message, returnsResult: true });
    worker.send(
      wanted(task("small", call("ramp", lit(4), lit(1), lit(false)))),
      wanted(task("nothing", call("inc", lit(-1)))),
      wanted(task("big", call("ramp", lit(100_000), lit(0), lit(false)))),
      task("unasked", call("inc", lit(1))),
    );
    const [small, nothing, big, unasked] = await Promise.all(["small", "nothing", "big", "unasked"].map((key) => worker.next("task-finished", (m) => m.key === key)));
    assert.deepEqual(small.value, Float64Array.of(1, 2, 3, 4), "a typed array travels intact");
    assert.ok("value" in nothing && nothing.value === 0);
    assert.equal("value" in big, false, "800 kB is left to gather");
    assert.equal("value" in unasked, false);
    assert.deepEqual((await worker.gather(["small", "big"])).missing, [], "the worker still holds what it reported");
  });

  test("free-keys drops results and stops a running task, freeing its thread", async () => {
    const worker = await scheduler.spawn({ nthreads: 1 });
    defineAll(worker);
    worker.send(task("kept", call("inc", lit(1))), task("dropped", call("inc", lit(2))));
    await worker.next("task-finished", (m) => m.key === "dropped");
    worker.send({ op: "free-keys", keys: ["dropped"] });
    assert.deepEqual(await worker.run<unknown>("(worker) => worker.data.keys"), ["kept"]);

    worker.send(task("forever", call("spin", lit(60_000))));
    await until(() => worker.all("heartbeat").some((beat) => beat.metrics.taskCounts.executing === 1), "the spinning task to start");
    worker.send({ op: "free-keys", keys: ["forever"] }, task("after", call("inc", lit(41))));
    const after = await worker.next("task-finished", (m) => m.key === "after", 10_000);
    assert.ok(after !== undefined, "the next task ran although the cancelled one would spin for a minute");
    assert.equal(worker.all("task-finished").some((m) => m.key === "forever"), false);
    const digests = await worker.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.ok((digest(digests, { context: "execute", prefix: "forever", activity: "cancelled", unit: "seconds" }) ?? 0) > 0);
    assert.equal(digest(digests, { context: "execute", prefix: "forever", activity: "thread-cpu" }), undefined);
  });

  test("two workers: a dependency computed on one is fetched by the other, typed arrays intact, in both transfer logs", async () => {
    const a = await scheduler.spawn({ nthreads: 1 });
    const b = await scheduler.spawn({ nthreads: 2 });
    defineAll(a);
    defineAll(b);
    a.send(task("shared-x", call("ramp", lit(BLOCK), lit(0), lit(true))), task("plain-y", call("ramp", lit(BLOCK), lit(1), lit(false))));
    const made = await Promise.all(["shared-x", "plain-y"].map((key) => a.next("task-finished", (m) => m.key === key)));
    assert.deepEqual(
      made.map((m) => [m.nbytes, m.type]),
      [
        [8 * BLOCK, "Float64Array"],
        [8 * BLOCK, "Float64Array"],
      ],
    );
    const sent = now();
    b.send(
      task("check-z", call("describeArrays", ref("shared-x"), ref("plain-y")), [
        { key: "shared-x", nbytes: 8 * BLOCK, whoHas: [a.address] },
        { key: "plain-y", nbytes: 8 * BLOCK, whoHas: [a.address] },
      ]),
    );
    const done = await b.next("task-finished", (m) => m.key === "check-z");
    const received = now();
    // One transfer (both keys in one request), then decoding its reply, shown before the compute.
    assert.deepEqual(
      done.startstops.map((s) => s.action),
      ["transfer", "deserialize", "compute"],
    );
    const [transfer, deserialize, compute] = done.startstops;
    assert.equal(transfer.source, a.address);
    assert.ok(sent - FRESH_CLOCK_SLACK <= transfer.start, `transfer starts ${transfer.start - sent} s after sending`);
    assert.equal(deserialize.start, transfer.stop, "decoding follows the bytes' arrival");
    assert.ok(deserialize.stop > deserialize.start);
    assert.ok(deserialize.stop <= compute.start, `compute starts ${compute.start - deserialize.stop} s after the decoding`);
    assert.ok(compute.stop <= received + FRESH_CLOCK_SLACK, `compute ends ${compute.stop - received} s after the scheduler heard of it`);
    const addKeys = await b.next("add-keys");
    assert.deepEqual([...addKeys.keys].sort(), ["plain-y", "shared-x"]);

    const { values } = await b.gather(["check-z", "shared-x", "plain-y"]);
    assert.deepEqual(values["check-z"], [
      { type: "Float64Array", shared: true, length: BLOCK, first: 0, last: BLOCK - 1 },
      { type: "Float64Array", shared: false, length: BLOCK, first: 1, last: BLOCK },
    ]);
    const x = values["shared-x"] as Float64Array;
    assert.ok(x instanceof Float64Array && x.length === BLOCK && x[12345] === 12345);

    const incoming = await b.run<TransferLogEntry[]>("(worker) => worker.incomingTransferLog");
    const outgoing = await a.run<TransferLogEntry[]>("(worker) => worker.outgoingTransferLog");
    assert.equal(incoming.length, 1);
    assert.equal(outgoing.length, 1);
    for (const [entry, who] of [
      [incoming[0], a.address],
      [outgoing[0], b.address],
    ] as const) {
      assert.equal(entry.who, who);
      // Dask's log holds the keys themselves: a string key is its own str.
      assert.deepEqual(entry.keys, { "shared-x": 8 * BLOCK, "plain-y": 8 * BLOCK });
      assert.equal(entry.total, 16 * BLOCK);
      // Raw bytes plus a small header: nothing re-encoded.
      assert.ok(entry.compressed >= 16 * BLOCK && entry.compressed < 16 * BLOCK + 2000, `${entry.compressed} bytes on the wire`);
      assert.ok(entry.duration >= 0.001 && Math.abs(entry.middle - (entry.start + entry.stop) / 2) < 1e-9);
      assert.ok(Math.abs(entry.bandwidth - entry.total / entry.duration) < 1e-3);
      // The outgoing entry ends when the last byte is handed to the socket, which may be after b has the data.
      assert.ok(sent - FRESH_CLOCK_SLACK <= entry.start && entry.stop <= received + FRESH_CLOCK_SLACK, "logged on the scheduler's clock");
      assert.deepEqual(entry.types, ["Float64Array"]);
    }
    const heartbeat = await b.next("heartbeat", (m) => m.metrics.transfer.incomingCount > 0);
    assert.equal(heartbeat.metrics.transfer.incomingBytes, incoming[0].compressed);
    assert.ok(heartbeat.metrics.bandwidth.workers[a.address] > 0);
    assert.ok(heartbeat.metrics.bandwidth.types.Float64Array > 0);

    // Fine performance metrics under Dask's keys, on both sides.
    const fetched = await b.run<[unknown[], number][]>("(worker) => worker.digestsTotalTuples");
    const keysB = fetched.map(([key]) => JSON.stringify(key));
    for (const key of [
      ["gather-dep", "network", "seconds"],
      ["gather-dep", "deserialize", "seconds"],
      ["gather-dep", "other", "seconds"],
      ["execute", "span-a", "check", "memory-read", "count"],
      ["execute", "span-a", "check", "memory-read", "bytes"],
      ["execute", "span-a", "check", "thread-noncpu", "seconds"],
      ["execute", "span-a", "check", "executor", "seconds"],
      ["execute", "span-a", "check", "other", "seconds"],
    ]) {
      assert.ok(keysB.includes(JSON.stringify(key)), `b digests ${JSON.stringify(key)}: ${keysB.join(" ")}`);
    }
    assert.equal(fetched.find(([key]) => JSON.stringify(key) === '["execute","span-a","check","memory-read","count"]')![1], 2);
    const served = await a.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.equal(digest(served, { context: "get-data", activity: "memory-read", unit: "bytes" }), 16 * BLOCK);
    assert.ok(digest(served, { context: "get-data", activity: "serialize", unit: "seconds" })! >= 0);
    assert.ok(digest(served, { context: "get-data", activity: "network", unit: "seconds" })! > 0);
    for (const record of served) assert.ok(record.value >= 0 && Number.isFinite(record.value), JSON.stringify(record));
  });

  test("a big plain result reaches the worker's own tasks and client.run functions as plain memory, kept in shared memory between", async () => {
    const worker = await scheduler.spawn({ nthreads: 1 });
    defineAll(worker);
    worker.send(task("plain-y", call("ramp", lit(BLOCK), lit(1), lit(false))));
    await worker.next("task-finished", (m) => m.key === "plain-y");
    worker.send(task("local-z", call("describeArrays", ref("plain-y"), ref("plain-y")), [{ key: "plain-y", nbytes: 8 * BLOCK, whoHas: [worker.address] }]));
    await worker.next("task-finished", (m) => m.key === "local-z");
    const { values } = await worker.gather(["local-z", "plain-y"]);
    // The task sees what structured clone would have given it: plain memory of its own.
    const plain = { type: "Float64Array", shared: false, length: BLOCK, first: 1, last: BLOCK };
    assert.deepEqual(values["local-z"], [plain, plain]);
    const y = values["plain-y"] as Float64Array;
    assert.ok(y.buffer instanceof ArrayBuffer && y[BLOCK - 1] === BLOCK, "the client gets plain memory");
    // Kept in a stand-in (its thread copied it there), but a client.run function sees plain memory.
    const held = await worker.run<[boolean, string, number]>(
      `(worker) => { const y = worker.data.get("plain-y"); return [y.buffer instanceof SharedArrayBuffer, y.constructor.name, y[${BLOCK - 1}]]; }`,
    );
    assert.deepEqual(held, [false, "Float64Array", BLOCK]);
  });

  test("spills least recently used results past 60 % of the memory limit, reads them back, removes the files on close", async () => {
    const worker = await scheduler.spawn({ nthreads: 1, memoryLimit: 40 * MB, memoryThresholds: { spill: false, pause: false } });
    defineAll(worker);
    const blocks = ["b-0", "b-1", "b-2", "b-3", "b-4"];
    worker.send(...blocks.map((key, i) => task(key, call("ramp", lit(BLOCK), lit(i), lit(true)), [], i)));
    await Promise.all(blocks.map((key) => worker.next("task-finished", (m) => m.key === key)));
    const layout = await worker.run<{ memory: string[]; disk: string[]; managed: number }>(
      "(worker) => ({ memory: worker.data.inMemory, disk: worker.data.onDisk, managed: worker.memory.managed })",
    );
    // 24 MB target: three 8 MB blocks stay, the two oldest went to disk.
    assert.deepEqual(layout.disk, ["b-0", "b-1"]);
    assert.deepEqual(layout.memory, ["b-2", "b-3", "b-4"]);
    assert.equal(layout.managed, 24 * MB);
    const files = readdirSync(worker.config.localDirectory);
    assert.equal(files.length, 2, `spill files: ${files.join(", ")}`);

    // A task reads spilled inputs back transparently.
    const expected = blocks.reduce((sum, _, i) => sum + BLOCK * i + (BLOCK * (BLOCK - 1)) / 2, 0);
    worker.send(
      task(
        "total-all",
        call("total", ...blocks.map(ref)),
        blocks.map((key) => ({ key, nbytes: 8 * BLOCK, whoHas: [], local: true })),
      ),
    );
    const summed = await worker.next("task-finished", (m) => m.key === "total-all");
    const reply = await worker.gather(["total-all", "b-0"]);
    assert.equal(reply.values["total-all"], expected);
    const b0 = reply.values["b-0"] as Float64Array;
    assert.ok(b0 instanceof Float64Array && b0[BLOCK - 1] === BLOCK - 1, "a spilled value comes back equal");
    assert.ok(b0.buffer instanceof SharedArrayBuffer, "and in shared memory, as it was made");
    assert.deepEqual(
      summed.startstops.map((s) => s.action),
      ["disk-read", "compute"],
    );
    const digests = await worker.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.ok(digest(digests, { context: "execute", prefix: "total", activity: "disk-read", unit: "count" })! >= 2);
    assert.ok(digest(digests, { context: "execute", prefix: "b", activity: "disk-write", unit: "count" })! >= 2);
    assert.ok(digest(digests, { context: "execute", prefix: "b", activity: "disk-write", unit: "bytes" })! >= 16 * MB);
    const heartbeat = await worker.next("heartbeat", (m) => m.metrics.spilledBytes.disk > 0);
    assert.ok(heartbeat.metrics.spilledBytes.memory >= 16 * MB);

    // A result larger than the target alone goes straight to disk.
    worker.send(task("huge", call("ramp", lit(4 * BLOCK), lit(0), lit(false))));
    const huge = await worker.next("task-finished", (m) => m.key === "huge");
    assert.deepEqual(
      huge.startstops.map((s) => s.action),
      ["compute", "disk-write"],
    );

    worker.send({ op: "close", reason: "test over" });
    const exit = await worker.exited;
    assert.equal(exit.code, 0);
    assert.equal(existsSync(worker.config.localDirectory), false, "spill folder removed");
    assert.equal(existsSync(worker.config.listenPath), false, "socket file removed");
  });

  test("the memory monitor spills when process memory passes 70 % of the limit", async () => {
    const worker = await scheduler.spawn({ nthreads: 1, memoryLimit: 250 * MB, memoryThresholds: { target: false, pause: false } });
    defineAll(worker);
    const keys = Array.from({ length: 16 }, (_, i) => `m-${i}`);
    worker.send(...keys.map((key, i) => task(key, call("ramp", lit(BLOCK), lit(i), lit(false)), [], i)));
    await Promise.all(keys.map((key) => worker.next("task-finished", (m) => m.key === key)));
    await until(() => existsSync(worker.config.localDirectory) && readdirSync(worker.config.localDirectory).length > 0, "spill files");
    const digests = await worker.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.ok(digest(digests, { context: "memory-monitor", activity: "disk-write", unit: "count" })! >= 1);
    assert.ok(digest(digests, { context: "memory-monitor", activity: "serialize", unit: "seconds" })! >= 0);
    const disk = await worker.run<string[]>("(worker) => worker.data.onDisk");
    assert.ok(disk.includes("m-0"), "the least recently used goes first");
  });

  test("pauses at 80 % of the memory limit: no new task starts until memory falls again", async () => {
    const worker = await scheduler.spawn({ nthreads: 1, memoryLimit: 250 * MB, memoryThresholds: { target: false, spill: false } });
    defineAll(worker);
    // Unmanaged memory on the worker's main thread: 160 MB it cannot spill.
    await worker.run("(worker) => { globalThis.ballast = new Float64Array(20e6).fill(1); return worker.memory.process }");
    await worker.next("worker-status-change", (m) => m.status === "paused");
    worker.send(task("waits", call("inc", lit(1))));
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(worker.all("task-finished").length, 0, "no task started while paused");
    const counts = await worker.run<Record<string, number>>("(worker) => worker.tasks");
    assert.deepEqual(counts, { ready: 1 });
    await worker.run("(worker) => { delete globalThis.ballast; return true }");
    await worker.next("worker-status-change", (m) => m.status === "running");
    await worker.next("task-finished", (m) => m.key === "waits");
  });

  test("a result is in the worker's memory once, and a spilled one gives its memory back at once", async () => {
    // 200 MB limit, target 120 MB: one 64 MB result stays in memory, the second spills the first.
    const worker = await scheduler.spawn({ nthreads: 1, memoryLimit: 200 * MB, memoryThresholds: { spill: false, pause: false } });
    defineAll(worker);
    const resident = (): Promise<number> => worker.run<number>("(worker) => worker.memory.process");
    const before = await resident();
    const values = (64 * MB) / 8;
    worker.send(task("noise-0", call("noise", lit(values), lit(0))));
    await worker.next("task-finished", (m) => m.key === "noise-0");
    // Copied off its thread, the result would be in memory twice: the task thread's, left for a
    // collection that an idle thread does not run, and the main thread's.
    const oneHeld = (await resident()) - before;
    assert.ok(oneHeld < 96 * MB, `one 64 MB result takes ${(oneHeld / MB).toFixed(0)} MB of the worker's memory`);
    worker.send(task("noise-1", call("noise", lit(values), lit(1))));
    await worker.next("task-finished", (m) => m.key === "noise-1");
    assert.deepEqual(await worker.run("(worker) => [worker.data.inMemory, worker.data.onDisk]"), [["noise-1"], ["noise-0"]]);
    // The spilled one's memory went back when it was written, not at a later garbage collection.
    const twoHeld = (await resident()) - before;
    assert.ok(twoHeld < 96 * MB, `one 64 MB result in memory, one on disk take ${(twoHeld / MB).toFixed(0)} MB of the worker's memory`);
    const reply = await worker.gather(["noise-0", "noise-1"]);
    for (const [i, key] of ["noise-0", "noise-1"].entries()) {
      const value = reply.values[key] as Float64Array;
      assert.ok(value.length === values && value[0] === i && value[values - 1] === i, `${key} comes back whole`);
    }
  });

  for (const how of ["config", "environment"] as const) {
    test(`a clock 5 s ahead (${how}) still reports times on the scheduler's clock`, async () => {
      const worker = await scheduler.spawn(how === "config" ? { clockOffset: 5 } : {}, how === "config" ? {} : { TSDASK_CLOCK_OFFSET: "5" });
      const register = await worker.next("register");
      assert.ok(Math.abs(register.now - worker.receivedAt[0] - 5) < 0.5, "its own clock is 5 s ahead");
      // Heartbeat round trips give the estimate its best sample (the shortest of the last eight).
      await until(() => worker.all("heartbeat").length >= 8, "heartbeats");
      const estimate = await worker.run<number>("(worker) => worker.clockOffset");
      assert.ok(Math.abs(estimate - 5) < CLOCK_SLACK, `estimated offset ${estimate}`);
      assert.equal(await worker.run<number>("(worker) => worker.simulatedClockOffset"), 5);
      const lastBeat = worker.all("heartbeat").at(-1)!;
      assert.ok(Math.abs(lastBeat.clockOffset! - 5) < CLOCK_SLACK);
      defineAll(worker);
      const sent = now();
      worker.send(task("timed", call("sleep", lit(50))));
      const done = await worker.next("task-finished", (m) => m.key === "timed");
      const received = now();
      const compute = phase(done.startstops, "compute")!;
      assert.ok(compute.start >= sent - CLOCK_SLACK && compute.stop <= received + CLOCK_SLACK, `compute ${compute.start - sent}…${compute.stop - received} s around the scheduler's window`);
      assert.ok(compute.stop - compute.start >= 0.045);
    });
  }

  test("heartbeats carry everything digested since the previous one, so nothing is lost or counted twice", async () => {
    const worker = await scheduler.spawn({ nthreads: 2 });
    defineAll(worker);
    const keys = Array.from({ length: 40 }, (_, i) => `d-${i}`);
    for (const key of keys) {
      worker.send(task(key, call("spin", lit(3))));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(keys.map((key) => worker.next("task-finished", (m) => m.key === key)));
    const total = await worker.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    const beats = worker.all("heartbeat").length;
    await until(() => worker.all("heartbeat").length > beats + 1, "two more heartbeats");
    const reported = worker.all("heartbeat").flatMap((beat) => beat.metrics.digests);
    const match = { context: "execute", prefix: "d", activity: "thread-cpu", unit: "seconds" } as const;
    assert.ok(Math.abs(digest(reported, match)! - digest(total, match)!) < 1e-9);
    assert.ok(digest(total, match)! > 0.02, "three milliseconds of CPU per task, 40 tasks");
    const other = { context: "execute", prefix: "d", activity: "other", unit: "seconds" } as const;
    assert.ok(Math.abs(digest(reported, other)! - digest(total, other)!) < 1e-9);
  });

  test("a peer killed during a fetch: missing-data for its keys, the waiting task dropped, no hang; recovered from another holder", async () => {
    const a = await scheduler.spawn({ nthreads: 1 });
    const b = await scheduler.spawn({ nthreads: 1 });
    const c = await scheduler.spawn({ nthreads: 1 });
    for (const worker of [a, b, c]) defineAll(worker);
    a.send(task("big-v", call("ramp", lit(BLOCK), lit(0), lit(false))));
    c.send(task("big-v", call("ramp", lit(BLOCK), lit(0), lit(false))));
    await a.next("task-finished", (m) => m.key === "big-v");
    await c.next("task-finished", (m) => m.key === "big-v");
    // Stopped, a cannot answer: b's request stays in flight until a is killed.
    a.child.kill("SIGSTOP");
    b.send(task("use-w", call("describeArrays", ref("big-v")), [{ key: "big-v", nbytes: 8 * BLOCK, whoHas: [a.address] }]));
    await until(() => b.all("heartbeat").some((beat) => beat.metrics.taskCounts.flight === 1), "the fetch to start");
    a.child.kill("SIGKILL");
    const missing = await b.next("missing-data", (m) => m.key === "big-v");
    assert.equal(missing.errantWorker, a.address);
    assert.deepEqual(await b.run<Record<string, number>>("(worker) => worker.tasks"), {}, "use-w was dropped with its input");
    // Sent again with the surviving holder, as the scheduler would.
    b.send(task("use-w", call("describeArrays", ref("big-v")), [{ key: "big-v", nbytes: 8 * BLOCK, whoHas: [a.address, c.address] }]));
    const done = await b.next("task-finished", (m) => m.key === "use-w");
    assert.equal(phase(done.startstops, "transfer")!.source, c.address);
    const digests = await b.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.ok(digest(digests, { context: "gather-dep", activity: "failed", unit: "seconds" })! > 0);
  });

  test("a peer that does not hold a key: missing-data names it", async () => {
    const a = await scheduler.spawn({ nthreads: 1 });
    const b = await scheduler.spawn({ nthreads: 1 });
    defineAll(b);
    b.send(task("needs-ghost", call("inc", ref("ghost")), [{ key: "ghost", nbytes: 8, whoHas: [a.address] }]));
    const missing = await b.next("missing-data", (m) => m.key === "ghost");
    assert.equal(missing.errantWorker, a.address);
    const digests = await b.run<MetricRecord[]>("(worker) => worker.digestsTotal");
    assert.ok(digest(digests, { context: "gather-dep", activity: "missing", unit: "seconds" })! > 0);
  });

  // Port of distributed/tests/test_worker_metrics.py::test_cancelled_flight
  test("test_worker_metrics.py::test_cancelled_flight: a fetch whose task was released on the way is one lump under cancelled", async () => {
    const a = await scheduler.spawn({ nthreads: 1 });
    const b = await scheduler.spawn({ nthreads: 1 });
    defineAll(a);
    defineAll(b);
    a.send(task("x", call("ramp", lit(BLOCK), lit(0), lit(false))));
    await a.next("task-finished", (m) => m.key === "x");
    // Released in the same batch: the fetch of x has begun and is cancelled in flight (Dask blocks a's get_data to get there).
    b.send(task("y", call("total", ref("x")), [{ key: "x", nbytes: 8 * BLOCK, whoHas: [a.address] }]), { op: "free-keys", keys: ["y"] });
    let digests: [unknown[], number][] = [];
    await waitFor("b's gather-dep digests", async () => (digests = await b.run<[unknown[], number][]>("(worker) => worker.digestsTotalTuples")).length > 0);
    assert.deepEqual(digests.map(([key]) => key), [["gather-dep", "cancelled", "seconds"]]);
  });

  // Port of distributed/tests/test_worker_metrics.py::test_gather_dep_no_task
  test("test_worker_metrics.py::test_gather_dep_no_task: a peer that answers it has none of the keys: one lump under missing", async () => {
    const w1 = await scheduler.spawn({ nthreads: 1 });
    const w3 = await scheduler.spawn({ nthreads: 1 });
    defineAll(w3);
    // Dask moves x away from w1 while w3's fetch is blocked; here w1 never had it.
    w3.send(task("y", call("inc", ref("x")), [{ key: "x", nbytes: 8, whoHas: [w1.address] }]));
    await w3.next("missing-data", (m) => m.key === "x");
    const digests = await w3.run<[unknown[], number][]>("(worker) => worker.digestsTotalTuples");
    assert.deepEqual(digests.map(([key]) => key), [["gather-dep", "missing", "seconds"]]);
  });

  // Port of distributed/tests/test_worker_metrics.py::test_gather_dep_network_error
  test("test_worker_metrics.py::test_gather_dep_network_error: a peer that is gone: one lump under failed", async () => {
    const a = await scheduler.spawn({ nthreads: 1 });
    const b = await scheduler.spawn({ nthreads: 1 });
    defineAll(a);
    defineAll(b);
    a.send(task("x", call("inc", lit(1))));
    await a.next("task-finished", (m) => m.key === "x");
    // Dask closes a while b's fetch is blocked; here a is gone before b asks.
    a.child.kill("SIGKILL");
    await a.exited;
    b.send(task("y", call("inc", ref("x")), [{ key: "x", nbytes: 8, whoHas: [a.address] }]));
    await b.next("missing-data", (m) => m.key === "x");
    const digests = await b.run<[unknown[], number][]>("(worker) => worker.digestsTotalTuples");
    assert.deepEqual(digests.filter(([key]) => key[0] === "gather-dep").map(([key]) => key), [["gather-dep", "failed", "seconds"]]);
  });

  test("exits when the scheduler goes away, removing its folder and leaving no process behind", async () => {
    const worker = await scheduler.spawn({ nthreads: 2 });
    defineAll(worker);
    worker.send(task("spin-forever", call("spin", lit(60_000))));
    await until(() => worker.all("heartbeat").some((beat) => beat.metrics.taskCounts.executing === 1), "the task to start");
    worker.connection!.destroy();
    const exit = await worker.exited;
    assert.equal(exit.code, 0);
    assert.equal(FakeScheduler.alive(worker.pid), false);
    assert.equal(existsSync(worker.config.localDirectory), false);
    assert.equal(existsSync(worker.config.listenPath), false);
  });

  test("exits when its parent's IPC channel closes, or on SIGTERM", async () => {
    const orphan = await scheduler.spawn();
    orphan.child.disconnect();
    assert.equal((await orphan.exited).code, 0);
    assert.equal(existsSync(orphan.config.localDirectory), false);
    const terminated = await scheduler.spawn();
    terminated.child.kill("SIGTERM");
    assert.equal((await terminated.exited).code, 0);
    assert.equal(existsSync(terminated.config.localDirectory), false);
  });

  test("a bad start config is refused with an error naming the field", async () => {
    await assert.rejects(scheduler.spawn({ nthreads: 0 }), /nthreads must be a whole number ≥ 1, got 0/);
    await assert.rejects(scheduler.spawn({ memoryThresholds: { pause: 80 } }), /threshold pause must be a fraction/);
    await assert.rejects(scheduler.spawn({}, { TSDASK_CLOCK_OFFSET: "soon" }), /TSDASK_CLOCK_OFFSET must be a number of seconds, got "soon"/);
  });
});
