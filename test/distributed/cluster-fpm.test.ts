// Fine performance metrics and spans on a real LocalCluster (forked workers, real threads, real
// spill files, real peer transfers): the workers' digests under Dask's keys, the scheduler's
// cumulative metrics, each span's metrics, and how the three layers agree.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { Client, LocalCluster, type LocalClusterOptions, type MetricRecord, type SpanRecord, array as da, delayed, get, span } from "../../src";
import { DEFAULT_SELECTION, fpmModel } from "../../src/protocol/fpm";
import { fail, slowInc } from "../fixtures/cluster-client-tasks";
import { ramp, total } from "../fixtures/cluster-tasks";
import { busy, combine, digestAcrossAwaits, readLike, sleepSync } from "../fixtures/metered-tasks";
import { withCluster } from "../helpers/cluster";

/** Sum of the records matching every field of `match`. */
function sum(records: readonly MetricRecord[], match: Partial<MetricRecord>): number {
  return records.filter((record) => Object.entries(match).every(([field, value]) => record[field as keyof MetricRecord] === value)).reduce((total, r) => total + r.value, 0);
}

/** The task's own time (what its thread measured), in seconds: the activities not about getting it there. */
function taskSeconds(records: readonly MetricRecord[], prefix: string): number {
  const overheads = new Set(["executor", "other", "serialize", "deserialize", "disk-read", "disk-write"]);
  return records.filter((r) => r.prefix === prefix && r.unit === "seconds" && !overheads.has(r.activity)).reduce((total, r) => total + r.value, 0);
}

/** As in the local schedulers' tests: a task's own wall time and its thread's may differ by the call and a descheduling. */
const WALL_SLACK = 0.03;

/** Every worker's digests, with span ids. */
async function workerDigests(client: Client): Promise<MetricRecord[]> {
  const byWorker = (await client.run((worker) => worker.digestsTotal)) as Record<string, MetricRecord[]>;
  return Object.values(byWorker).flat();
}

function spanById(spans: readonly SpanRecord[], id: string): SpanRecord {
  const found = spans.find((s) => s.id === id);
  assert.ok(found, `span ${id} is listed`);
  return found;
}

describe("fine performance metrics on a LocalCluster", () => {
  let cluster: LocalCluster;
  let client: Client;

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "cluster-fpm", dashboardAddress: null });
    client = await Client.connect(cluster);
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  describe("what tasks measure, on real workers", () => {
    let spanId: string;
    let results: { wallMs: number; cpuMs: number; spinMs?: number }[];
    let spans: SpanRecord[];
    let metrics: MetricRecord[];
    let digests: MetricRecord[];

    before(async () => {
      const graph = {
        "cpu-1": [busy, 300],
        "nap-1": [sleepSync, 200],
        "plain-1": [readLike, 200, null, 0],
        "metered-1": [readLike, 200, "I/O", 123_456],
      };
      results = (await span("basics", async (id) => {
        spanId = id;
        return get(graph, ["cpu-1", "nap-1", "plain-1", "metered-1"]);
      })) as typeof results;
      [spans, metrics, digests] = [await client.spans(), await client.metrics(), await workerDigests(client)];
    });

    test("a CPU-bound task shows its thread's CPU time as thread-cpu, the rest of its wall time as thread-noncpu", () => {
      const [own] = results;
      const records = spanById(spans, spanId).metrics;
      const [cpu, noncpu] = [sum(records, { prefix: "cpu", activity: "thread-cpu" }), sum(records, { prefix: "cpu", activity: "thread-noncpu" })];
      // On an idle machine the CPU time is the wall time; on a busy one the spinning thread gets less of a CPU.
      assert.ok(own.cpuMs > 0, "the spinning thread got no CPU at all?");
      assert.ok(Math.abs(cpu - own.cpuMs / 1000) < 0.03 + 0.1 * (own.cpuMs / 1000), `thread-cpu ${cpu} s, the thread's own count ${own.cpuMs} ms`);
      assert.ok(Math.abs(cpu + noncpu - own.wallMs / 1000) < WALL_SLACK, `cpu ${cpu} + noncpu ${noncpu} vs wall ${own.wallMs} ms`);
    });

    test("a task that sleeps shows thread-noncpu", () => {
      const records = spanById(spans, spanId).metrics;
      assert.ok(sum(records, { prefix: "nap", activity: "thread-noncpu" }) >= 0.19);
      assert.ok(sum(records, { prefix: "nap", activity: "thread-cpu" }) < 0.03);
    });

    test('meter("I/O") around a 200 ms sleep moves it from thread-noncpu to "I/O", counting nothing twice', () => {
      const [, , plain, metered] = results;
      const records = spanById(spans, spanId).metrics;
      const io = sum(records, { prefix: "metered", activity: "I/O", unit: "seconds" });
      assert.ok(io >= 0.195 && io < 0.6, `I/O ${io} s`);
      const spinNoncpu = (task: { cpuMs: number; spinMs?: number }): number => (task.spinMs! - task.cpuMs) / 1000;
      const plainNoncpu = sum(records, { prefix: "plain", activity: "thread-noncpu" });
      const meteredNoncpu = sum(records, { prefix: "metered", activity: "thread-noncpu" });
      assert.ok(plainNoncpu >= 0.19 + spinNoncpu(plain) - 0.03, `plain thread-noncpu ${plainNoncpu} s`);
      assert.ok(Math.abs(meteredNoncpu - spinNoncpu(metered)) < 0.03 + 0.1 * spinNoncpu(metered), `metered thread-noncpu ${meteredNoncpu} s`);
      for (const [prefix, own] of [["plain", plain], ["metered", metered]] as const) {
        const seconds = taskSeconds(records, prefix);
        assert.ok(Math.abs(seconds - own.wallMs / 1000) < WALL_SLACK, `${prefix}: Σ ${seconds} s, wall ${own.wallMs} ms`);
      }
    });

    test("a digested metric keeps its label, unit and integer value in the worker's digests, the scheduler's metrics and the span's", () => {
      const match = { prefix: "metered", activity: "S3 Infrequent Access", unit: "bytes" } as const;
      const [worker] = digests.filter((r) => r.context === "execute" && r.prefix === "metered" && r.activity === match.activity);
      assert.deepEqual(worker, { context: "execute", span: spanId, ...match, value: 123_456 });
      assert.deepEqual(metrics.find((r) => r.prefix === "metered" && r.activity === match.activity), { context: "execute", ...match, value: 123_456 });
      assert.equal(sum(spanById(spans, spanId).metrics, match), 123_456);
      // Counts stay integers everywhere (memory-read counts the task's inputs: none here, so the 4 tasks had none).
      for (const record of [...digests, ...metrics]) if (record.unit === "count" || record.unit === "bytes") assert.ok(Number.isInteger(record.value), JSON.stringify(record));
    });

    test("each worker digests its tasks under Dask's keys: execute with the span id, executor and other besides the thread's time; no idle", () => {
      for (const prefix of ["cpu", "nap", "plain", "metered"]) {
        const own = digests.filter((r) => r.context === "execute" && r.prefix === prefix);
        assert.ok(own.every((r) => r.span === spanId), `${prefix}: every digest carries the span id`);
        const activities = new Set(own.map((r) => r.activity));
        for (const activity of ["thread-cpu", "thread-noncpu", "executor", "other"]) assert.ok(activities.has(activity), `${prefix}: ${activity} in ${[...activities].join(", ")}`);
      }
      assert.ok(!digests.some((r) => r.activity === "idle" || r.activity === "idle or other spans"), "idle is the scheduler's, never a worker's");
    });
  });

  test("a failing task's seconds are all under failed", async () => {
    await span("failing", async (id) => {
      await assert.rejects(get({ "boom-1": [fail, "no"] }, "boom-1"), /no/);
      const [spans, digests] = [await client.spans(), await workerDigests(client)];
      const own = digests.filter((r) => r.prefix === "boom");
      assert.deepEqual(own.map((r) => [r.span, r.activity, r.unit]), [[id, "failed", "seconds"]]);
      assert.ok(own[0].value > 0);
      assert.deepEqual(spanById(spans, id).states, { forgotten: 1 });
      assert.ok(sum(spanById(spans, id).metrics, { prefix: "boom", activity: "failed" }) > 0);
    });
  });

  test("a peer fetch shows gather-dep network seconds on the receiver, get-data on the sender; bytes in the transfer logs, as Dask's", async () => {
    const before = (await client.run((worker) => worker.digestsTotal)) as Record<string, MetricRecord[]>;
    // Two blocks computed at once land on the two idle workers; their total runs on one, fetching the other.
    const [a, b] = [client.submit(ramp, 250_000, 1, false), client.submit(ramp, 250_000, 2, false)];
    const both = client.submit(total, a, b);
    await both.result();
    const logs = (await client.run((worker) => worker.incomingTransferLog)) as Record<string, readonly { total: number }[]>;
    const [receiver] = Object.entries(logs).find(([, log]) => log.some((entry) => entry.total === 2_000_000)) ?? [];
    assert.ok(receiver, "one worker fetched a 2 MB block");
    const byWorker = (await client.run((worker) => worker.digestsTotal)) as Record<string, MetricRecord[]>;
    const sender = Object.keys(byWorker).find((address) => address !== receiver)!;
    const gained = (address: string, match: Partial<MetricRecord>): number => sum(byWorker[address], match) - sum(before[address] ?? [], match);
    assert.ok(gained(receiver, { context: "gather-dep", activity: "network", unit: "seconds" }) > 0);
    assert.ok(gained(sender, { context: "get-data", activity: "network", unit: "seconds" }) > 0);
    assert.ok(gained(sender, { context: "get-data", activity: "memory-read", unit: "bytes" }) >= 2_000_000);
    // Dask's gather-dep and get-data digest no network bytes: they are the transfer logs' (above).
    assert.equal(sum(byWorker[receiver], { activity: "network", unit: "bytes" }) + sum(byWorker[sender], { activity: "network", unit: "bytes" }), 0);
    assert.ok(gained(sender, { context: "get-data", activity: "serialize", unit: "seconds" }) > 0);
    // The scheduler has them too, and the panel's "Send data" chart shows get-data.
    const data = await client.metricsData();
    assert.ok(sum(data.metrics, { context: "gather-dep", activity: "network", unit: "seconds" }) > 0);
    const model = fpmModel(data, DEFAULT_SELECTION);
    assert.ok(model.send?.some((slice) => slice.activity === "network" && slice.value > 0), JSON.stringify(model.send));
    assert.equal(fpmModel(data, { ...DEFAULT_SELECTION, functions: ["total"] }).send, null, "hidden while a filter is active");
    for (const future of [a, b, both]) future.release();
  });

  test("metrics digested while heartbeats are on their way all arrive, once (Dask: metrics digested during a heartbeat)", async () => {
    await span("ticks", async (id) => {
      // 4 tasks of 150 turns of ≥ 2 ms: several heartbeats (every 0.5 s) go while they digest.
      const graph = Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`tick-${i}`, [digestAcrossAwaits, "tick", 150]]));
      await get(graph, Object.keys(graph));
      const [spans, metrics, digests] = [await client.spans(), await client.metrics(), await workerDigests(client)];
      const match = { prefix: "tick", activity: "tick", unit: "count" } as const;
      assert.equal(sum(digests, match), 600);
      assert.equal(sum(metrics, match), 600);
      assert.equal(sum(spanById(spans, id).metrics, match), 600);
      assert.ok(Number.isInteger(sum(metrics, match)));
    });
  });

  test("spans nest; tasks outside any span are in the default span; each span's metrics add up to the scheduler's", async () => {
    const inc = delayed(slowInc, { name: "leaf" });
    let ids: string[] = [];
    await span("my workflow", async (workflow) => {
      const first = await span("p1", async (p1) => {
        await get({ "p1task-1": [sleepSync, 20] }, "p1task-1");
        return p1;
      });
      const second = await span("p2", async (p2) => {
        await inc(1, 10).compute();
        return p2;
      });
      ids = [workflow, first, second];
    });
    await delayed(combine, { name: "outside" })(1, 2).compute();
    const [workflow, p1, p2] = ids;
    const spans = await client.spans();
    const byId = new Map(spans.map((s) => [s.id, s]));
    assert.deepEqual(byId.get(workflow)?.name, ["my workflow"]);
    assert.deepEqual(byId.get(workflow)?.children, [p1, p2]);
    assert.deepEqual([byId.get(p1)?.name, byId.get(p1)?.parent], [["my workflow", "p1"], workflow]);
    assert.deepEqual([byId.get(p2)?.name, byId.get(p2)?.parent], [["my workflow", "p2"], workflow]);
    assert.equal(sum(byId.get(p2)!.metrics, { prefix: "leaf", unit: "seconds", activity: "thread-noncpu" }) > 0, true);
    // The parent holds its children's metrics.
    for (const [child, prefix] of [[p1, "p1task"], [p2, "leaf"]] as const) {
      assert.equal(sum(byId.get(workflow)!.metrics, { prefix, activity: "thread-noncpu" }), sum(byId.get(child)!.metrics, { prefix, activity: "thread-noncpu" }));
    }
    const outside = spans.filter((s) => s.name.length === 1 && s.name[0] === "default" && s.metrics.some((r) => r.prefix === "outside"));
    assert.equal(outside.length, 1, "the task outside every span is in a default span");
    // The root spans' metrics, idle aside, are the scheduler's execute metrics (Dask: scheduler == Σ spans).
    const metrics = await client.metrics();
    const roots = (await client.spans()).filter((s) => s.parent === null);
    const keyOf = (r: MetricRecord): string => `${r.prefix}\u0000${r.activity}\u0000${r.unit}`;
    const fromSpans = new Map<string, number>();
    for (const root of roots) for (const r of root.metrics) if (r.prefix !== "N/A") fromSpans.set(keyOf(r), (fromSpans.get(keyOf(r)) ?? 0) + r.value);
    const execute = metrics.filter((r) => r.context === "execute");
    assert.equal(fromSpans.size, execute.length);
    for (const r of execute) assert.ok(Math.abs((fromSpans.get(keyOf(r)) ?? NaN) - r.value) <= 1e-9 * Math.max(1, r.value), `${keyOf(r)}: spans ${fromSpans.get(keyOf(r))}, scheduler ${r.value}`);
  });

  test("span ids: submit outside and inside a span, a two-tag span, the same name opened three times, arrays built in a span", async () => {
    // (Different functions: a task group stays in the span of its first task, as in Dask.)
    const outside = client.submit(slowInc, 100, 1);
    let inside: typeof outside = outside;
    const fooId = await span("foo", async (id) => {
      inside = client.submit(sleepSync, 1) as unknown as typeof outside;
      return id;
    });
    await client.gather([outside, inside]);
    const spanOfFuture = (key: unknown): string => cluster.scheduler.state.spanOf(cluster.scheduler.state.slotOf(String(key))!);
    assert.equal(spanOfFuture(inside.key), fooId);
    assert.notEqual(spanOfFuture(outside.key), fooId);
    assert.deepEqual(cluster.scheduler.spans().find((s) => s.id === spanOfFuture(outside.key))?.name, ["default"]);
    const barId = await span(["foo2", "bar"], async (id) => {
      await get({ "bar-1": [sleepSync, 1] }, "bar-1");
      return id;
    });
    const three = await Promise.all([1, 2, 3].map((i) => span("again", (id) => get({ [`again${i}-1`]: [sleepSync, 1] }, `again${i}-1`).then(() => id))));
    // An array built inside a span and computed outside it: its tasks are the span's, the finalize task the default's.
    const blocks = await span("arrays", (id) => [da.ones([4, 4], { chunks: [2, 2] }), id] as const);
    await blocks[0].sum().compute();
    const spans = await client.spans();
    const bar = spanById(spans, barId);
    assert.deepEqual(bar.name, ["foo2", "bar"]);
    assert.deepEqual(spanById(spans, bar.parent!).name, ["foo2"]);
    assert.equal(new Set(three).size, 3);
    for (const id of three) assert.deepEqual(spanById(spans, id).name, ["again"]);
    const arrays = spanById(spans, blocks[1]);
    assert.deepEqual(arrays.states, { forgotten: 4 }, "the four ones blocks");
    for (const future of [outside, inside]) future.release();
  });

  test("client.visualizeMetrics() outside a notebook writes the panel as a standalone page", async () => {
    const folder = mkdtempSync(join(tmpdir(), "tsdask-cluster-fpm-"));
    try {
      // A task finished just before: its metrics come with the workers' next heartbeats, which the panel waits for.
      await get({ "lastBefore-1": [slowInc, 1, 50] }, "lastBefore-1");
      const handle = client.visualizeMetrics({ filename: join(folder, "cluster-fpm.html") });
      assert.equal(typeof handle.summary, "string", "a display handle, returned at once");
      const panel = await handle;
      assert.equal(panel, handle.value);
      assert.ok(panel.data.metrics.some((m) => m.context === "execute" && m.prefix === "lastBefore" && m.unit === "seconds" && m.value > 0), "the last task is in");
      assert.equal(panel.file, join(folder, "cluster-fpm.html"));
      const html = readFileSync(panel.file!, "utf8");
      assert.match(html, /tsdask-fpm-data/);
      assert.ok(!/<script src=/.test(html), "offline: nothing loaded from elsewhere");
      assert.equal(panel.data.source?.transfers, true);
      assert.match(panel.summary, /LocalCluster 'cluster-fpm', 2 workers, 2 threads/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

test("spilled inputs show disk-read seconds, count and bytes; spilling results disk-write", async () => {
  const options: LocalClusterOptions = { nWorkers: 1, threadsPerWorker: 1, memoryLimit: "400 MiB", memoryThresholds: { target: 0.15, spill: false, pause: false }, name: "fpm-spill" };
  await withCluster(options, async (_cluster, client) => {
    const blocks = Array.from({ length: 24 }, (_, i) => client.submit(ramp, 500_000, i, false));
    const sumAll = client.submit(total, ...blocks);
    await sumAll.result();
    const digests = await workerDigests(client);
    assert.ok(sum(digests, { prefix: "total", activity: "disk-read", unit: "count" }) >= 1);
    assert.ok(sum(digests, { prefix: "total", activity: "disk-read", unit: "bytes" }) >= 4_000_000);
    assert.ok(sum(digests, { prefix: "total", activity: "disk-read", unit: "seconds" }) > 0);
    const reads = sum(digests, { prefix: "total", activity: "memory-read", unit: "count" }) + sum(digests, { prefix: "total", activity: "disk-read", unit: "count" });
    assert.equal(reads, 24, "each input read once, from memory or from disk");
    assert.ok(sum(digests, { prefix: "ramp", activity: "disk-write", unit: "bytes" }) >= 4_000_000);
    const metrics = await client.metrics();
    assert.equal(sum(metrics, { prefix: "total", activity: "disk-read", unit: "bytes" }), sum(digests, { prefix: "total", activity: "disk-read", unit: "bytes" }));
    assert.ok(fpmModel(await client.metricsData(), { ...DEFAULT_SELECTION, unit: "bytes" }).activities.some((slice) => slice.activity === "disk-read"));
  });
});

test("a span's thread budget follows workers joining, leaving and dying while it runs", async () => {
  await withCluster({ nWorkers: 1, threadsPerWorker: 1, name: "fpm-elastic" }, async (cluster, client) => {
    const id = await span("elastic", async (spanId) => {
      const slow = client.submit(slowInc, 1, 4000);
      await sleep(300);
      await cluster.scale(2);
      await sleep(300);
      // A worker dies (the cluster replaces it), another is retired.
      const newest = cluster.processes[cluster.processes.length - 1];
      process.kill(newest.pid, "SIGKILL");
      await sleep(500);
      await cluster.scale(1);
      await slow.result();
      return spanId;
    });
    const elastic = spanById(await client.spans(), id);
    const threads = elastic.intervals!.map(([, , n]) => n);
    // 1 thread, 2 once scaled, 1 when one died (2 once replaced), 1 when retired.
    assert.deepEqual([threads[0], threads[1]], [1, 2], `threads over time ${JSON.stringify(threads)}`);
    assert.ok(threads.slice(2).includes(1), `threads over time ${JSON.stringify(threads)}`);
    const budget = elastic.intervals!.reduce((total, [from, to, n]) => total + (to - from) * n, 0);
    assert.ok(Math.abs(budget - elastic.activeCpuSeconds) < 1e-9);
    assert.ok(elastic.activeCpuSeconds > elastic.stop - elastic.enqueued, "more than one thread for part of the time");
  });
});

test("metrics asked for just before the cluster closes still have the last tasks (the workers' next heartbeats come first)", async () => {
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "fpm-close", dashboardAddress: null });
  const client = await Client.connect(cluster);
  await get({ "last-a": [sleepSync, 50], "last-b": [sleepSync, 50], "last-c": [combine, "last-a", "last-b"] }, "last-c");
  // As a notebook does with `client.visualizeMetrics()` followed by a cell that closes the cluster.
  const metrics = client.metrics();
  await cluster.close();
  const prefixes = new Set((await metrics).map((record) => record.prefix));
  assert.ok(["last-a", "last-b", "last-c"].every((prefix) => prefixes.has(prefix)), `prefixes: ${[...prefixes].join(", ")}`);
});
