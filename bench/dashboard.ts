// The dashboard feed's cost in the kernel. A 1 000 000-task local computation (tree reduction,
// sync scheduler: the feed shares the main thread with the work, its worst case) runs with and
// without DashboardFeed; the feed publishes through a sink that does what tslab does with each
// snapshot in our call (JSON-encode the message and HMAC-sign it). Target: the feed under 5 % of
// one core. Also: the cost of one snapshot with every section at its limit (what a Client with
// workers, task stream, metrics and profile will publish), and Dask's ProgressBar on the same kind
// of graph (the closest Dask has to a local progress feed).
// Then the same tree on a LocalCluster (2 workers × 1 thread) with the dashboard open: the Client
// feeding the kernel's publisher, read by the tslab-like sink and by the dashboard page in real
// Chromium; the feed's CPU in the kernel (snapshots, and its handlers of submissions and heartbeats)
// against the run's wall time, and the page's responsiveness (its timers' worst lag, long tasks).
// Dask's own Bokeh dashboard is not measured: bokeh is not installable here (no Debian package).
// Figures: main-thread CPU time (steady on a shared machine) and wall time.
// Run: npm run bench -- dashboard  (or node build/bench/dashboard.js [leaves] [rounds] [cluster leaves];
// the cluster part alone: node build/bench/dashboard.js cluster [leaves])

import { createHmac, randomBytes } from "node:crypto";
import type { EventEmitter } from "node:events";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { Client, DashboardFeed, DashboardPublisher, LocalCluster, type State, dashboardPublisher, get, serveDashboard, withCallbacks } from "../src";
import { profileSection } from "../src/kernel/dashboard/bounds";
import { threadCpuSeconds } from "../src/kernel/diagnostics/sampler";
import { threadCpuMs } from "../src/kernel/metrics/clock";
import type { Graph } from "../src/kernel/graph/graph";
import { DASHBOARD_LIMITS, DASHBOARD_MIME_TYPE, type DashboardSections, type DashboardSnapshot } from "../src/protocol/dashboard";
import type { MetricRecord, ProfileNode, TaskStreamRecord } from "../src/protocol/records";
import { clusterSections } from "../test/dashboard/fixtures";
import { treeReduction } from "./graphs";
import { printTable, runPython } from "./harness";

interface DaskResult {
  dask: string;
  tasks: number;
  /** µs per task: no diagnostics, and added by ProgressBar (main-thread CPU, wall). */
  base: { cpu: number; wall: number };
  progressBar: { cpu: number; wall: number };
}

/** What tslab does synchronously in our send: encode the message as JSON and sign it (HMAC-SHA256). */
function tslabLikeSink(): { sink: (snapshot: DashboardSnapshot) => void; bytes: number[] } {
  const key = randomBytes(32);
  const bytes: number[] = [];
  const sink = (snapshot: DashboardSnapshot): void => {
    const content = JSON.stringify({ data: { [DASHBOARD_MIME_TYPE]: snapshot }, metadata: {}, transient: { display_id: "feed" } });
    createHmac("sha256", key).update(content).digest("hex");
    bytes.push(content.length);
  };
  return { sink, bytes };
}

interface Run {
  wall: number;
  cpu: number;
  snapshots: number;
  publishMs: number;
  bytes: number[];
}

async function run(leaves: number, feed: boolean): Promise<Run> {
  const { graph, keys } = treeReduction(leaves);
  const publisher = new DashboardPublisher({ notebook: false });
  const { sink, bytes } = tslabLikeSink();
  publisher.subscribe(sink);
  const callbacks = feed ? [new DashboardFeed({ publisher, label: "bench" })] : [];
  const [wall, cpu] = [performance.now(), threadCpuSeconds()];
  await withCallbacks(callbacks, () => get(graph, keys));
  const result = { wall: (performance.now() - wall) / 1000, cpu: threadCpuSeconds() - cpu };
  // The last snapshot (finished) follows within the interval: wait for it and count it too.
  await new Promise((resolve) => setTimeout(resolve, 600));
  const stats = publisher.stats;
  return { ...result, snapshots: stats.snapshots, publishMs: stats.busyMs, bytes };
}

/**
 * The feed's hooks alone, replayed over the same keys without a scheduler (its CPU per task is
 * too small to see as the difference of two noisy runs): start, startState (which counts every
 * task's group), a posttask per task, finish. Best of `rounds`, seconds of this thread's CPU.
 */
function hooksAlone(leaves: number, rounds: number): number {
  const keys = Object.keys(treeReduction(leaves).graph);
  // The feed uses the graph only to pair start with startState: any object will do.
  const graph = {} as Graph;
  let best = Infinity;
  for (let round = 0; round < rounds; round++) {
    const state = { waiting: new Map(keys.map((key) => [key, new Set()])), ready: [], finished: new Set(keys) } as unknown as State;
    const publisher = new DashboardPublisher({ notebook: false });
    const feed = new DashboardFeed({ publisher });
    const cpu = threadCpuSeconds();
    feed.start(graph);
    feed.startState(graph, state);
    for (const key of keys) feed.posttask(key, null, graph, state);
    feed.finish(graph, state, false);
    best = Math.min(best, threadCpuSeconds() - cpu);
  }
  return best;
}

/** Every section at its limit: a Client on 64 workers with a full task stream, metrics, spans and profile. */
function fullSections(time: number): DashboardSections {
  const cluster = clusterSections(time);
  const workers = Array.from({ length: 64 }, (_, i) => ({ ...cluster.workers![i % 4]!, address: `tcp://10.0.0.${i}:4000`, name: `worker-${i}` }));
  const taskStream: TaskStreamRecord[] = Array.from({ length: DASHBOARD_LIMITS.taskStream }, (_, i) => ({
    key: `('sum-${i % 17}-4e1c0b1d2d7f', ${i}, 0)`,
    prefix: `sum-${i % 17}`,
    worker: workers[i % 64]!.address,
    thread: i % 4,
    status: "OK",
    nbytes: 8000,
    type: "Float64Array",
    startstops: [{ action: "compute", start: time - 1 + i / 1000, stop: time - 1 + i / 1000 + 0.0008 }],
    span: "s1",
  }));
  const metrics: MetricRecord[] = [];
  for (let p = 0; p < 40; p++) {
    for (const activity of ["thread-cpu", "thread-noncpu", "executor", "other", "disk-read", "deserialize"]) {
      metrics.push({ context: "execute", prefix: `prefix-${p}`, activity, unit: "seconds", value: Math.random() });
    }
  }
  const node = (name: string, depth: number): ProfileNode => ({
    identifier: `${name};file.ts;1`,
    count: 1000 >> depth,
    description: { filename: "file.ts", name, line_number: 1, line: "" },
    children: depth < 9 ? { a: node(`${name}a`, depth + 1), b: node(`${name}b`, depth + 1) } : {},
  });
  // The profile's windows too, each with a few prefixes' trees: profileSection bounds them as a kernel's would.
  const windows = Array.from({ length: 2 * DASHBOARD_LIMITS.profileWindows }, (_, i) => ({
    time: time - 60 + i,
    stop: time - 59 + i,
    source: workers[i % 64]!.address,
    compute: { "sum-0": node("root", 0), "sum-1": node("root", 1), "sum-2": node("root", 2) },
    administrative: node("loop", 3),
  }));
  return { ...cluster, workers, taskStream: { records: taskStream, total: 1e6 }, metrics: { metrics }, profile: profileSection(windows, 0.01) };
}

function fullSnapshotCost(): { ms: number; bytes: number } {
  const publisher = new DashboardPublisher({ notebook: false });
  const sections = fullSections(Date.now() / 1000);
  const source = publisher.provide({ name: "bench", sections: () => sections });
  const { sink, bytes } = tslabLikeSink();
  let best = Infinity;
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    sink(publisher.snapshot());
    best = Math.min(best, performance.now() - t0);
  }
  source.close();
  return { ms: best, bytes: bytes[0]! };
}

/** CPU milliseconds spent in the listeners of `event`: readings registered first and last around the others. */
function timeListeners(emitter: EventEmitter, event: string): { readonly ms: number; readonly calls: number } {
  const timing = { ms: 0, calls: 0 };
  let started = 0;
  emitter.prependListener(event, () => void (started = threadCpuMs()));
  emitter.on(event, () => {
    timing.ms += threadCpuMs() - started;
    timing.calls++;
  });
  return timing;
}

/** What the dashboard page measures of itself: its timers' worst lag and the long tasks (> 50 ms) it had. */
const PAGE_MONITOR = `(() => {
  const stats = { worstLagMs: 0, longTasks: 0, longestTaskMs: 0, ticks: 0 };
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    stats.worstLagMs = Math.max(stats.worstLagMs, now - last - 50);
    stats.ticks++;
    last = now;
  }, 50);
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      stats.longTasks++;
      stats.longestTaskMs = Math.max(stats.longestTaskMs, entry.duration);
    }
  }).observe({ type: "longtask", buffered: true });
  window.__tsdaskPageStats = stats;
})();`;

interface PageStats {
  worstLagMs: number;
  longTasks: number;
  longestTaskMs: number;
  ticks: number;
}

interface ClusterRun {
  tasks: number;
  wall: number;
  /** The kernel's main thread, all of it (scheduler, client, feed). */
  mainCpu: number;
  snapshots: number;
  /** CPU ms building snapshots and handing them to the sinks (the tslab-like encoding and the page's stream). */
  publishMs: number;
  /** The same in wall time (waits for a core included). */
  publishWallMs: number;
  submittedMs: number;
  heartbeatMs: number;
  heartbeats: number;
  meanBytes: number;
  page?: PageStats;
  /** Snapshots the page drew (its "updated" time changed). */
  pageUpdates?: number;
}

/**
 * The tree on a LocalCluster through its Client, with the dashboard open (`open`: the tslab-like
 * sink on the kernel's publisher and the dashboard page in Chromium) or with nobody listening.
 */
async function clusterRun(leaves: number, open: boolean): Promise<ClusterRun> {
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "bench-dashboard", dashboardAddress: null });
  const client = await Client.connect(cluster);
  const scheduler = cluster.scheduler;
  const submitted = timeListeners(scheduler, "graph-submitted");
  const heartbeats = timeListeners(scheduler, "heartbeat");
  const { sink, bytes } = tslabLikeSink();
  const unsubscribe = open ? dashboardPublisher.subscribe(sink) : () => {};
  const server = open ? await serveDashboard("127.0.0.1:0", dashboardPublisher) : undefined;
  const setup = (await import(pathToFileURL(join(process.cwd(), "scripts/setup/chromium.mjs")).href)) as { ensureChromium(): string; CHROMIUM_ARGS: string[] };
  const browser = open ? await chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS }) : undefined;
  try {
    const tab = await browser?.newPage({ viewport: { width: 1400, height: 1000 } });
    if (tab !== undefined && server !== undefined) {
      await tab.addInitScript(PAGE_MONITOR);
      await tab.goto(server.url);
      await tab.locator('.tsdask-dashboard-card[data-kind="workers"] tbody tr').first().waitFor({ timeout: 30_000 });
    }
    let pageUpdates = 0;
    let lastStatus = "";
    const watching = tab === undefined ? undefined : setInterval(() => {
      void tab.locator(".tsdask-dashboard-page-status").textContent().then((text) => {
        if (text !== null && text !== lastStatus) [lastStatus, pageUpdates] = [text, pageUpdates + 1];
      }, () => undefined);
    }, 200);
    const { graph, keys, tasks } = treeReduction(leaves);
    const stats0 = dashboardPublisher.stats;
    const [wall0, cpu0] = [performance.now(), threadCpuSeconds()];
    await get(graph, keys);
    const wall = (performance.now() - wall0) / 1000;
    const mainCpu = threadCpuSeconds() - cpu0;
    // The last snapshots (the run finished, its last metrics) follow within a heartbeat or two.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    if (watching !== undefined) clearInterval(watching);
    const stats = dashboardPublisher.stats;
    const page = tab === undefined ? undefined : ((await tab.evaluate("window.__tsdaskPageStats")) as PageStats);
    return {
      tasks,
      wall,
      mainCpu,
      snapshots: stats.snapshots - stats0.snapshots,
      publishMs: stats.cpuMs - stats0.cpuMs,
      publishWallMs: stats.busyMs - stats0.busyMs,
      submittedMs: submitted.ms,
      heartbeatMs: heartbeats.ms,
      heartbeats: heartbeats.calls,
      meanBytes: bytes.reduce((a, b) => a + b, 0) / Math.max(1, bytes.length),
      ...(page !== undefined && { page, pageUpdates }),
    };
  } finally {
    await browser?.close();
    await server?.close();
    unsubscribe();
    await client.close();
    await cluster.close();
  }
}

function reportCluster(open: ClusterRun, closed: ClusterRun): Record<string, number> {
  const feedMs = open.publishMs + open.submittedMs + open.heartbeatMs;
  const share = (100 * feedMs) / 1000 / open.wall;
  const quietShare = (100 * feedMs) / 1000 / open.mainCpu;
  console.log(`\n${open.tasks} tasks (the same tree) on a LocalCluster of 2 workers × 1 thread, through its Client`);
  printTable(
    ["", "wall s", "main-thread cpu s", "µs/task wall"],
    [
      ["nobody listening", closed.wall, closed.mainCpu, (closed.wall / closed.tasks) * 1e6],
      ["dashboard open", open.wall, open.mainCpu, (open.wall / open.tasks) * 1e6],
    ],
  );
  console.log(
    `feed on the cluster (CPU of the kernel's main thread): snapshots ${(open.publishMs / 1000).toFixed(3)} s (${open.snapshots} built, ${(open.snapshots / open.wall).toFixed(2)}/s, ` +
      `${(open.publishMs / Math.max(1, open.snapshots)).toFixed(1)} ms each, ${(open.publishWallMs / Math.max(1, open.snapshots)).toFixed(1)} ms wall, ` +
      `mean ${(open.meanBytes / 1024).toFixed(1)} kiB) + following the submission ${(open.submittedMs / 1000).toFixed(3)} s + ${open.heartbeats} heartbeats ${(open.heartbeatMs / 1000).toFixed(4)} s ` +
      `= ${(feedMs / 1000).toFixed(3)} s of the kernel's CPU over ${open.wall.toFixed(1)} s = ${share.toFixed(2)} % of one core as measured, ` +
      `${quietShare.toFixed(2)} % of the main thread's ${open.mainCpu.toFixed(1)} s (target < 5 %); nobody listening: ${closed.snapshots} snapshots built`,
  );
  if (open.page !== undefined) {
    console.log(
      `the dashboard page (Chromium) meanwhile: ${open.pageUpdates} redraws seen, its timers' worst lag ${open.page.worstLagMs.toFixed(0)} ms, ` +
        `${open.page.longTasks} long tasks (> 50 ms), the longest ${open.page.longestTaskMs.toFixed(0)} ms`,
    );
  }
  return { feedMs, sharePercent: share, quietSharePercent: quietShare };
}

/** The cluster part alone: warm-up, nobody listening, then the dashboard open. */
async function clusterLoad(leaves: number): Promise<Record<string, unknown>> {
  await clusterRun(2_000, true); // warm-up: the page's first draw, JIT
  const closed = await clusterRun(leaves, false);
  const open = await clusterRun(leaves, true);
  return { open, closed, ...reportCluster(open, closed) };
}

async function main(): Promise<void> {
  if (process.argv[2] === "cluster") {
    console.log(JSON.stringify({ bench: "dashboard-cluster", cluster: await clusterLoad(Number(process.argv[3] ?? 500_000)) }));
    return;
  }
  const leaves = Number(process.argv[2] ?? 500_000);
  const rounds = Number(process.argv[3] ?? 3);
  const clusterLeaves = Number(process.argv[4] ?? 500_000);
  const tasks = treeReduction(leaves).tasks;
  let without: Run | undefined;
  let withFeed: Run | undefined;
  await run(10_000, true); // warm-up: JIT
  for (let round = 0; round < rounds; round++) {
    const plain = await run(leaves, false);
    const fed = await run(leaves, true);
    if (without === undefined || plain.cpu < without.cpu) without = plain;
    if (withFeed === undefined || fed.cpu < withFeed.cpu) withFeed = fed;
  }
  const difference = withFeed!.cpu - without!.cpu;
  const hooks = hooksAlone(leaves, rounds);
  const feedCpu = hooks + withFeed!.publishMs / 1000;
  const coreShare = (100 * feedCpu) / withFeed!.wall;
  // On a quiet machine the sync computation's wall time is its CPU time: the feed's share then.
  const quietShare = (100 * feedCpu) / withFeed!.cpu;
  const publishShare = (100 * withFeed!.publishMs) / 1000 / withFeed!.wall;
  const meanBytes = withFeed!.bytes.reduce((a, b) => a + b, 0) / Math.max(1, withFeed!.bytes.length);
  const full = fullSnapshotCost();

  const dask = runPython<DaskResult>("dask_dashboard.py", [String(Math.min(leaves, 100_000)), String(rounds)]);
  const perTask = (seconds: number): number => (seconds / tasks) * 1e6;

  console.log(`${tasks} tasks (tree reduction over ${leaves}), sync scheduler, best of ${rounds}; dask ${dask.dask} (${dask.tasks} tasks)`);
  printTable(
    ["", "wall s", "cpu s", "µs/task cpu"],
    [
      ["without the feed", without!.wall, without!.cpu, perTask(without!.cpu)],
      ["with DashboardFeed", withFeed!.wall, withFeed!.cpu, perTask(withFeed!.cpu)],
    ],
  );
  console.log(
    `feed: hooks ${hooks.toFixed(3)} s (replayed alone) + snapshots ${(withFeed!.publishMs / 1000).toFixed(3)} s = ${feedCpu.toFixed(3)} s of CPU ` +
      `over the computation's ${withFeed!.wall.toFixed(2)} s = ${coreShare.toFixed(2)} % of one core as measured, ` +
      `${quietShare.toFixed(2)} % of its ${withFeed!.cpu.toFixed(2)} s of CPU (a quiet machine's wall time) (target < 5 %); ${perTask(feedCpu).toFixed(3)} µs/task ` +
      `(with − without, noisy: ${difference.toFixed(3)} s)`,
  );
  console.log(
    `  of which snapshots: ${withFeed!.snapshots} built and sent (${(withFeed!.snapshots / withFeed!.wall).toFixed(2)}/s), ` +
      `${withFeed!.publishMs.toFixed(1)} ms in all = ${publishShare.toFixed(3)} % of one core, mean ${(meanBytes / 1024).toFixed(1)} kiB each`,
  );
  console.log(
    `a snapshot with every section at its limit (64 workers, ${DASHBOARD_LIMITS.taskStream} task-stream records, metrics, a 1023-node profile and its time windows): ` +
      `${full.ms.toFixed(2)} ms, ${(full.bytes / 1024).toFixed(0)} kiB; at 2/s: ${((2 * full.ms) / 10).toFixed(2)} % of one core`,
  );
  console.log(
    `dask ProgressBar (its local progress display: a timer thread, no per-task hook), added µs/task: ${dask.progressBar.cpu.toFixed(3)} cpu / ${dask.progressBar.wall.toFixed(3)} wall ` +
      `(dask base ${dask.base.cpu.toFixed(2)} µs/task cpu); tsdask DashboardFeed: ${perTask(feedCpu).toFixed(3)} µs/task cpu`,
  );

  const cluster = await clusterLoad(clusterLeaves);
  console.log(
    JSON.stringify({
      bench: "dashboard",
      tasks,
      tsdask: { without, withFeed: { ...withFeed, bytes: undefined, meanBytes }, hooks, feedCpu, difference, coreSharePercent: coreShare, quietSharePercent: quietShare, fullSnapshot: full },
      cluster,
      dask,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
