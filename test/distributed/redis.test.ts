// A Redis cluster end to end through the Client: real redis-server, real `tsdask worker` processes.
// Results equal the local schedulers' (raw graphs, delayed values, arrays, Futures); the
// diagnostics a user reads (task stream with the read from "redis", metrics, callbacks, the
// workers' transfer logs) land on the client's clock even from a worker whose clock is off;
// functions run only as the worker allows; values larger than a part travel in parts; nothing is
// left in Redis afterwards.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import type { MetricRecord } from "../../src/protocol/records";
import { CacheProfiler, Client, Profiler, ProgressBar, TaskTransferError, delayed, get, nbytes, span, withCallbacks } from "../../src";
import { parseWorkerArgs } from "../../src/cli/worker";
import * as da from "../../src/kernel/collections/array";
import { now } from "../../src/kernel/clock";
import { decodeOutcome, encodeOutcome, packMetrics, unpackMetrics } from "../../src/kernel/distributed/redis/jobs";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { INLINE_AFTER_TINY, INLINE_TASK_SECONDS, InlinePolicy } from "../../src/kernel/distributed/redis/inline";
import { closureOf } from "../fixtures/cluster-client-tasks";
import { ramp, total } from "../fixtures/cluster-tasks";
import { meteredAsyncInc, meteredInc } from "../fixtures/metered-tasks";
import { describeWorker } from "../fixtures/redis-tasks";
import { clusterFeed } from "../../src/kernel/distributed/dashboard";
import { add, burn, fill, inc, mul, pair, sha1, sleep, throwMine } from "../fixtures/tasks";
import { type RedisServer, expectEmpty, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

describe("tsdask worker: command line", () => {
  test("options are read as a user types them", () => {
    assert.deepEqual(parseWorkerArgs(["redis://h:1", "--name", "w1", "--nthreads", "2", "--memory-limit", "4 GiB", "--allow-source"]), {
      url: "redis://h:1",
      name: "w1",
      nthreads: 2,
      memoryLimit: 4 * 2 ** 30,
      allowSource: true,
      tlsCa: undefined,
      lockDuration: undefined,
      stalledInterval: undefined,
      allowedFailures: undefined,
      partSize: undefined,
      holdAbove: undefined,
      peerTimeout: undefined,
      handoffTimeout: undefined,
      deathTimeout: undefined,
    });
    assert.equal(parseWorkerArgs(["redis://h:1", "--memory-limit", "500MB"]).memoryLimit, 500e6);
    assert.equal(parseWorkerArgs(["redis://h:1", "--peer-timeout", "2.5"]).peerTimeout, 2.5);
    assert.equal(parseWorkerArgs(["redis://h:1", "--handoff-timeout", "5"]).handoffTimeout, 5);
    assert.equal(parseWorkerArgs(["redis://h:1", "--death-timeout", "60"]).deathTimeout, 60);
    assert.equal(parseWorkerArgs(["redis://h:1", "--allowed-failures", "0"]).allowedFailures, 0);
  });

  test("mistakes are usage errors naming the option", () => {
    assert.throws(() => parseWorkerArgs([]), /one Redis address/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--nthreads", "two"]), /--nthreads needs a positive number, got "two"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--nthreads", "1.5"]), /--nthreads needs a whole number/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--memory-limit", "lots"]), /--memory-limit needs a size/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--allowed-failures", "two"]), /--allowed-failures needs a whole number of 0 or more, got "two"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--allowed-failures=-1"]), /--allowed-failures needs a whole number of 0 or more, got "-1"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--colour"]), /colour/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--peer-timeout", "soon"]), /--peer-timeout needs a positive number, got "soon"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--handoff-timeout", "0"]), /--handoff-timeout needs a positive number, got "0"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--death-timeout", "never"]), /--death-timeout needs a positive number, got "never"/);
  });
});

describe("a Redis worker's outcome", () => {
  test("metrics travel packed and come back as the records they were, with or without span and prefix", () => {
    const records: MetricRecord[] = [
      { context: "gather-dep", activity: "network", unit: "seconds", value: 0.25 },
      { context: "execute", span: "s-1", prefix: "inc", activity: "thread-cpu", unit: "seconds", value: 1e-6 },
      { context: "execute", span: "s-1", prefix: "inc", activity: "rows", unit: "count", value: 3 },
      { context: "execute", span: "s-2", prefix: "inc", activity: "thread-cpu", unit: "seconds", value: 0 },
      { context: "gather-dep", activity: "deserialize", unit: "seconds", value: 2 },
    ];
    const packed = packMetrics(records);
    // Three runs, each naming its context, span and prefix once.
    assert.equal(packed.filter((item) => item === "execute" || item === "gather-dep").length, 4);
    assert.deepEqual(unpackMetrics(packed), records);
    // As the outcome stream's entry: how the value was stored ("-": no value), and the outcome.
    const outcome = encodeOutcome({ jobId: "j1", key: "k", worker: "w", status: "erred", error: { name: "Error", message: "boom" } as never, thread: 0, startstops: [], metrics: records });
    const { entry, publication } = decodeOutcome(Buffer.from("-"), outcome);
    assert.ok(entry.status === "erred");
    assert.equal(publication, "none");
    assert.deepEqual(entry.metrics, records);
  });
});

describe("which tasks a Redis worker runs on its own thread", () => {
  test("a prefix qualifies after its last few tasks were all tiny; one longer task starts the count again", () => {
    const policy = new InlinePolicy();
    const tiny = INLINE_TASK_SECONDS / 10;
    for (let i = 0; i < INLINE_AFTER_TINY; i++) {
      assert.equal(policy.wants("inc"), false, `after ${i} tiny task(s)`);
      policy.ran("inc", tiny);
    }
    assert.equal(policy.wants("inc"), true);
    assert.equal(policy.wants("other"), false, "prefixes are learnt apart");
    policy.ran("inc", INLINE_TASK_SECONDS);
    assert.equal(policy.wants("inc"), false, "a task that was not tiny sends its prefix back to the threads");
    for (let i = 0; i < INLINE_AFTER_TINY; i++) policy.ran("inc", tiny);
    assert.equal(policy.wants("inc"), true);
  });
});

describe("a Redis cluster through the Client", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  const workers: WorkerProcess[] = [];
  const clientId = (of: Client): string => (of.scheduler.transport as RedisTransport).clientId;

  before(async () => {
    server = await startRedisServer({ password: "pw" });
    redis = new Redis(server.url);
    // One worker's clock is 1000 s ahead: its reports must still land on the client's clock.
    // Small parts: results larger than 64 KiB are cut into parts by the workers too.
    workers.push(await startWorker(server.url, { name: "w1", nthreads: 2, extraArgs: ["--memory-limit", "1 GiB", "--part-size", "64 KiB"] }));
    workers.push(await startWorker(server.url, { name: "w2", nthreads: 1, extraArgs: ["--part-size", "64 KiB"], env: { TSDASK_CLOCK_OFFSET: "1000" } }));
    // Every result through Redis, whatever its size: this file's subject is that path (results
    // kept by their workers and fetched from them: redis-peers-data.test.ts).
    client = await Client.connect(server.url, { name: "tests", holdAbove: 2 ** 40 });
  });
  after(async () => {
    await client?.close();
    await Promise.all(workers.map((worker) => worker.stop()));
    await expectEmpty(redis);
    redis.disconnect();
    await server.stop();
  });

  test("connect: client.workers lists the Redis workers with their threads and memory limit", () => {
    assert.deepEqual([...client.workers.keys()].sort(), ["w1", "w2"]);
    const w1 = client.workers.get("w1")!;
    assert.equal(w1.nthreads, 2);
    assert.equal(w1.memoryLimit, 2 ** 30);
    assert.equal(client.workers.get("w2")!.nthreads, 1);
    assert.match(String(client), /^Client\('tests', workers=2, threads=3, memory=/);
    assert.equal(client.cluster.description, `RedisCluster 'tests' at redis://127.0.0.1:${server.port}`);
    assert.doesNotMatch(client.cluster.description, /pw/, "no password in what is shown");
  });

  test("results equal the local schedulers': raw graphs, tuple keys, delayed values, arrays; each task counts once", async () => {
    const before = client.scheduler.taskStream.index;
    const block = new Float64Array(100_000).map((_, i) => i / 7);
    const graph = {
      a: 1,
      b: [inc, "a"],
      c: [add, "a", "b"],
      d: [mul, "c", 10],
      text: [sha1, "hello"],
      ints: [fill, new Int32Array(1000), 7],
      block,
      both: [pair, "d", ["text", "ints"]],
      slow: [sleep, 30],
      burn: [burn, 100_000],
    };
    const keys = [["both", "slow"], "burn", "block", "c"];
    const expected = await get(graph, keys, { scheduler: "sync" });
    // The open Client is the default scheduler.
    const actual = await get(graph, keys);
    assert.deepEqual(actual, expected);
    assert.ok((actual as unknown[])[2] instanceof Float64Array);
    const records = client.scheduler.getTaskStream({ startIndex: before });
    assert.equal(records.length, Object.keys(graph).length, "one record per task: none ran twice, none was reported twice");
    assert.equal(new Set(records.map((record) => record.key)).size, records.length);

    const tupleGraph = new Map<unknown, unknown>([
      [["x", 0], 2],
      [["x", 1], [inc, ["x", 0]]],
      [["y", 0], [add, ["x", 0], ["x", 1]]],
    ]);
    assert.deepEqual(await get(tupleGraph as never, [["y", 0]]), [5]);

    const double = delayed(mul, { name: "double" });
    const result = delayed(add)(double(delayed(inc)(1), 2), 10);
    assert.equal(await result.compute(), 14);
    const future = client.compute(result);
    assert.equal(await future.result(), 14);
    future.release();

    const a = da.random.random([400, 300], { chunks: [100, 100], seed: 7 });
    const b = a.dot(a.T).sum({ axis: 0 }).add(1);
    const threads = await b.compute({ scheduler: "threads" });
    const onRedis = await b.compute();
    assert.deepEqual(onRedis.shape, threads.shape);
    assert.ok(Buffer.from(onRedis.data.buffer).equals(Buffer.from(threads.data.buffer)), "bit for bit the threads scheduler's values");
  });

  test("Futures: submit, map, gather, Futures as arguments; results stay in Redis while held", async () => {
    const a = client.submit(inc, 1);
    const b = client.submit(add, a, 10);
    const parts = [client.submit(ramp, 4, 1, false), client.submit(ramp, 5, 1, false)];
    const sum = client.submit(total, ...parts);
    const mapped = client.map(inc, [10, 20, 30]);
    assert.equal(await b.result(), 12);
    assert.equal(a.status, "finished");
    assert.equal(await sum.result(), 1 + 2 + 3 + 4 + 1 + 2 + 3 + 4 + 5);
    assert.deepEqual(await client.gather(mapped), [11, 21, 31]);
    assert.deepEqual(await client.gather({ first: a, rest: [b, 7] }), { first: 2, rest: [12, 7] });
    const stored = async (): Promise<number> => (await redis.keys(`tsdask:${clientId(client)}:v:*`)).length;
    assert.ok((await stored()) >= 4, "held results are in Redis");
    for (const future of [a, b, sum, ...parts, ...mapped]) future.release();
    await waitFor("released results to leave Redis", async () => (await stored()) === 0, 5).catch(async (error: Error) => {
      throw new Error(`${error.message}; left: ${(await redis.keys(`tsdask:${clientId(client)}:v:*`)).join(", ")}`);
    });
  });

  test("keys released and submitted again at once run again (their new jobs are not dropped with the old values)", { timeout: 60_000 }, async () => {
    const keys = ["again-0", "again-1", "again-2"];
    for (let round = 1; round <= 3; round++) {
      const futures = client.map(inc, [round, round + 10, round + 20], { key: keys });
      assert.deepEqual(await client.gather(futures), [round + 1, round + 11, round + 21], `round ${round}`);
      // Released and submitted again within one turn of the event loop: the scheduler forgets the
      // old values and queues the new tasks in one flush.
      for (const future of futures) future.release();
    }
  });

  // Port of distributed/tests/test_client.py::test_run (on Redis workers)
  test("client.run(fn, ...args, { workers }) on Redis workers; worker restrictions are refused (workers pull from one queue)", async () => {
    assert.deepEqual(await client.run(inc, 1), { w1: 2, w2: 2 });
    assert.deepEqual(await client.run(inc, 1, { workers: ["w2"] }), { w2: 2 });
    assert.deepEqual(await client.run(inc, 1, { workers: [] }), {});
    assert.throws(() => client.submit(inc, 1, { workers: "w1" }), /Worker restrictions .* Redis workers take any task from a shared queue/);
  });

  test("task errors come back as the task's own error", async () => {
    await assert.rejects(get({ x: [throwMine, "boom"] }, "x"), (error: Error) => error.name === "MyError" && error.message === "boom" && (error as Error & { code: string }).code === "E_MINE");
    const failed = client.submit(throwMine, "again");
    await assert.rejects(failed.result(), /again/);
    assert.equal(failed.status, "error");
    assert.equal(await get({ y: [inc, 1] }, "y"), 2, "the cluster is still usable");
  });

  test("diagnostics: the task stream (a read from redis, then compute) and the metrics, on the client's clock; callbacks", async () => {
    const before = client.scheduler.taskStream.index;
    const start = now();
    // Made by a task (the local schedulers' callbacks see no literal data key either).
    const graph: Record<string, unknown> = { data: [ramp, 200_000, 0.5, false] };
    for (let i = 0; i < 6; i++) graph[`total-${i}`] = [total, "data"];
    const out = new PassThrough();
    let text = "";
    out.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const profiler = new Profiler();
    const cache = new CacheProfiler({ metric: nbytes });
    const totals = Object.keys(graph).filter((key) => key.startsWith("total-"));
    await withCallbacks([new ProgressBar({ out, dt: 0.05 }), profiler, cache], () => get(graph, totals));
    const stop = now();
    assert.match(text, /\[#{40}\] \| 100% Completed \|/);
    assert.deepEqual(profiler.results.map((record) => record.key).sort(), ["data", ...totals].sort());
    for (const record of profiler.results) {
      assert.match(String(record.workerId), /^w[12]#\d+$/);
      assert.ok(record.startTime >= start - 0.05 && record.endTime <= stop + 0.05, `${record.key}: its compute phase on the client's clock`);
    }
    const measured = cache.results.find((record) => record.key === "data")?.metric;
    assert.ok(measured !== undefined && measured >= 1_600_000 && measured < 1_601_000, `the data's size, measured where it was made: ${measured}`);

    const records = client.scheduler.getTaskStream({ startIndex: before }).filter((record) => record.prefix === "total");
    assert.equal(records.length, 6);
    assert.deepEqual(new Set(records.map((record) => record.worker)), new Set(["w1", "w2"]), "both workers took tasks");
    for (const record of records) {
      const [transfer, compute] = record.startstops;
      assert.equal(transfer.action, "transfer");
      assert.equal(transfer.source, "redis");
      assert.equal(compute.action, "compute");
      for (const time of [transfer.start, transfer.stop, compute.start, compute.stop]) {
        assert.ok(time >= start - 0.05 && time <= stop + 0.05, `${record.worker}: ${time} is outside [${start}, ${stop}]`);
      }
      assert.ok(transfer.start <= transfer.stop && transfer.stop <= compute.start + 0.01 && compute.start <= compute.stop);
      assert.equal(record.type, "number");
    }
    const metrics = client.scheduler.cumulativeWorkerMetrics();
    const cpu = metrics.find((metric) => metric.context === "execute" && metric.prefix === "total" && metric.activity === "thread-cpu");
    assert.ok(cpu !== undefined && cpu.unit === "seconds" && cpu.value > 0, "execute metrics per prefix");
    assert.ok(metrics.some((metric) => metric.context === "gather-dep" && metric.activity === "network" && metric.value > 0), "the reads from Redis as gather-dep");

    // Each worker's own logs, through client.run (a module export: no --allow-source needed).
    await waitFor("heartbeats with the clock offsets", () => Math.abs((client.scheduler.workers.get("w2")?.clockOffset ?? 0) - 1000) < 0.5, 10);
    const seen = await client.run(describeWorker);
    assert.deepEqual(Object.keys(seen).sort(), ["w1", "w2"]);
    const reads = Object.values(seen).flatMap((worker) => worker.incoming.filter((entry) => entry.keys.includes("data")));
    assert.ok(reads.length >= 6, "every read of the data is in a worker's incoming transfer log");
    assert.ok(reads.every((entry) => entry.who === "redis" && entry.total >= 1_600_000));
    assert.ok(Object.values(seen).every((worker) => worker.outgoing > 0), "results written to Redis are in the outgoing logs");
    assert.ok(Object.values(seen).some((worker) => worker.executeCpuSeconds > 0));
    assert.ok(Math.abs(seen.w2.clockOffset - 1000) < 0.5, `w2's offset against Redis's clock: ${seen.w2.clockOffset}`);
    assert.ok(Math.abs(seen.w1.clockOffset) < 0.5);
  });

  test("a chain of tiny tasks runs on the workers' own threads once they learnt the prefix, measured as on a task thread", async () => {
    const before = client.scheduler.taskStream.index;
    const graph: Record<string, unknown> = { "step-0": 0 };
    for (let i = 1; i <= 40; i++) graph[`step-${i}`] = [inc, `step-${i - 1}`];
    assert.equal(await get(graph, "step-40", { scheduler: client }), 40);
    // step-0 is data the client put in Redis: the 40 others are the chain's tasks.
    const records = client.scheduler.getTaskStream({ startIndex: before }).filter((record) => record.prefix === "step" && record.key !== "step-0");
    assert.equal(records.length, 40);
    const inline = records.filter((record) => record.thread === 0);
    // Each worker runs a prefix's first tasks on its task threads (numbered from 1) to learn it.
    assert.ok(records.some((record) => record.thread >= 1), "the first steps ran on task threads");
    assert.ok(inline.length >= 20, `most steps ran on a worker's own thread (thread 0): ${inline.length} of 40`);
    for (const record of inline) {
      const compute = record.startstops.find((phase) => phase.action === "compute");
      assert.ok(compute !== undefined && compute.start <= compute.stop, `${record.key}: a compute phase`);
      assert.equal(record.type, "number");
    }
    const metrics = client.scheduler.cumulativeWorkerMetrics();
    assert.ok(metrics.some((metric) => metric.context === "execute" && metric.prefix === "step" && metric.activity === "thread-cpu"), "their execute metrics");
  });

  test("a chain's outcome reads trim the outcome stream now and then, not with every read; once quiet, it is trimmed behind them", async () => {
    // A chain's task wakes the client's read once (its outcome): a trim with each read would be a
    // command of its own per step, on the path to the next task.
    const outcomes = `tsdask:${clientId(client)}:outcomes`;
    const monitor = await redis.monitor();
    let trims = 0;
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (source !== "lua" && args[0]?.toLowerCase() === "xtrim" && args[1] === outcomes) trims++;
    });
    try {
      const graph: Record<string, unknown> = { "trim-0": 0 };
      for (let i = 1; i <= 60; i++) graph[`trim-${i}`] = [inc, `trim-${i - 1}`];
      assert.equal(await get(graph, "trim-60", { scheduler: client }), 60);
      assert.ok(trims <= 2, `the outcome stream was trimmed ${trims} times during a 60-task chain`);
      await waitFor("the quiet stream to be trimmed behind the reads", async () => (await redis.xlen(outcomes)) === 0, 15);
    } finally {
      monitor.disconnect();
    }
  });

  test("contextMeter in tiny tasks run on a worker's own thread: every digest counted once, before an await and after it", async () => {
    const before = client.scheduler.taskStream.index;
    const counted = (activity: string): number =>
      client.scheduler
        .cumulativeWorkerMetrics()
        .filter((metric) => metric.context === "execute" && metric.activity === activity && metric.unit === "count")
        .reduce((sum, metric) => sum + metric.value, 0);
    // One chain after the other: a step runs inline only while it is its worker's only task.
    for (const [prefix, fn] of [["metered", meteredInc], ["awaiting", meteredAsyncInc]] as const) {
      const chain: Record<string, unknown> = { [`${prefix}-0`]: 0 };
      for (let i = 1; i <= 30; i++) chain[`${prefix}-${i}`] = [fn, `${prefix}-${i - 1}`];
      assert.equal(await get(chain, `${prefix}-30`, { scheduler: client }), 30);
    }
    const records = client.scheduler.getTaskStream({ startIndex: before }).filter((record) => record.prefix === "metered" || record.prefix === "awaiting");
    for (const prefix of ["metered", "awaiting"]) {
      assert.ok(records.filter((record) => record.prefix === prefix && record.thread === 0).length >= 10, `${prefix}: steps ran inline`);
    }
    assert.equal(counted("tiny step"), 30);
    assert.equal(counted("before await"), 30);
    assert.equal(counted("after await"), 30);
  });

  test("spans: the tasks of a span() and the metrics the Redis workers sent with them are counted in that span", async () => {
    let spanId = "";
    const result = await span("on redis", async (id) => {
      spanId = id;
      return get({ series: [ramp, 100_000, 1, false], summed: [total, "series"] }, "summed");
    });
    assert.equal(result, (100_000 * 100_001) / 2);
    const mine = (await client.spans()).find((record) => record.id === spanId);
    assert.ok(mine !== undefined, `span ${spanId} among the client's spans`);
    assert.deepEqual(mine.name, ["on redis"]);
    assert.ok(mine.done && mine.start > 0 && mine.stop >= mine.start);
    for (const prefix of ["series", "summed"]) {
      assert.ok(
        // A task of well under a millisecond may show no thread-cpu at the clock's resolution: its time is all there.
        mine.metrics.some((metric) => metric.context === "execute" && metric.prefix === prefix && ["thread-cpu", "thread-noncpu"].includes(metric.activity) && metric.value > 0),
        `${prefix}: its execute metrics in the span`,
      );
    }
  });

  // Port of distributed/tests/test_worker_metrics.py::test_send_metrics_to_scheduler and ::test_user_metrics_async (the sets, on Redis workers)
  test("test_worker_metrics.py::test_send_metrics_to_scheduler on Redis workers: Dask's execute set, serialize aside; an async task's has no thread-cpu or executor", async () => {
    await get({ "daskBlock-1": [ramp, 1000, 1, false], "daskTotal-1": [total, "daskBlock-1"], "daskAsync-1": [sleep, 50] }, ["daskTotal-1", "daskAsync-1"], { scheduler: client });
    const metrics = client.scheduler.cumulativeWorkerMetrics();
    const activitiesOf = (prefix: string): Set<string> =>
      new Set(metrics.filter((metric) => metric.context === "execute" && metric.prefix === prefix).map((metric) => `${metric.activity} ${metric.unit}`));
    // "serialize": a Redis worker encodes every result as it publishes it to Redis (README: where tsdask differs on purpose).
    const seconds = ["thread-cpu seconds", "thread-noncpu seconds", "executor seconds", "serialize seconds", "other seconds"];
    assert.deepEqual(activitiesOf("daskBlock"), new Set(seconds));
    assert.deepEqual(activitiesOf("daskTotal"), new Set([...seconds, "memory-read count", "memory-read bytes"]));
    assert.deepEqual(activitiesOf("daskAsync"), new Set(["thread-noncpu seconds", "serialize seconds", "other seconds"]));
    const read = metrics.find((metric) => metric.prefix === "daskTotal" && metric.activity === "memory-read" && metric.unit === "bytes");
    assert.equal(read?.value, 8000);
  });

  test("the dashboard: the notebook's feed shows the Redis workers, the task stream with its reads from redis, the metrics and the computation", async () => {
    // The Client put its cluster on the notebook's feed when it connected; this is that feed.
    const feed = clusterFeed({ scheduler: client.scheduler, description: "", dashboardLink: null });
    const graph: Record<string, unknown> = { base: [ramp, 10_000, 1, false] };
    // A prefix of its own: the task stream also holds earlier tests' records.
    for (let i = 0; i < 4; i++) graph[`feedsum-${i}`] = [total, "base"];
    await get(graph, ["feedsum-0", "feedsum-1", "feedsum-2", "feedsum-3"]);
    await new Promise((resolve) => setTimeout(resolve, 250)); // past the feed's reuse window
    const sections = feed.sections();
    assert.equal(sections.cluster?.workers, 2);
    assert.equal(sections.cluster?.threads, 3);
    assert.match(sections.cluster?.scheduler ?? "", new RegExp(`redis://127\\.0\\.0\\.1:${server.port}`));
    assert.deepEqual(sections.workers?.map((worker) => worker.name).sort(), ["w1", "w2"]);
    const sums = sections.taskStream?.records.filter((record) => record.prefix === "feedsum") ?? [];
    assert.equal(sums.length, 4);
    assert.ok(sums.every((record) => record.startstops.some((startstop) => startstop.action === "transfer" && startstop.source === "redis")));
    assert.ok(sections.metrics?.metrics.some((metric) => metric.context === "execute" && metric.prefix === "feedsum"));
    assert.equal(sections.metrics?.source?.transfers, false, "no worker-to-worker transfers: data goes through Redis");
    assert.ok(sections.progress?.some((computation) => computation.total >= 5), "the computation's progress");
  });

  test("a worker joining and leaving shows in client.workers; a second worker of the same name is refused", async () => {
    const extra = await startWorker(server.url, { name: "w3" });
    await waitFor("w3 to join", () => client.workers.has("w3"), 5);
    assert.equal(await get({ m: [Math.max, 3, 9] }, "m"), 9);
    await extra.stop();
    await waitFor("w3 to leave", () => !client.workers.has("w3"), 5);
    const duplicate = await startWorker(server.url, { name: "w1" }).then(
      () => assert.fail("a second w1 started"),
      (error: Error) => error.message,
    );
    assert.match(duplicate, /A worker named "w1" is already registered: the worker on host .* \(pid \d+\)/);
  });

  test("values larger than a part travel in parts, both ways", async () => {
    const parted = await Client.connect(server.url, { partSize: 4096 });
    try {
      const data = new Float64Array(50_000).map((_, i) => i % 13);
      const result = await get({ data, sum: [total, "data"], made: [ramp, 300_000, 1, false], madeSum: [total, "made"] }, ["sum", "made", "madeSum"]);
      assert.deepEqual(result, [total(data), ramp(300_000, 1, false), total(ramp(300_000, 1, false))]);
    } finally {
      await parted.close();
    }
    assert.deepEqual(await redis.keys(`tsdask:${clientId(parted)}*`), [], "the closed client's namespace is empty");
  });

  test("the seeds' QR example on Redis workers equals the threads scheduler's result", async () => {
    const a = da.random.random([10000, 1000], { chunks: [1000, 1000], seed: 42 });
    const [q, r] = da.linalg.qr(a);
    const product = q.dot(r);
    const threads = await product.compute({ scheduler: "threads" });
    const before = client.scheduler.taskStream.index;
    const onRedis = await product.compute();
    assert.deepEqual(onRedis.shape, [10000, 1000]);
    assert.ok(Buffer.from(onRedis.data.buffer).equals(Buffer.from(threads.data.buffer)), "bit for bit the same values");
    const workersUsed = new Set(client.scheduler.getTaskStream({ startIndex: before }).map((record) => record.worker));
    assert.deepEqual(workersUsed, new Set(["w1", "w2"]));
  });

  test("a module missing on the worker is an error naming the module and the worker", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tsdask-module-"));
    const path = join(dir, "only-here.js");
    writeFileSync(path, "exports.triple = (x) => x * 3;\n");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { triple } = require(path) as { triple: (x: number) => number };
    rmSync(dir, { recursive: true, force: true }); // the client has it loaded; no worker can load it
    await assert.rejects(get({ x: [triple, 2] }, "x"), (error: Error) => {
      assert.match(error.message, /Function "triple" of task 'x' is exported by module .*only-here\.js, which does not exist on worker w[12] \(host /);
      return true;
    });
  });

  test("an argument that cannot be copied is refused before anything reaches Redis; a result that cannot is its task's TaskTransferError, inline or not", async () => {
    const pids = workers.map((worker) => worker.pid);
    assert.throws(() => client.submit(pair, 1, { f() { return 1; } } as never), (error: unknown) => {
      assert.ok(error instanceof TaskTransferError);
      assert.equal(error.message, `Task '${String(error.key)}': argument 2 cannot be sent to a worker: .f is a function f() { return 1; }, which cannot be copied`);
      return true;
    });
    // One at a time: after INLINE_AFTER_TINY tiny ones, the worker runs the next on its own thread.
    for (let i = 0; i < INLINE_AFTER_TINY + 2; i++) {
      const future = client.submit(closureOf, i);
      await assert.rejects(future.result(), (error: Error) => {
        assert.equal(error.name, "TaskTransferError");
        assert.equal(error.message, `Task '${String(future.key)}': its result cannot be sent back from the worker: it is a function () => x, which cannot be copied`);
        return true;
      });
      future.release();
    }
    assert.equal(await client.submit(inc, 1).result(), 2);
    for (const worker of workers) assert.doesNotMatch(worker.output(), /could not be cloned/);
    assert.deepEqual(workers.map((worker) => worker.pid), pids);
  });

  test("source text runs only on workers started with --allow-source, tasks and client.run alike", async () => {
    const double = (x: number): number => x * 2;
    const graph = { x: [double, 21] };
    await assert.rejects(get(graph, "x"), /Function `\(x\) => x \* 2` of task 'x' travels as source text, and worker w[12] .* does not run shipped source: .*--allow-source/);
    await assert.rejects(client.run((worker) => worker.name), /of client\.run travels as source text, and worker w[12] .* does not run shipped source/);
    // Only a worker that allows source serves this Redis now.
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    workers.push(await startWorker(server.url, { name: "open", allowSource: true }));
    await waitFor("only the open worker to be connected", () => client.workers.size === 1 && client.workers.has("open"), 5);
    assert.equal(await get(graph, "x"), 42);
    assert.deepEqual(await client.run((worker) => worker.nthreads), { open: 1 });
    assert.equal(await get({ m: [Math.max, 3, 9] }, "m"), 9, "built-ins run everywhere");
    const id = clientId(client);
    await client.close();
    assert.deepEqual(await redis.keys(`tsdask:${id}*`), [], "nothing of the client is left after close()");
  });
});
