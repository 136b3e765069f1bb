// A cluster on the dashboard, on the real thing (forked workers, heartbeats, loopback HTTP): a
// Client feeds the kernel's publisher while open — summary with the dashboard link, workers, memory,
// progress of its computations by prefix (live while they run, then their outcome), fine
// performance metrics, the task stream, bandwidth and the workers' profile — and nothing when nobody listens; a
// LocalCluster serves its own dashboard page, several clusters on different ports.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, LocalCluster, dashboardPublisher, get, span } from "../../src";
import { DEFAULT_SELECTION, type FpmData, IDLE_PREFIX, fpmModel, fpmOptions } from "../../src/protocol/fpm";
import type { ComputationProgress, DashboardSnapshot } from "../../src/protocol/dashboard";
import { fail, slowInc } from "../fixtures/cluster-client-tasks";
import { sleep as sleepTask, spin } from "../fixtures/tasks";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** `n` slowInc tasks of `ms` each, and a sum of them: the graph, and the key to ask for. */
function slowGraph(name: string, n: number, ms: number): { dsk: Record<string, unknown>; key: string } {
  const dsk: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) dsk[`${name}-${i}`] = [slowInc, i, ms];
  dsk[`${name}total`] = [(...xs: number[]) => xs.reduce((a, b) => a + b, 0), ...Object.keys(dsk)];
  return { dsk, key: `${name}total` };
}

/** The newest snapshot that passes `check`. */
const newest = (snapshots: readonly DashboardSnapshot[], check: (s: DashboardSnapshot) => boolean): DashboardSnapshot | undefined =>
  [...snapshots].reverse().find(check);

const runOf = (snapshot: DashboardSnapshot, label: string): ComputationProgress | undefined => snapshot.progress?.find((run) => run.label === label);

describe("a Client on the notebook's dashboard feed", () => {
  let cluster: LocalCluster;
  let client: Client;
  const seen: DashboardSnapshot[] = [];
  let unsubscribe: () => void;

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, memoryLimit: "1 GiB", name: "feed-tests", dashboardAddress: "127.0.0.1:0" });
    client = await Client.connect(cluster);
    unsubscribe = dashboardPublisher.subscribe((snapshot) => void seen.push(snapshot));
  });

  after(async () => {
    unsubscribe?.();
    await client?.close();
    await cluster?.close();
  });

  test("the cluster, its workers and memory, with the dashboard link", async () => {
    const snapshot = await until("a snapshot with the workers", () => newest(seen, (s) => s.workers?.length === 2));
    assert.deepEqual(snapshot.cluster, {
      name: "LocalCluster 'feed-tests'",
      scheduler: cluster.scheduler.transport.description,
      status: "running",
      workers: 2,
      threads: 2,
      memoryLimit: 2 * 2 ** 30,
      dashboardLink: cluster.dashboardLink!,
    });
    assert.match(cluster.dashboardLink!, /^http:\/\/127\.0\.0\.1:\d+\/status$/);
    assert.equal(client.dashboardLink, cluster.dashboardLink);
    for (const worker of snapshot.workers!) {
      assert.equal(worker.nthreads, 1);
      assert.equal(worker.memoryLimit, 2 ** 30);
      assert.ok(cluster.workers.has(worker.address));
    }
    // Heartbeats have reported the workers' process memory.
    const memory = await until("memory from heartbeats", () => newest(seen, (s) => (s.memory?.process ?? 0) > 0)?.memory);
    assert.ok(memory.process >= memory.managed);
  });

  test("a computation's progress grows while it runs, by prefix, then it is finished; metrics and task stream follow", async () => {
    // 60 tasks of 60 ms on 2 threads: about 2 s, several snapshots.
    const { dsk, key } = slowGraph("slow", 60, 60);
    const from = seen.length;
    const result = await get(dsk, key);
    assert.equal(result, (60 * 61) / 2);
    const label = "slowtotal";
    const finished = await until("the finished computation", () => seen.slice(from).find((s) => runOf(s, label)?.state === "finished"));
    const during = seen.slice(from).map((s) => runOf(s, label)).filter((run) => run?.state === "running") as ComputationProgress[];
    assert.ok(during.length >= 2, `snapshots while it ran: ${during.length}`);
    const done = during.map((run) => run.done);
    assert.deepEqual([...done].sort((a, b) => a - b), done, "never backwards");
    assert.ok(done.some((d) => d > 0 && d < 61), `seen part-way: ${done.join(", ")}`);
    const run = runOf(finished, label)!;
    assert.deepEqual({ done: run.done, total: run.total }, { done: 61, total: 61 });
    assert.deepEqual(run.groups, [
      { name: "slow", done: 60, total: 60 },
      { name: "slowtotal", done: 1, total: 1 },
    ]);
    // The workers' digests of these tasks arrive with their next heartbeats.
    const metrics = await until("metrics of the slow tasks", () =>
      newest(seen, (s) => !!s.metrics?.metrics.some((m) => m.context === "execute" && m.prefix === "slow" && m.unit === "seconds" && m.value > 0))?.metrics,
    );
    assert.match(metrics.source?.description ?? "", /^LocalCluster 'feed-tests', 2 workers, 2 threads$/);
    const last = seen.at(-1)!;
    assert.ok(last.taskStream!.records.some((record) => record.prefix === "slow"));
    assert.equal(last.taskStream!.total, cluster.scheduler.taskStream.index);
    assert.ok(last.bandwidth !== undefined);
  });

  test("the metrics come with their spans: the panel offers each span tag and shows idle time as the notebook's panel does", async () => {
    // Seed 003's spans: two blocks of work with a pause between them, the pause being idle time.
    const { dsk: load, key: loaded } = slowGraph("load", 8, 40);
    const { dsk: qr, key: factored } = slowGraph("qr", 8, 40);
    await span("load", () => get(load, loaded));
    await sleep(300);
    await span("qr", () => get(qr, factored));
    // The scheduler's spans once every worker's heartbeat brought their last tasks' metrics.
    const inline = await client.metricsData();
    const inlineModel = fpmModel(inline, DEFAULT_SELECTION);
    const snapshot = await until("a snapshot with the synced metrics", () =>
      newest(seen, (s) => s.time >= inline.time && (s.metrics?.spans ?? []).some((record) => record.name.includes("qr"))),
    );
    // What the dashboard's FPM panel draws from (views/dashboard/fpm.ts's fpmData).
    const data: FpmData = { metrics: snapshot.metrics!.metrics, spans: snapshot.metrics!.spans ?? [], time: snapshot.time };
    assert.deepEqual(fpmOptions(data).spans.filter((tag) => tag !== "default"), ["load", "qr"]);
    const model = fpmModel(data, DEFAULT_SELECTION);
    assert.equal(model.functions.at(-1), IDLE_PREFIX, `the idle row is last: ${model.functions.join(", ")}`);
    const idle = model.activities.find((slice) => slice.activity === "idle");
    assert.ok(idle !== undefined && idle.value > 0, `idle time is shown: ${JSON.stringify(model.activities)}`);
    // The same model as the notebook's panel: equal totals for the tasks both saw; idle grows with the clock.
    const taskTotal = (m: typeof model): number => m.functionTotals.filter((row) => row.function !== IDLE_PREFIX).reduce((sum, row) => sum + row.value, 0);
    assert.ok(Math.abs(taskTotal(model) - taskTotal(inlineModel)) < 1e-9, `task time: dashboard ${taskTotal(model)} s, notebook ${taskTotal(inlineModel)} s`);
    const onlyQr = fpmModel(data, { ...DEFAULT_SELECTION, spans: ["qr"] });
    assert.deepEqual(onlyQr.functions.filter((fn) => fn !== IDLE_PREFIX).sort(), ["qr", "qrtotal"]);
  });

  test("the workers' statistical profile follows the run: the spinning prefix, its time windows", async () => {
    const from = seen.length;
    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < 24; i++) dsk[`spin-${i}`] = [spin, 100];
    await get(dsk, Object.keys(dsk));
    // Fetched from the workers every 2 s while tasks run, and once more after the run.
    const profile = await until(
      "the profile of the spin tasks",
      () => newest(seen.slice(from), (s) => (s.profile?.packed?.windows ?? []).some((w) => w.compute.spin !== undefined))?.profile,
    ).catch((error: Error) => {
      const shown = seen.slice(from).map((s) => s.profile?.packed?.windows.map((w) => Object.keys(w.compute).join("+")).join("|") ?? "none");
      throw new Error(`${error.message}; the snapshots' profile windows: ${shown.join(" , ")}`);
    });
    assert.ok(profile.tree.count > 0);
    assert.ok(profile.packed!.windows.length <= 20, `windows bounded: ${profile.packed!.windows.length}`);
    const spinSamples = profile.timeline!.reduce((sum, point) => sum + (point.byPrefix.spin ?? 0), 0);
    // 2.4 s of spinning sampled every 10 ms: far more than a handful, even on a loaded machine.
    assert.ok(spinSamples >= 20, `spin samples: ${spinSamples}`);
  });

  test("a failed computation and a released one are marked so", async () => {
    const from = seen.length;
    await assert.rejects(get({ boom: [fail, "no"], after: [slowInc, "boom", 1] }, "after"));
    await until("the errored computation", () => seen.slice(from).find((s) => runOf(s, "after")?.state === "errored"));

    // Futures released while their tasks run: what is left is cancelled on the cluster.
    const futures = client.map(sleepTask, Array.from({ length: 20 }, (_, i) => 300 + i));
    await until("the futures' computation running", () => seen.slice(from).find((s) => runOf(s, "sleep")?.state === "running"));
    for (const future of futures) future.release();
    const cancelled = await until("the cancelled computation", () => seen.slice(from).find((s) => runOf(s, "sleep")?.state === "cancelled"));
    assert.ok(runOf(cancelled, "sleep")!.done < 20);
  });

  test("when the cluster goes quiet the feed does too, and it builds nothing while nobody listens", async () => {
    await get(slowGraph("quiet", 4, 10).dsk, "quiettotal");
    // The run winds down first (its last metrics, the profile follower's asks 2 s apart, the
    // workers' CPU falling), which takes longer on a loaded machine: then 3 s without a snapshot.
    let last = dashboardPublisher.stats.snapshots;
    let quietSince = performance.now();
    await until(
      "the feed to go quiet after the run",
      () => {
        if (dashboardPublisher.stats.snapshots !== last) [last, quietSince] = [dashboardPublisher.stats.snapshots, performance.now()];
        return performance.now() - quietSince >= 3000 || undefined;
      },
      30_000,
    );
    const count = dashboardPublisher.stats.snapshots;
    await sleep(3000);
    assert.ok(dashboardPublisher.stats.snapshots - count <= 2, `snapshots of an idle cluster in 3 s: ${dashboardPublisher.stats.snapshots - count}`);
    assert.equal(dashboardPublisher.pending, false, "no timer left once idle");

    unsubscribe();
    const built = dashboardPublisher.stats.snapshots;
    await get(slowGraph("unseen", 20, 20).dsk, "unseentotal");
    await sleep(1200);
    assert.equal(dashboardPublisher.stats.snapshots, built, "nothing built for nobody");
    unsubscribe = dashboardPublisher.subscribe((snapshot) => void seen.push(snapshot));
    const fresh = await until("the news, for the newcomer", () => newest(seen, (s) => !!s.progress?.some((run) => run.label === "unseentotal")));
    assert.equal(runOf(fresh, "unseentotal")?.state, "finished");
  });

  test("closing the Client takes the cluster off the feed", async () => {
    const other = await Client.connect(cluster);
    await other.close();
    const from = seen.length;
    await sleep(700);
    assert.ok(seen.slice(from).every((s) => s.cluster !== undefined), "a second Client closing leaves the first one's feed");
    await client.close();
    const gone = await until("a snapshot without the cluster", () => seen.slice(from).find((s) => s.cluster === undefined));
    assert.equal(gone.workers, undefined);
  });
});

describe("a LocalCluster's own dashboard page", () => {
  async function freePort(): Promise<number> {
    const { createServer } = await import("node:net");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    return port;
  }
  const snapshotOf = async (link: string): Promise<DashboardSnapshot> => (await fetch(new URL("snapshot.json", link))).json() as Promise<DashboardSnapshot>;

  test("served at dashboardLink with that cluster's data; a second cluster on the same address gets a free port; closed with its cluster", async () => {
    const port = await freePort();
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.message);
    process.on("warning", onWarning);
    const first = await LocalCluster.start({ nWorkers: 1, threadsPerWorker: 1, name: "page-a", dashboardAddress: `127.0.0.1:${port}` });
    const second = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "page-b", dashboardAddress: `127.0.0.1:${port}` });
    try {
      assert.equal(first.dashboardLink, `http://127.0.0.1:${port}/status`);
      assert.equal(first.dashboardAddress, `127.0.0.1:${port}`);
      assert.match(second.dashboardLink!, /^http:\/\/127\.0\.0\.1:\d+\/status$/);
      assert.notEqual(second.dashboardLink, first.dashboardLink);
      await until("the port warning", () => warnings.find((w) => w.includes(`Port ${port} is already in use`)));
      assert.match(String(first), new RegExp(`dashboard=http://127\\.0\\.0\\.1:${port}/status`));

      const page = await fetch(first.dashboardLink!);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /tsdaskViews\.mountDashboardPage\(/);
      // Each page shows its own cluster, with no Client connected.
      const [a, b] = await Promise.all([snapshotOf(first.dashboardLink!), snapshotOf(second.dashboardLink!)]);
      assert.equal(a.cluster?.name, "LocalCluster 'page-a'");
      assert.equal(a.workers?.length, 1);
      assert.equal(b.cluster?.name, "LocalCluster 'page-b'");
      assert.equal(b.workers?.length, 2);
    } finally {
      process.off("warning", onWarning);
      await first.close();
      await second.close();
    }
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`), "the page closed with its cluster");
    assert.equal(first.dashboardLink, null);
  });

  test("a bad dashboardAddress is an error naming the option", async () => {
    await assert.rejects(LocalCluster.start({ dashboardAddress: "localhost:http" }), /Option dashboardAddress must be "host:port", ":port", a port or null, got "localhost:http"/);
    await assert.rejects(LocalCluster.start({ dashboardAddress: "203.0.113.9:0", nWorkers: 1 }), /serveDashboard: cannot listen on "203\.0\.113\.9:0": no such local address/);
  });
});
