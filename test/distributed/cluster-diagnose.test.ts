// Seed 003's diagnostics on a real LocalCluster (forked workers, Unix sockets, real spill files),
// one of whose workers runs with its clock 5 s ahead: task-stream phases where they must be,
// the ring's bound and Dask's start-index cursor, the workers' statistical profile (a hot
// function under its prefix, on its TypeScript lines, key and worker filters, scheduler-clock
// windows), bandwidth from the real transfer logs, MemorySampler from heartbeats, and the
// performance report's data — all on the scheduler's clock.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, LocalCluster, type LocalClusterOptions, MemorySampler, getTaskStream, get, now, performanceReport } from "../../src";
import { MEASURES } from "../../src/protocol/memory";
import { taskStreamSpec } from "../../src/protocol/plot/taskstream";
import type { TaskStreamRecord } from "../../src/protocol/records";
import { HOT_ID, findFrame } from "../diagnostics/fixtures";
import { combine, hotLoop } from "../diagnostics/hot";
import { checkHotProfile, hotGraph } from "../helpers/hot-profile";
import { inc } from "../fixtures/tasks";
import { ramp, sleep, tile, total } from "../fixtures/cluster-tasks";

const dir = mkdtempSync(join(tmpdir(), "tsdask-cluster-diagnose-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const actions = (record: TaskStreamRecord): string[] => record.startstops.map((s) => s.action);

/** Every phase of `records` lies in [t0, t1] (scheduler clock), give or take `slack` seconds. */
function assertWithin(records: readonly TaskStreamRecord[], t0: number, t1: number, slack = 0.05): void {
  for (const record of records) {
    for (const phase of record.startstops) {
      assert.ok(phase.start >= t0 - slack && phase.stop <= t1 + slack, `${record.key} ${phase.action} on ${record.worker}: ${(phase.start - t0).toFixed(3)} s after the block's start, which lasted ${(t1 - t0).toFixed(3)} s`);
    }
  }
}

describe("seed 003's diagnostics on a LocalCluster whose worker-1 runs 5 s ahead", () => {
  let cluster: LocalCluster;
  let client: Client;
  /** The worker with the skewed clock. */
  let skewed: string;

  before(async () => {
    cluster = await LocalCluster.start({
      nWorkers: 2,
      threadsPerWorker: 1,
      memoryLimit: "1 GiB",
      dashboardAddress: null,
      name: "diagnose",
      simulatedClockOffsets: [0, 5],
      taskStreamLength: 300,
    });
    client = await Client.connect(cluster);
    skewed = [...cluster.workers.values()].find((ws) => ws.name === "worker-1")!.address;
    // Let the workers measure their clock offsets from a few heartbeats.
    await new Promise((resolve) => setTimeout(resolve, 1200));
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  test("getTaskStream of Futures: an input from a peer shows transfer (with its source), deserialize, then compute, on the scheduler's clock", async () => {
    const t0 = now();
    const ts = await getTaskStream(async () => {
      const a = client.submit(ramp, 1_000_000, 1, true);
      const b = client.submit(ramp, 1_000_000, 2, true);
      await client.gather([a, b]);
      const whereA = cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf(String(a.key))!)[0].address;
      const whereB = cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf(String(b.key))!)[0].address;
      assert.notEqual(whereA, whereB, "the inputs were placed on different workers");
      const sum = await client.submit(total, a, b).result();
      return { whereA, whereB, sum };
    }, { plot: "save", filename: join(dir, "task-stream.html") });
    const t1 = now();
    assert.equal(ts.result.sum, total(ramp(1_000_000, 1, true), ramp(1_000_000, 2, true)));
    assert.equal(ts.data.length, 3, "the block's three tasks, each once (Futures fire no callbacks: they come from the scheduler's stream)");
    assert.equal(ts.dropped, 0);
    const sum = ts.data.find((r) => r.prefix === "total")!;
    assert.deepEqual(actions(sum), ["transfer", "deserialize", "compute"]);
    const [transfer, deserialize, compute] = sum.startstops;
    const source = sum.worker === ts.result.whereA ? ts.result.whereB : ts.result.whereA;
    assert.equal(transfer.source, source, "the transfer names the peer the input came from");
    assert.ok(transfer.stop <= deserialize.start + 1e-9 && deserialize.stop <= compute.start + 1e-9, "in order");
    for (const ramped of ts.data.filter((r) => r.prefix === "ramp")) assert.deepEqual(actions(ramped), ["compute"]);
    assert.deepEqual(new Set(ts.data.map((r) => r.worker)), new Set(cluster.workers.keys()), "both workers, the skewed one included");
    assertWithin(ts.data, t0, t1);
    // The plot: one row per worker thread, by name; the transfer red, its source in the hover.
    assert.ok(ts.figure?.file !== undefined && existsSync(ts.figure.file));
    const marks = (ts.figure.spec.data as { values: Record<string, unknown>[] }).values;
    assert.deepEqual([...new Set(marks.map((m) => m.row))].sort(), ["worker-0", "worker-1"]);
    const red = marks.find((m) => m.phase === "transfer")!;
    assert.equal(red.color, "transfer");
    assert.equal(red.from, cluster.workers.get(source)!.name);
    assert.ok(marks.some((m) => m.phase === "deserialize" && m.color === "deserialize"));
    const x = ts.figure.spec.encoding as { x: { scale: { domain: [number, number] } } };
    assert.ok(x.x.scale.domain[1] < t1 - t0 + 0.1, `the time axis spans ${x.x.scale.domain[1]} s: no worker 5 s off`);
  });

  test("getTaskStream of a graph computation: each task once, with the cluster's phases", async () => {
    const dsk = { x: [ramp, 100_000, 0, true], y: [ramp, 100_000, 1, true], z: [total, "x", "y"] };
    const ts = await getTaskStream(() => get(dsk, "z"));
    assert.equal(ts.result, total(ramp(100_000, 0, true), ramp(100_000, 1, true)));
    // The keys as Dask gives them (str(key)): the graph's own string keys, unquoted.
    assert.deepEqual(ts.data.map((r) => r.key).sort(), ["x", "y", "z"]);
    assert.ok(ts.data.every((r) => r.worker.startsWith("unix://") && r.startstops.some((s) => s.action === "compute")));
  });

  test("the ring keeps its bound; getTaskStream says what it dropped; client.getTaskStream bisects and counts", async () => {
    const before = cluster.scheduler.taskStream.index;
    const t0 = now();
    const ts = await getTaskStream(() => client.gather(client.map(inc, Array.from({ length: 360 }, (_, i) => i))));
    const t1 = now();
    assert.equal(cluster.scheduler.taskStream.length, 300, "taskStreamLength: 300");
    assert.equal(cluster.scheduler.taskStream.index, before + 360);
    assert.equal(ts.data.length, 300, "the newest 300 of the block's 360");
    assert.equal(ts.dropped, 60);
    assert.deepEqual(ts.data.map((r) => r.key), cluster.scheduler.getTaskStream().map((r) => r.key));
    assert.equal((await client.getTaskStream({ count: 10 })).length, 10);
    const late = await client.getTaskStream({ start: t1 + 10 });
    assert.deepEqual(late, [], "nothing stopped after the block");
    const during = await client.getTaskStream({ start: t0, stop: t1 + 0.1 });
    assert.equal(during.length, 300);
    assert.equal((await client.getTaskStream({ startIndex: before + 350 })).length, 10, "Dask's start_index cursor");
    // Dask's relative times: "20 s" back from now holds the whole block; an unknown unit is named.
    assert.equal((await client.getTaskStream({ start: "20 s" })).length, 300);
    await assert.rejects(client.getTaskStream({ start: "10 parsecs" }), /Option start of the task stream must be a duration .*unknown unit "parsecs"/);
    await assert.rejects(client.getTaskStream({ title: "x" } as never), /Unknown client.getTaskStream option "title"/);
  });

  test("the workers' profile: the hot function dominates its prefix on its TypeScript lines; key, worker and kind select; windows on the scheduler's clock", async () => {
    const t0 = now();
    const ts = await getTaskStream(() => get(hotGraph(), "all"));
    const t1 = now();
    assert.deepEqual(new Set(ts.data.filter((r) => r.prefix === "burn").map((r) => r.worker)).size, 2, "burn ran on both workers");

    const burn = await checkHotProfile(client, t0, t1);
    assert.equal((await client.profile({ key: "burn-2", start: t0, stop: t1 })).count, burn.count, "a key stands for its prefix");
    const all = await client.profile({ start: t0, stop: t1 });
    assert.ok(all.count >= burn.count);
    // Each worker's share, the skewed one by name too; the administrative side holds no task code.
    const bySkewed = await client.profile({ key: "burn", start: t0, stop: t1, workers: ["worker-1"] });
    const byOther = await client.profile({ key: "burn", start: t0, stop: t1, workers: [[...cluster.workers.keys()].find((a) => a !== skewed)!] });
    assert.ok(bySkewed.count > 0 && byOther.count > 0, `worker-1 ${bySkewed.count}, worker-0 ${byOther.count}`);
    assert.equal(bySkewed.count + byOther.count, burn.count);
    const admin = await client.profile({ kind: "administrative", start: t0, stop: t1 });
    assert.equal(findFrame(admin, HOT_ID), undefined);
    await assert.rejects(client.profile({ workers: ["worker-9"] }), /No worker "worker-9"/);
    await assert.rejects(client.profile({ kind: "server" as never }), /kind must be "compute" or "administrative"/);
    // Windows of both workers fall in the block (one cycle either side), the +5 s worker's too.
    const { windows } = await client.diagnostics.profile({ start: t0, stop: t1 });
    const withSamples = windows.filter((w) => Object.keys(w.compute).length > 0);
    assert.deepEqual(new Set(withSamples.map((w) => w.source)), new Set(cluster.workers.keys()));
    for (const window of withSamples) {
      assert.ok(window.time >= t0 - 1.05 && window.stop <= t1 + 1.05, `${window.source}'s window starts ${(window.time - t0).toFixed(3)} s after the block's start`);
    }
    // filename: the interactive profile as one offline page.
    const file = join(dir, "profile.html");
    await client.profile({ key: "burn", start: t0, stop: t1, filename: file });
    const html = readFileSync(file, "utf8");
    assert.match(html, /id="tsdask-profile-data"/);
    assert.doesNotMatch(html, /<script[^>]+src=/, "no script loaded from anywhere");
    // plot: Dask's (data, figure), as { data, figure }; a handle, not a promise, and the tree is the same.
    const plottedFile = join(dir, "profile-plotted.html");
    const handle = client.profile({ key: "burn", start: t0, stop: t1, plot: true, filename: plottedFile });
    assert.equal(handle.value, undefined, "the workers have not answered yet");
    const plotted = await handle;
    assert.equal(plotted.data.count, burn.count);
    assert.ok(findFrame(plotted.data, HOT_ID) !== undefined);
    assert.equal(plotted.figure.file, plottedFile);
    assert.match(plotted.figure.summary, /^Worker profile \(compute\): \d+ samples/);
    assert.throws(() => client.profile({ plot: true, workers: ["worker-9"] }), /No worker "worker-9"/, "a plotting call fails at the call");
  });

  test("the profiler never stops a task nor loses its samples: one long task spans several windows, sampled throughout", async () => {
    const t0 = now();
    const ts = await getTaskStream(() => get({ long: [hotLoop, 30_000] }, "long"));
    const t1 = now();
    const compute = ts.data[0].startstops.find((s) => s.action === "compute")!;
    const seconds = compute.stop - compute.start;
    const { windows, interval } = await client.diagnostics.profile({ start: t0, stop: t1 }, [ts.data[0].worker]);
    const counted = windows.map((w) => w.compute.long?.count ?? 0);
    const samples = counted.reduce((sum, count) => sum + count, 0);
    assert.ok(counted.filter((count) => count > 0).length >= 2 || seconds < 1, `${seconds.toFixed(2)} s task in windows ${counted}`);
    // V8 samples on its own thread: a crowded machine delays some ticks, none is dropped by us.
    assert.ok(samples >= 0.5 * (seconds / interval), `${samples} samples for a ${seconds.toFixed(2)} s task at ${interval} s`);
    assert.ok(samples <= 1.1 * (seconds / interval) + 5, `${samples} samples: none counted twice`);
  });

  test("bandwidth from the workers' real transfer logs: by type and by worker pair, on the scheduler's clock", async () => {
    const t0 = now();
    const a = client.submit(ramp, 2_000_000, 3, true);
    const b = client.submit(ramp, 2_000_000, 4, true);
    await client.gather([a, b]);
    await client.submit(total, a, b).result();
    const t1 = now();
    const incoming = await client.bandwidth({ start: t0, stop: t1 });
    assert.equal(incoming.transfers, 1);
    assert.equal(incoming.bytes, 16_000_000);
    assert.deepEqual(incoming.byType.map((t) => t.type), ["Float64Array"]);
    assert.equal(incoming.byWorkers.length, 1);
    const [pair] = incoming.byWorkers;
    assert.notEqual(pair.source, pair.destination);
    assert.ok(cluster.workers.has(pair.source) && cluster.workers.has(pair.destination));
    assert.ok(incoming.total > 0 && Number.isFinite(incoming.total));
    const outgoing = await client.bandwidth({ direction: "outgoing", start: t0, stop: t1 });
    assert.deepEqual(outgoing.byWorkers.map((p) => [p.source, p.destination]), [[pair.source, pair.destination]], "both sides name the same pair");
    const logs = await client.run((worker) => worker.incomingTransferLog);
    const entries = Object.values(logs).flat().filter((entry) => entry.stop >= t0);
    for (const entry of entries) assert.ok(entry.start >= t0 - 0.05 && entry.stop <= t1 + 0.05, `a transfer ${(entry.start - t0).toFixed(3)} s into the block`);
    const file = join(dir, "bandwidth.html");
    const plotted = await client.bandwidth({ start: t0, stop: t1, plot: "save", filename: file });
    assert.match(readFileSync(file, "utf8"), /worker-[01]/, "the plot names the workers");
    assert.deepEqual(plotted.data, incoming, "the data as without plot: workers by address");
    assert.equal(plotted.figure.file, file);
    assert.throws(() => client.bandwidth({ plot: true, direction: "sideways" as never }), /Option direction must be "incoming" or "outgoing"/);
    a.release();
    b.release();
  });

  test("a transfer into the +5 s worker: its task-stream phase, its incoming log and the sender's outgoing log line up on the scheduler's clock", async () => {
    const holder = (future: { key: unknown }): string => cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf(String(future.key))!)[0].address;
    const t0 = now();
    // Four inputs over two idle workers: each worker holds some.
    const inputs = [7, 8, 9, 10].map((start) => client.submit(ramp, 1_000_000, start, true));
    await client.gather(inputs);
    const onSkewed = inputs.find((input) => holder(input) === skewed);
    const onOther = inputs.find((input) => holder(input) !== skewed);
    assert.ok(onSkewed !== undefined && onOther !== undefined, `the inputs are on ${inputs.map(holder).join(", ")}`);
    const sender = holder(onOther);
    // The tiled input (32 MB) stays where it is made, on the skewed worker: the sum runs there and fetches the other 8 MB.
    const ts = await getTaskStream(() => client.submit(total, client.submit(tile, onSkewed, 4), onOther).result());
    const t1 = now();
    const sum = ts.data.find((r) => r.prefix === "total")!;
    assert.equal(sum.worker, skewed);
    assert.deepEqual(actions(sum), ["transfer", "deserialize", "compute"]);
    const transfer = sum.startstops[0];
    assert.equal(transfer.source, sender);
    assertWithin(ts.data, t0, t1);
    const incoming = (await client.run((worker) => worker.incomingTransferLog))[skewed].filter((entry) => entry.stop >= t0);
    const outgoing = (await client.run((worker) => worker.outgoingTransferLog))[sender].filter((entry) => entry.stop >= t0);
    assert.equal(incoming.length, 1, "the skewed worker fetched once");
    assert.equal(outgoing.length, 1, "its peer sent once");
    const [received] = incoming;
    const [sent] = outgoing;
    assert.equal(received.who, sender);
    assert.equal(sent.who, skewed);
    for (const entry of [received, sent]) assert.ok(entry.start >= t0 - 0.05 && entry.stop <= t1 + 0.05, `a transfer ${(entry.start - t0).toFixed(3)} s into a ${(t1 - t0).toFixed(3)} s block`);
    // One transfer seen from both ends and from the scheduler: the same moment, within the clocks' error.
    assert.ok(Math.abs(received.start - transfer.start) < 0.05 && Math.abs(received.stop - transfer.stop) < 0.05, `log ${received.start - t0}–${received.stop - t0}, phase ${transfer.start - t0}–${transfer.stop - t0}`);
    assert.ok(sent.start >= received.start - 0.05 && sent.stop <= received.stop + 0.05, `sent ${sent.start - t0}–${sent.stop - t0} within received ${received.start - t0}–${received.stop - t0}`);
    for (const input of inputs) input.release();
  });

  test("MemorySampler: the cluster's heartbeat memory by default, every measure, the first sample at once; align starts each series at 0", async () => {
    const ms = new MemorySampler();
    assert.match(ms.source.description, /heartbeats/);
    const held = client.map((i: number) => new Float64Array(1_000_000).fill(i), [1, 2, 3]);
    const started = now();
    await ms.sample("hold", async () => {
      await client.gather(held);
      await new Promise((resolve) => setTimeout(resolve, 1300));
    }, { measure: "managed", interval: 0.1 });
    const [first, ...rest] = ms.samples.get("hold")!;
    assert.ok(first[0] - started < 0.05, "the first sample is taken at once");
    assert.ok(rest.length >= 5);
    assert.ok(rest.some(([, bytes]) => bytes >= 24_000_000), `the held results show up as managed memory: ${rest.map(([, b]) => b)}`);
    for (const measure of MEASURES) {
      await ms.sample(measure, () => new Promise((resolve) => setTimeout(resolve, 120)), { measure, interval: 0.05 });
      assert.ok(ms.samples.get(measure)!.length >= 1 && ms.samples.get(measure)!.every(([, bytes]) => Number.isFinite(bytes) && bytes >= 0), measure);
    }
    assert.ok(ms.samples.get("process")![0][1] > 0, "process memory is known from the workers' registration");
    await ms.sample("snake", () => undefined, { measure: "unmanaged_recent" });
    const plot = await ms.plot({ align: true, save: true, filename: join(dir, "memory.html") });
    const values = (plot.spec.data as { values: { label: string; x: number }[] }).values;
    for (const label of ["hold", "process"]) assert.equal(values.find((v) => v.label === label)!.x, 0, `${label} starts at 0 s`);
    for (const future of held) future.release();
  });

  test("performanceReport of a cluster block: the cluster's tasks, workers, profiles, transfers, system, metrics and memory", async () => {
    const file = join(dir, "dask-report.html");
    const t0 = now();
    const report = await performanceReport({ filename: file }, async () => {
      const a = client.submit(ramp, 500_000, 5, true);
      const b = client.submit(ramp, 500_000, 6, true);
      await client.gather([a, b]);
      await client.submit(total, a, b).result();
      await get({ h: [hotLoop, 3000], l: [hotLoop, 3000], s: [combine, "h", "l"] }, "s");
    });
    const t1 = now();
    const { summary } = report.data;
    assert.equal(summary.tasks, 6);
    assert.equal(summary.workers, 2);
    assert.equal(summary.threads, 2);
    assert.equal(summary.memory, 2 * 2 ** 30, "the workers' memory limits");
    assert.match(summary.scheduler, /LocalCluster 'diagnose'/);
    const phases = summary.phases.map((p) => p.action);
    assert.ok(phases.includes("compute") && phases.includes("transfer") && phases.every((p) => ["compute", "transfer", "deserialize"].includes(p)), phases.join(", "));
    const offsets = Object.fromEntries(summary.workerList!.map((w) => [w.name, w.clockOffset]));
    assert.ok(Math.abs(offsets["worker-1"] - 5) < 0.1 && Math.abs(offsets["worker-0"]) < 0.1, JSON.stringify(offsets));
    assert.ok(report.data.computeProfile.data !== undefined);
    assert.ok(report.data.administrativeProfile.data !== undefined);
    assert.ok(report.data.schedulerProfile?.data !== undefined, "the scheduler's own thread, in this process");
    assert.ok(report.data.bandwidth.data !== undefined, report.data.bandwidth.note);
    assert.ok(report.data.system.data !== undefined, report.data.system.note);
    assert.ok(report.data.fineMetrics?.data !== undefined && report.data.fineMetrics.data.metrics.some((m) => m.context === "execute" && m.prefix === "ramp"));
    assert.ok(report.data.memory.data !== undefined);
    // The task stream's time axis is the block's, not 5 s wider.
    const stream = report.data.taskStream.data as { encoding: { x: { scale: { domain: [number, number] } } } };
    assert.ok(stream.encoding.x.scale.domain[1] <= t1 - t0 + 0.05, `the stream spans ${stream.encoding.x.scale.domain[1]} s`);
    assert.ok(existsSync(file));
  });
});

describe("a cluster of 2 workers × 2 threads", () => {
  test("the task-stream plot has one row per worker thread, named after its worker", async () => {
    const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 2, dashboardAddress: null, name: "diagnose-threads" });
    try {
      const client = await Client.connect(cluster);
      try {
        // Eight 300 ms sleeps on four threads: every thread runs two.
        const ts = await getTaskStream(() => client.gather(client.map(sleep, Array.from({ length: 8 }, (_, i) => 300 + i))), { plot: "save", filename: join(dir, "threads.html") });
        const threads = new Set(ts.data.map((r) => `${r.worker} ${r.thread}`));
        assert.equal(threads.size, 4, [...threads].join(", "));
        const marks = (ts.figure!.spec.data as { values: { row: string; phase: string }[] }).values;
        const rows = [...new Set(marks.map((m) => m.row))].sort();
        const expected = ts.data.map((r) => `${cluster.workers.get(r.worker)!.name}-${r.thread}`);
        assert.deepEqual(rows, [...new Set(expected)].sort());
        assert.deepEqual(rows.map((row) => row.replace(/-\d+$/, "")), ["worker-0", "worker-0", "worker-1", "worker-1"]);
        assert.equal((ts.figure!.spec.title as { subtitle: string }).subtitle, "8 tasks on 4 threads");
      } finally {
        await client.close();
      }
    } finally {
      await cluster.close();
    }
  });
});

describe("a spilled input", () => {
  test("a result larger than the spill target goes straight to disk (disk-write); its user reads it back (disk-read)", async () => {
    const options: LocalClusterOptions = {
      nWorkers: 1,
      threadsPerWorker: 1,
      memoryLimit: "400 MiB",
      memoryThresholds: { target: 0.15, spill: false, pause: false },
      name: "diagnose-spill",
      dashboardAddress: null,
    };
    const cluster = await LocalCluster.start(options);
    try {
      const client = await Client.connect(cluster);
      const ts = await getTaskStream(() => get({ big: [ramp, 10_000_000, 1, true], sum: [total, "big"] }, "sum"));
      const big = ts.data.find((r) => r.prefix === "big")!;
      const sum = ts.data.find((r) => r.prefix === "sum")!;
      assert.deepEqual(actions(big), ["compute", "disk-write"], "80 MB over a 60 MB target: written at once");
      assert.deepEqual(actions(sum), ["disk-read", "compute"]);
      assert.ok(sum.startstops[0].stop <= sum.startstops[1].start + 1e-9);
      assert.equal(ts.result, (10_000_000 * 10_000_001) / 2);
      const marks = taskStreamSpec(ts.table, { width: 600, title: "t", palette: ["#4c78a8"] });
      const colors = (marks.data as { values: { phase: string; color: string }[] }).values.filter((v) => v.phase.startsWith("disk")).map((v) => v.color);
      assert.deepEqual(colors.sort(), ["disk-read", "disk-write"], "orange in the plot");
      await client.close();
    } finally {
      await cluster.close();
    }
  });
});
