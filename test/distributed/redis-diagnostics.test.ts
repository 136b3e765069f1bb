// Seed 003's cluster diagnostics on a Redis cluster (real redis-server, real `tsdask worker`
// processes, one with its clock 1000 s ahead): the workers' statistical profile (a hot function
// under its prefix, on its TypeScript lines, windows on the client's clock), MemorySampler from
// the workers' heartbeats, and the performance report's tabs — as on a LocalCluster. A worker
// started with --no-profile is left out of profiles; a frozen one does not hold client.profile.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client, MemorySampler, get, getTaskStream, nbytes, now, performanceReport } from "../../src";
import { parseWorkerArgs } from "../../src/cli/worker";
import { MEASURES } from "../../src/protocol/memory";
import { HOT_ID, findFrame } from "../diagnostics/fixtures";
import { combine, filled, hotLoop } from "../diagnostics/hot";
import { checkHotProfile, hotGraph } from "../helpers/hot-profile";
import { ramp, total } from "../fixtures/cluster-tasks";
import { slowly } from "../fixtures/redis-tasks";
import { type RedisServer, expectEmpty, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

const dir = mkdtempSync(join(tmpdir(), "tsdask-redis-diagnostics-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("tsdask worker: the profiler's options", () => {
  test("--profile-interval and --profile-cycle set it, --no-profile turns it off; mistakes name the option", () => {
    assert.deepEqual(parseWorkerArgs(["redis://h:1", "--profile-interval", "0.02"]).profile, { interval: 0.02, cycle: 1 });
    assert.deepEqual(parseWorkerArgs(["redis://h:1", "--profile-cycle", "2"]).profile, { interval: 0.01, cycle: 2 });
    assert.equal(parseWorkerArgs(["redis://h:1", "--no-profile"]).profile, false);
    assert.equal(parseWorkerArgs(["redis://h:1"]).profile, undefined, "Dask's defaults");
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--profile-interval", "often"]), /--profile-interval needs a positive number/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--profile-interval", "2", "--profile-cycle", "1"]), /cycle \(1 s\) must be at least the interval/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--no-profile", "--profile-cycle", "1"]), /--no-profile turns the profiler off/);
  });
});

describe("seed 003's diagnostics on a Redis cluster whose worker w2 runs 1000 s ahead", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  const workers: WorkerProcess[] = [];

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    workers.push(await startWorker(server.url, { name: "w1", nthreads: 1, extraArgs: ["--memory-limit", "1 GiB"] }));
    workers.push(await startWorker(server.url, { name: "w2", nthreads: 1, extraArgs: ["--memory-limit", "1 GiB"], env: { TSDASK_CLOCK_OFFSET: "1000" } }));
    // Every result through Redis, whatever its size: the reads from peer "redis" are what these
    // diagnostics show (those of results kept by their workers: redis-peers-data.test.ts).
    client = await Client.connect(server.url, { name: "diagnose", holdAbove: 2 ** 40 });
    await waitFor("w2's clock offset from its heartbeats", () => Math.abs((client.scheduler.workers.get("w2")?.clockOffset ?? 0) - 1000) < 0.5, 10);
  });
  after(async () => {
    await client?.close();
    await Promise.all(workers.map((worker) => worker.stop()));
    await expectEmpty(redis);
    redis.disconnect();
    await server?.stop();
  });

  test("client.profile: the hot function dominates its prefix on its TypeScript lines; both workers' windows on the client's clock", async () => {
    const t0 = now();
    const ts = await getTaskStream(() => get(hotGraph(), "all"));
    const t1 = now();
    assert.equal(new Set(ts.data.filter((r) => r.prefix === "burn").map((r) => r.worker)).size, 2, "burn ran on both workers");
    const burn = await checkHotProfile(client, t0, t1);
    const byW1 = await client.profile({ key: "burn", start: t0, stop: t1, workers: ["w1"] });
    const byW2 = await client.profile({ key: "burn", start: t0, stop: t1, workers: ["w2"] });
    assert.ok(byW1.count > 0 && byW2.count > 0, `w1 ${byW1.count}, w2 ${byW2.count}`);
    assert.equal(byW1.count + byW2.count, burn.count);
    const admin = await client.profile({ kind: "administrative", start: t0, stop: t1 });
    assert.ok(admin.count > 0, "the workers' main threads are sampled too");
    assert.equal(findFrame(admin, HOT_ID), undefined, "no task code in the administrative profile");

    // The windows of both workers fall in the block (one cycle either side): w2's are 1000 s off on its own clock.
    const { windows } = await client.diagnostics.profile({ start: t0, stop: t1 });
    const withSamples = windows.filter((w) => Object.keys(w.compute).length > 0);
    assert.deepEqual(new Set(withSamples.map((w) => w.source)), new Set(["w1", "w2"]));
    for (const window of withSamples) {
      assert.ok(window.time >= t0 - 1.05 && window.stop <= t1 + 1.05, `${window.source}'s window starts ${(window.time - t0).toFixed(3)} s after the block's start`);
    }
    // Each burn task's samples lie within its own compute phase (task stream and profile share a clock).
    for (const record of ts.data.filter((r) => r.prefix === "burn")) {
      const compute = record.startstops.find((s) => s.action === "compute")!;
      const own = windows.filter((w) => w.source === record.worker && w.compute.burn !== undefined);
      assert.ok(own.some((w) => w.time <= compute.stop && w.stop >= compute.start), `${record.key} on ${record.worker}: a window with burn samples overlaps its compute phase`);
    }
  });

  test("MemorySampler: heartbeat memory of the Redis workers, every measure; a task's input shows as managed while it runs", async () => {
    const ms = new MemorySampler();
    assert.match(ms.source.description, /heartbeats/);
    const started = now();
    await ms.sample("hold", () => get({ data: [filled, 2_000_000], held: [slowly, 2500, "data"], n: [combine, "held"] }, "n"), { measure: "managed", interval: 0.1 });
    const [first, ...rest] = ms.samples.get("hold")!;
    assert.ok(first[0] - started < 0.1, "the first sample is taken at once");
    assert.ok(rest.length >= 10);
    assert.ok(
      rest.some(([, bytes]) => bytes >= 16_000_000),
      `the 16 MB input held by the running task shows up as managed memory: ${rest.map(([, b]) => b).join(", ")}`,
    );
    await waitFor("managed memory to fall back once the task is done", () => client.scheduler.memory().managed < 16_000_000, 5);
    for (const measure of MEASURES) {
      await ms.sample(measure, () => new Promise((resolve) => setTimeout(resolve, 120)), { measure, interval: 0.05 });
      assert.ok(ms.samples.get(measure)!.length >= 1 && ms.samples.get(measure)!.every(([, bytes]) => Number.isFinite(bytes) && bytes >= 0), measure);
    }
    assert.ok(ms.samples.get("process")![0][1] > 0, "the workers' process memory");
    const plot = await ms.plot({ align: true, save: true, filename: join(dir, "memory.html") });
    assert.ok(existsSync(join(dir, "memory.html")));
    assert.ok((plot.spec.data as { values: unknown[] }).values.length > 0);
  });

  test("a result's nbytes is its size in memory (Dask's sizeof, as a LocalCluster worker reports), not its stored size", async () => {
    const words = Array.from({ length: 500 }, (_, i) => `word-${i}`);
    const before = client.scheduler.taskStream.index;
    assert.deepEqual(await get({ words: [slowly, 0, words] }, "words"), words);
    const [record] = client.scheduler.getTaskStream({ startIndex: before });
    assert.equal(record.nbytes, nbytes(words));
    assert.equal(record.type, "Array");
  });

  test("performanceReport of a Redis computation: task stream, both profiles, bandwidth with peer redis, memory, system and metrics", async () => {
    const file = join(dir, "dask-report.html");
    const t0 = now();
    const report = await performanceReport({ filename: file }, async () => {
      const a = client.submit(ramp, 500_000, 5, true);
      const b = client.submit(ramp, 500_000, 6, true);
      await client.submit(total, a, b).result();
      await get({ h: [hotLoop, 3000], l: [hotLoop, 3000], s: [combine, "h", "l"] }, "s");
      a.release();
      b.release();
    });
    const t1 = now();
    assert.ok(existsSync(file));
    const { summary } = report.data;
    assert.equal(summary.tasks, 6);
    assert.equal(summary.workers, 2);
    assert.equal(summary.memory, 2 * 2 ** 30, "the workers' memory limits");
    assert.match(summary.scheduler, /redis:\/\/127\.0\.0\.1/);
    const phases = summary.phases.map((p) => p.action);
    assert.ok(phases.includes("compute") && phases.includes("transfer"), phases.join(", "));
    const offsets = Object.fromEntries(summary.workerList!.map((w) => [w.name, w.clockOffset]));
    assert.ok(Math.abs(offsets.w2 - 1000) < 0.5 && Math.abs(offsets.w1) < 0.5, JSON.stringify(offsets));
    assert.ok(report.data.computeProfile.data !== undefined, report.data.computeProfile.note);
    assert.ok(JSON.stringify(report.data.computeProfile.data).includes("hotLoop"), "the hot function in the compute profile");
    assert.ok(report.data.administrativeProfile.data !== undefined, report.data.administrativeProfile.note);
    assert.ok(report.data.bandwidth.data !== undefined, report.data.bandwidth.note);
    assert.match(JSON.stringify(report.data.bandwidth.data.workers), /"redis"/, "reads of inputs from Redis, peer redis");
    assert.ok(report.data.memory.data !== undefined, report.data.memory.note);
    assert.ok(report.data.system.data !== undefined, report.data.system.note);
    assert.ok(report.data.fineMetrics?.data?.metrics.some((m) => m.context === "execute" && m.prefix === "ramp"), "execute metrics of the block");
    assert.ok(report.data.fineMetrics?.data?.metrics.some((m) => m.context === "gather-dep" && m.activity === "network"), "the reads from Redis");
    // The Worker Logs tab: each Redis worker's start lines, by its name.
    const logs = report.data.workerLogs.data ?? [];
    assert.ok(logs.length >= 2 && logs.every((worker) => worker.lines.some((line) => line.message === `Start worker at: ${worker.address}`)), JSON.stringify(logs).slice(0, 500));
    // The task stream's time axis is the block's, not 1000 s wider.
    const stream = report.data.taskStream.data as { encoding: { x: { scale: { domain: [number, number] } } } };
    assert.ok(stream.encoding.x.scale.domain[1] <= t1 - t0 + 0.05, `the stream spans ${stream.encoding.x.scale.domain[1]} s`);
  });

  test("a worker started with --no-profile is left out of profiles; a frozen worker does not hold client.profile", async () => {
    const quiet = await startWorker(server.url, { name: "w3", nthreads: 1, extraArgs: ["--no-profile"] });
    try {
      await waitFor("w3 to join", () => client.scheduler.workers.has("w3"), 10);
      const asked = await client.scheduler.profileWindows({ start: now() - 60 });
      assert.deepEqual([...asked.workers].sort(), ["w1", "w2"], "w3 answers that it does not profile");
      assert.ok(asked.windows.every((w) => w.source !== "w3"));

      process.kill(quiet.pid, "SIGSTOP");
      const asking = performance.now();
      const frozen = await client.scheduler.profileWindows({ start: now() - 60 });
      const seconds = (performance.now() - asking) / 1000;
      assert.deepEqual([...frozen.workers].sort(), ["w1", "w2"]);
      assert.ok(seconds < 9, `client.profile answered after ${seconds.toFixed(1)} s, before the frozen worker's registration expired`);
      process.kill(quiet.pid, "SIGCONT");
    } finally {
      await quiet.stop();
    }
    await waitFor("w3 to leave", () => !client.scheduler.workers.has("w3"), 15);
    assert.ok((await client.profile({ start: now() - 60 })).count > 0, "the cluster still profiles");
  });
});
