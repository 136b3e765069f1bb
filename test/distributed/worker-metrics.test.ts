// Dask's distributed/tests/test_worker_metrics.py (and the metrics part of test_spans.py) on real
// LocalClusters: each test starts its own cluster, so a worker's digests are only the test's, as
// in Dask's gen_cluster, and the expected sets are Dask's. Where tsdask differs on purpose (no
// compression, no scatter, string labels), the comment at the expected set says so; README,
// "Where tsdask differs from Dask on purpose", gives the reasons.
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Client, type Future, type LocalClusterOptions, type MetricRecord, type SpanRecord, get, span } from "../../src";
import { now } from "../../src/kernel/clock";
import type { DigestKey } from "../../src/kernel/distributed/worker/digests";
import { findByTags, mergeSpans } from "../../src/protocol/fpm";
import { fail, slowInc } from "../fixtures/cluster-client-tasks";
import {
  block,
  intMetric,
  joined,
  lengthOf,
  pingAsync,
  pingOnRun,
  pingSync,
  repeated,
  userMetricsAsync,
  userMetricsFail,
  userMetricsSync,
  userMetricsWeird,
  withSmall,
} from "../fixtures/dask-metrics-tasks";
import { sleepSync } from "../fixtures/metered-tasks";
import { inc, sleep } from "../fixtures/tasks";
import { withCluster } from "../helpers/cluster";
import { waitFor } from "../helpers/wait";

type Digests = [key: DigestKey, value: number][];

const ONE_WORKER: LocalClusterOptions = { nWorkers: 1, threadsPerWorker: 1, name: "dask-metrics" };
const TWO_WORKERS: LocalClusterOptions = { nWorkers: 2, threadsPerWorker: 1, name: "dask-metrics" };

/** Each worker's digests since it started, as Dask's (tuple key, value) pairs, by worker address. */
async function digestsByWorker(client: Client): Promise<Record<string, Digests>> {
  return (await client.run((worker) => worker.digestsTotalTuples)) as Record<string, Digests>;
}

/** The only worker's digests (Dask's get_digests(a)), every value ≥ 0 as Dask asserts. */
async function onlyWorkerDigests(client: Client): Promise<Digests> {
  const all = Object.values(await digestsByWorker(client));
  assert.equal(all.length, 1);
  for (const [key, value] of all[0]) assert.ok(value >= 0, `${JSON.stringify(key)} = ${value}`);
  return all[0];
}

const keysOf = (digests: Digests): DigestKey[] => digests.map(([key]) => key);
const valueOf = (digests: Digests, key: DigestKey): number | undefined => digests.find(([k]) => JSON.stringify(k) === JSON.stringify(key))?.[1];
const asSet = (keys: readonly (readonly unknown[])[]): Set<string> => new Set(keys.map((key) => JSON.stringify(key)));

/** Dask's span_id(s): the id of the one "default" span. */
async function defaultSpanId(client: Client): Promise<string> {
  const defaults = (await client.spans()).filter((s) => s.name.length === 1 && s.name[0] === "default");
  assert.equal(defaults.length, 1, "one default span");
  return defaults[0].id;
}

/** Dask's `wait(futures)`: until each has finished or failed, without fetching results. */
async function settled(...futures: Future[]): Promise<void> {
  await Promise.all(futures.map((future) => future.exception()));
}

/** The scheduler's cumulative metrics (Dask's Scheduler.cumulative_worker_metrics) as tuples. */
async function schedulerTuples(client: Client): Promise<[readonly unknown[], number][]> {
  const records = await client.metrics();
  return records.map((r: MetricRecord) => [r.context === "execute" ? [r.context, r.prefix, r.activity, r.unit] : [r.context, r.activity, r.unit], r.value]);
}

// Port of distributed/tests/test_worker_metrics.py::test_task_lifecycle
test("test_worker_metrics.py::test_task_lifecycle: fetch, unspill, run, spill and serve a task; the digests Dask expects", async () => {
  const options: LocalClusterOptions = { ...TWO_WORKERS, memoryLimit: "1 GiB", memoryThresholds: { target: 1e-9, spill: false, pause: false } };
  await withCluster(options, async (_cluster, client) => {
    const began = performance.now();
    // Dask scatters x to a and y to b; tsdask has no scatter: they are computed there (two roots
    // at once, one per idle worker), submitted with z so that all three are in one default span.
    const x = client.submit(repeated, "x", 20_000);
    const y = client.submit(repeated, "y", 20_000);
    const z = client.submit(joined, x, y);
    assert.equal(await z.result(), "x".repeat(20_000) + "y".repeat(20_000));
    // The reply to the client's fetch of z is metered once it has left.
    let a = "";
    await waitFor("get-data network seconds on the worker that ran z", async () => {
      const byWorker = await digestsByWorker(client);
      a = Object.keys(byWorker).find((address) => byWorker[address].some(([key]) => key[0] === "execute" && key[2] === "joined")) ?? "";
      return a !== "" && byWorker[a].some(([key]) => key.join() === "get-data,network,seconds");
    });
    const blockSeconds = (performance.now() - began) / 1000;
    const digests = (await digestsByWorker(client))[a];
    const span = await defaultSpanId(client);
    assert.ok(keysOf(digests).some((key) => key[0] === "gather-dep"), "z's worker fetched one of its inputs (x and y ran on different workers)");
    // Dask's set without compress/decompress (tsdask never compresses).
    const expected: DigestKey[] = [
      // a.gather_dep(): the input from the other worker, spilled as it lands.
      ["gather-dep", "deserialize", "seconds"],
      ["gather-dep", "network", "seconds"],
      ["gather-dep", "serialize", "seconds"],
      ["gather-dep", "disk-write", "seconds"],
      ["gather-dep", "disk-write", "count"],
      ["gather-dep", "disk-write", "bytes"],
      ["gather-dep", "other", "seconds"],
      // a.execute(z): unspill its inputs, run it in a thread, spill its output.
      ["execute", span, "joined", "disk-read", "seconds"],
      ["execute", span, "joined", "disk-read", "count"],
      ["execute", span, "joined", "disk-read", "bytes"],
      ["execute", span, "joined", "deserialize", "seconds"],
      ["execute", span, "joined", "thread-cpu", "seconds"],
      ["execute", span, "joined", "thread-noncpu", "seconds"],
      ["execute", span, "joined", "executor", "seconds"],
      ["execute", span, "joined", "serialize", "seconds"],
      ["execute", span, "joined", "disk-write", "seconds"],
      ["execute", span, "joined", "disk-write", "count"],
      ["execute", span, "joined", "disk-write", "bytes"],
      ["execute", span, "joined", "other", "seconds"],
      // Not in Dask's set: the input computed here instead of scattered, its output spilled.
      ["execute", span, "repeated", "thread-cpu", "seconds"],
      ["execute", span, "repeated", "thread-noncpu", "seconds"],
      ["execute", span, "repeated", "executor", "seconds"],
      ["execute", span, "repeated", "serialize", "seconds"],
      ["execute", span, "repeated", "disk-write", "seconds"],
      ["execute", span, "repeated", "disk-write", "count"],
      ["execute", span, "repeated", "disk-write", "bytes"],
      ["execute", span, "repeated", "other", "seconds"],
      // a.get_data() for the client's fetch of z: unspill, then send.
      ["get-data", "disk-read", "seconds"],
      ["get-data", "disk-read", "count"],
      ["get-data", "disk-read", "bytes"],
      ["get-data", "deserialize", "seconds"],
      ["get-data", "serialize", "seconds"],
      ["get-data", "network", "seconds"],
    ];
    assert.deepEqual(asSet(keysOf(digests)), asSet(expected));
    const counts = digests.filter(([key]) => key[key.length - 1] === "count" && key[2] !== "repeated");
    assert.deepEqual(asSet(counts.map(([key, value]) => [...key, value])), asSet([
      ["execute", span, "joined", "disk-read", "count", 2],
      ["execute", span, "joined", "disk-write", "count", 1],
      ["gather-dep", "disk-write", "count", 1],
      ["get-data", "disk-read", "count", 1],
    ]));
    const seconds = digests.filter(([key]) => key[key.length - 1] === "seconds").reduce((total, [, value]) => total + value, 0);
    assert.ok(seconds <= blockSeconds, `Σ seconds ${seconds} within the block's ${blockSeconds} s`);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_async_task
test("test_worker_metrics.py::test_async_task: an async task's time is thread-noncpu, with no thread-cpu", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await client.submit(sleep, 100).result();
    const digests = await onlyWorkerDigests(client);
    const span = await defaultSpanId(client);
    assert.equal(valueOf(digests, ["execute", span, "sleep", "thread-cpu", "seconds"]), undefined);
    const noncpu = valueOf(digests, ["execute", span, "sleep", "thread-noncpu", "seconds"])!;
    assert.ok(noncpu > 0 && noncpu < 1, `thread-noncpu ${noncpu} s`);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_execute_failed
test("test_worker_metrics.py::test_execute_failed: a failed task's time is one lump under failed", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await settled(client.submit(fail, "1 / 0"));
    assert.deepEqual(keysOf(await onlyWorkerDigests(client)), [["execute", await defaultSpanId(client), "fail", "failed", "seconds"]]);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_cancelled_execute
test("test_worker_metrics.py::test_cancelled_execute: a task released while it runs is one lump under cancelled", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    const x = client.submit(sleepSync, 60_000);
    const taskStates = async (): Promise<Record<string, number>> => Object.values((await client.run((worker) => worker.tasks)) as Record<string, Record<string, number>>)[0];
    await waitFor("x executing", async () => ((await taskStates()).executing ?? 0) === 1);
    x.release();
    await waitFor("the worker holding no task", async () => Object.values(await taskStates()).every((count) => count === 0));
    assert.deepEqual(keysOf(await onlyWorkerDigests(client)), [["execute", await defaultSpanId(client), "sleepSync", "cancelled", "seconds"]]);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_memory_monitor
test("test_worker_metrics.py::test_memory_monitor: spilling under memory pressure digests under memory-monitor", async () => {
  // Dask patches the process memory to look huge; here the spill threshold is below any Node process's memory.
  const options: LocalClusterOptions = { ...ONE_WORKER, memoryLimit: "1 GiB", memoryThresholds: { target: false, spill: 0.01, pause: false } };
  await withCluster(options, async (_cluster, client) => {
    // Held to the end: a Future nobody refers to may be collected, and its result freed before it is spilled.
    const x = client.submit(inc, 1);
    await settled(x);
    await waitFor("x spilled by the memory monitor", async () => {
      const onDisk = (await client.run((worker) => worker.data.onDisk.length)) as Record<string, number>;
      return Object.values(onDisk)[0] === 1;
    });
    const monitor = keysOf(await onlyWorkerDigests(client)).filter((key) => key[0] === "memory-monitor");
    // Dask's list without compress (tsdask never compresses).
    assert.deepEqual(monitor, [
      ["memory-monitor", "serialize", "seconds"],
      ["memory-monitor", "disk-write", "seconds"],
      ["memory-monitor", "disk-write", "count"],
      ["memory-monitor", "disk-write", "bytes"],
    ]);
    x.release();
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_user_metrics_sync
test("test_worker_metrics.py::test_user_metrics_sync: 5 s digested by a 0.2 s task leave its other activities at 0", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await settled(client.submit(userMetricsSync));
    const digests = await onlyWorkerDigests(client);
    const span = await defaultSpanId(client);
    const key = (activity: string): DigestKey => ["execute", span, "userMetricsSync", activity, "seconds"];
    assert.deepEqual(keysOf(digests), [key("I/O"), key("thread-cpu"), key("thread-noncpu"), key("executor"), key("other")]);
    assert.deepEqual(digests.map(([, value]) => value), [5, 0, 0, 0, 0]);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_user_metrics_async
test("test_worker_metrics.py::test_user_metrics_async: an async task digests I/O, thread-noncpu and other only", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await settled(client.submit(userMetricsAsync));
    const digests = await onlyWorkerDigests(client);
    const span = await defaultSpanId(client);
    const key = (activity: string): DigestKey => ["execute", span, "userMetricsAsync", activity, "seconds"];
    assert.deepEqual(keysOf(digests), [key("I/O"), key("thread-noncpu"), key("other")]);
    assert.deepEqual(digests.map(([, value]) => value), [5, 0, 0]);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_user_metrics_fail
test("test_worker_metrics.py::test_user_metrics_fail: a failing task keeps the metrics in other units, its seconds under failed", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    const began = performance.now();
    await settled(client.submit(userMetricsFail));
    const blockSeconds = (performance.now() - began) / 1000;
    const digests = await onlyWorkerDigests(client);
    const span = await defaultSpanId(client);
    assert.deepEqual(keysOf(digests), [
      ["execute", span, "userMetricsFail", "I/O", "bytes"],
      ["execute", span, "userMetricsFail", "failed", "seconds"],
    ]);
    assert.equal(digests[0][1], 100);
    // Dask: < 1 s. The first task of a fresh worker loads its module, which a loaded machine can
    // stretch past a second: bounded by the time the client waited for it instead.
    assert.ok(digests[1][1] > 0 && digests[1][1] <= blockSeconds, `failed ${digests[1][1]} s, the block ${blockSeconds} s`);
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_user_metrics_weird
test("test_worker_metrics.py::test_user_metrics_weird: any unit, in the scheduler's metrics as in the worker's", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await settled(client.submit(userMetricsWeird));
    // Dask's labels ("foo", 1) and None, as strings: tsdask's labels are strings.
    const scheduler = await schedulerTuples(client);
    assert.deepEqual(
      scheduler.map(([key]) => key),
      [
        ["execute", "userMetricsWeird", "('foo', 1)", "seconds"],
        ["execute", "userMetricsWeird", "None", "custom"],
        ["execute", "userMetricsWeird", "thread-cpu", "seconds"],
        ["execute", "userMetricsWeird", "thread-noncpu", "seconds"],
        ["execute", "userMetricsWeird", "executor", "seconds"],
        ["execute", "userMetricsWeird", "other", "seconds"],
      ],
    );
    const worker = await onlyWorkerDigests(client);
    const span = await defaultSpanId(client);
    for (const [[context, prefix, activity, unit], value] of scheduler) {
      const own = valueOf(worker, [context, span, prefix, activity, unit] as DigestKey)!;
      assert.ok(Math.abs(own - value) <= 1e-9 * Math.max(1, value), `${activity}: worker ${own}, scheduler ${value}`);
    }
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_do_not_leak_metrics
test("test_worker_metrics.py::test_do_not_leak_metrics: concurrent tasks keep their own metrics; a run function's are dropped", async () => {
  await withCluster({ ...ONE_WORKER, threadsPerWorker: 3 }, async (_cluster, client) => {
    const x = client.submit(pingSync, "x");
    const y = client.submit(pingSync, "y");
    const z = client.submit(pingAsync, "z");
    await client.run(pingOnRun);
    await settled(x, y, z);
    const span = await defaultSpanId(client);
    const counts = (await onlyWorkerDigests(client)).filter(([key]) => key[key.length - 1] === "count");
    assert.deepEqual(asSet(counts.map(([key, value]) => [...key, value])), asSet([
      ["execute", span, "pingSync", "ping-x", "count", 10],
      ["execute", span, "pingSync", "ping-y", "count", 10],
      ["execute", span, "pingAsync", "ping-z", "count", 10],
    ]));
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_send_metrics_to_scheduler
test("test_worker_metrics.py::test_send_metrics_to_scheduler: both workers fetch and serve; the scheduler sums their digests", async () => {
  await withCluster(TWO_WORKERS, async (_cluster, client) => {
    // As Dask's test, workers= pins the tasks: a big block and a small value on each worker, and on
    // each a task reading its own block and the other worker's small value, so both workers fetch
    // (gather_dep) and serve (get_data). Left to data locality, both readers landed on one worker
    // now and then (one CI run in ~12).
    const [onA, onB] = [...client.workers.keys()].sort().map((address) => ({ workers: [address] }));
    const bigA = client.submit(block, 100_000, onA);
    const bigB = client.submit(block, 100_001, onB);
    const smallA = client.submit(lengthOf, bigA, onA);
    const smallB = client.submit(lengthOf, bigB, onB);
    await settled(client.submit(withSmall, bigA, smallB, onA), client.submit(withSmall, bigB, smallA, onB));
    await client.metrics(); // flush the workers' metrics to the scheduler
    // The cumulative sync over several heartbeats.
    await settled(client.submit(block, 7));
    const scheduler = await schedulerTuples(client);
    const [a, b] = Object.values(await digestsByWorker(client));
    const span = await defaultSpanId(client);
    const execute = (prefix: string, reads: boolean): DigestKey[] => [
      ...(["thread-cpu", "thread-noncpu", "executor", "other"] as const).map((activity): DigestKey => ["execute", span, prefix, activity, "seconds"]),
      ...(reads ? (["count", "bytes"] as const).map((unit): DigestKey => ["execute", span, prefix, "memory-read", unit]) : []),
    ];
    // Dask's set per task prefix (Dask's tasks all have prefix x), without compress/decompress.
    const expectWorker: DigestKey[] = [
      ...execute("block", false),
      ...execute("lengthOf", true),
      ...execute("withSmall", true),
      ["get-data", "memory-read", "count"],
      ["get-data", "memory-read", "bytes"],
      ["get-data", "serialize", "seconds"],
      ["gather-dep", "deserialize", "seconds"],
      ["gather-dep", "network", "seconds"],
      ["gather-dep", "other", "seconds"],
      ["get-data", "network", "seconds"],
    ];
    const expectScheduler = expectWorker.map((key) => (key[0] === "execute" ? [key[0], ...key.slice(2)] : key));
    assert.deepEqual(asSet(keysOf(a)), asSet(expectWorker));
    assert.deepEqual(asSet(keysOf(b)), asSet(expectWorker));
    assert.deepEqual(asSet(scheduler.map(([key]) => key)), asSet(expectScheduler));
    expectWorker.forEach((key, i) => {
      const [inA, inB] = [valueOf(a, key)!, valueOf(b, key)!];
      const summed = scheduler.find(([k]) => JSON.stringify(k) === JSON.stringify(expectScheduler[i]))![1];
      assert.ok(inA >= 0 && inB >= 0);
      assert.ok(Math.abs(summed - (inA + inB)) <= 1e-9 * Math.max(1, summed), `${key.join(" ")}: scheduler ${summed}, workers ${inA} + ${inB}`);
    });
  });
});

// Port of distributed/tests/test_worker_metrics.py::test_int_metrics (digests_max aside: tsdask keeps totals only)
test("test_worker_metrics.py::test_int_metrics: an integer metric stays an integer on the worker, the scheduler and the span", async () => {
  await withCluster(ONE_WORKER, async (_cluster, client) => {
    await settled(client.submit(intMetric));
    const span = await defaultSpanId(client);
    assert.equal(valueOf(await onlyWorkerDigests(client), ["execute", span, "intMetric", "foo", "u"]), 1);
    const scheduler = await schedulerTuples(client);
    assert.equal(scheduler.find(([key]) => key.join() === "execute,intMetric,foo,u")?.[1], 1);
    const spanRecord = (await client.spans()).find((s) => s.id === span)!;
    assert.equal(spanRecord.metrics.find((r) => r.prefix === "intMetric" && r.activity === "foo")?.value, 1);
  });
});

// Port of distributed/tests/test_spans.py::test_worker_metrics
test("test_spans.py::test_worker_metrics: a span's metrics hold its own tasks' and its children's, as the scheduler's", async () => {
  await withCluster(TWO_WORKERS, async (_cluster, client) => {
    const barIds: string[] = [];
    const fooId = await span("foo", async (id) => {
      for (let i = 0; i < 2; i++) {
        await get({ "x-0": [inc, 1], "x-1": [inc, 1] }, ["x-0", "x-1"]);
        barIds.push(await span("bar", async (bar) => (await get({ "y-0": [inc, 1] }, "y-0"), bar)));
        await get({ "x-0": [inc, 1], "x-1": [inc, 1], "x-2": [inc, "x-0"], "x-3": [inc, "x-1"] }, ["x-2", "x-3"]);
        await get({ "y-1": [inc, 1] }, "y-1");
      }
      return id;
    });
    const spans = await client.spans();
    const metricsOf = (id: string): readonly MetricRecord[] => spans.find((s) => s.id === id)!.metrics;
    const keyOf = (r: MetricRecord): string => JSON.stringify(["execute", r.prefix, r.activity, r.unit]);
    const seconds = (prefix: string): string[] => ["thread-cpu", "thread-noncpu", "executor", "other"].map((activity) => JSON.stringify(["execute", prefix, activity, "seconds"]));
    const idle = JSON.stringify(["execute", "N/A", "idle or other spans", "seconds"]);
    const foo = metricsOf(fooId);
    assert.deepEqual(
      new Set(foo.map(keyOf)),
      new Set([...seconds("x"), JSON.stringify(["execute", "x", "memory-read", "count"]), JSON.stringify(["execute", "x", "memory-read", "bytes"]), ...seconds("y"), idle]),
    );
    for (const bar of barIds) assert.deepEqual(new Set(metricsOf(bar).map(keyOf)), new Set([...seconds("y"), idle]));
    for (const id of [fooId, ...barIds]) for (const r of metricsOf(id)) assert.ok(r.value >= 0, `${keyOf(r)} = ${r.value}`);
    // Synchronized from the scheduler: foo holds every task of the test.
    const scheduler = new Map((await schedulerTuples(client)).map(([key, value]) => [JSON.stringify(key), value]));
    for (const r of foo) {
      if (r.activity === "idle or other spans") continue;
      assert.ok(Math.abs(scheduler.get(keyOf(r))! - r.value) <= 1e-9 * Math.max(1, r.value), `${keyOf(r)}: scheduler ${scheduler.get(keyOf(r))}, foo ${r.value}`);
    }
    // foo holds its children's metrics, and more (y-1 ran in foo itself).
    for (const r of metricsOf(barIds[0])) {
      if (r.activity === "idle or other spans") continue;
      const inBars = barIds.reduce((total, id) => total + (metricsOf(id).find((m) => keyOf(m) === keyOf(r))?.value ?? 0), 0);
      assert.ok(foo.find((m) => keyOf(m) === keyOf(r))!.value >= inBars - 1e-9, keyOf(r));
    }
  });
});

// Port of distributed/tests/test_spans.py::test_merge_by_tags_metrics
test("test_spans.py::test_merge_by_tags_metrics: spans merged by tag sum their metrics and start at the earliest enqueued", async () => {
  await withCluster(TWO_WORKERS, async (_cluster, client) => {
    const foo1 = await span("foo", (id) => get({ "x-1": [slowInc, 1, 50] }, "x-1").then(() => id));
    const foo2 = await span("foo", (id) => get({ "x-2": [slowInc, 2, 60] }, "x-2").then(() => id));
    const bar1 = await span("bar", (id) => get({ "x-3": [slowInc, 3, 70] }, "x-3").then(() => id));
    const spans = await client.spans();
    const noncpu = (record: SpanRecord): number => record.metrics.find((r) => r.prefix === "x" && r.activity === "thread-noncpu" && r.unit === "seconds")?.value ?? 0;
    const byId = (id: string): SpanRecord => spans.find((s) => s.id === id)!;
    const merged = (tag: string): SpanRecord => mergeSpans(findByTags(spans, [tag]), now());
    const [tFoo1, tFoo2, tBar1] = [noncpu(byId(foo1)), noncpu(byId(foo2)), noncpu(byId(bar1))];
    assert.ok(tFoo1 > 0 && tFoo2 > 0 && tBar1 > 0, `${tFoo1}, ${tFoo2}, ${tBar1}`);
    assert.equal(noncpu(merged("foo")), tFoo1 + tFoo2);
    assert.equal(noncpu(merged("bar")), tBar1);
    assert.equal(merged("foo").enqueued, Math.min(byId(foo1).enqueued, byId(foo2).enqueued));
  });
});

// Port of distributed/tests/test_spans.py::test_active_cpu_seconds_trivial (2 workers × 1 thread where Dask's gen_cluster has 1 + 2 threads)
test("test_spans.py::test_active_cpu_seconds_trivial: a done span's thread budget is its life × threads; idle is what its task left", async () => {
  await withCluster(TWO_WORKERS, async (_cluster, client) => {
    await client.submit(slowInc, 1, 200).result();
    const id = await defaultSpanId(client);
    const record = (await client.spans()).find((s) => s.id === id)!;
    assert.ok(record.done, JSON.stringify(record));
    assert.deepEqual(record.intervals, [[record.enqueued, record.stop, 2]], JSON.stringify(record));
    assert.ok(Math.abs(record.activeCpuSeconds - (record.stop - record.enqueued) * 2) < 1e-9);
    const idle = record.metrics.find((r) => r.prefix === "N/A" && r.activity === "idle or other spans")!.value;
    assert.ok(idle > 0.15 && idle <= record.activeCpuSeconds, `idle ${idle} s of ${record.activeCpuSeconds}`);
  });
});
