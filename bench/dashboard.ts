// The dashboard feed's cost in the kernel. A 1 000 000-task local computation (tree reduction,
// sync scheduler: the feed shares the main thread with the work, its worst case) runs with and
// without DashboardFeed; the feed publishes through a sink that does what tslab does with each
// snapshot in our call (JSON-encode the message and HMAC-sign it). Target: the feed under 5 % of
// one core. Also: the cost of one snapshot with every section at its limit (what a Client with
// workers, task stream, metrics and profile will publish), and Dask's ProgressBar on the same kind
// of graph (the closest Dask has to a local progress feed; no distributed dashboard here).
// Figures: main-thread CPU time (steady on a shared machine) and wall time.
// Run: npm run bench -- dashboard  (or node build/bench/dashboard.js [leaves] [rounds])

import { createHmac, randomBytes } from "node:crypto";
import { DashboardFeed, DashboardPublisher, type State, get, withCallbacks } from "../src";
import { threadCpuSeconds } from "../src/kernel/diagnostics/sampler";
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
  return { ...cluster, workers, taskStream: { records: taskStream, total: 1e6 }, metrics: { metrics }, profile: { tree: node("root", 0) } };
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

async function main(): Promise<void> {
  const leaves = Number(process.argv[2] ?? 500_000);
  const rounds = Number(process.argv[3] ?? 3);
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
    `a snapshot with every section at its limit (64 workers, ${DASHBOARD_LIMITS.taskStream} task-stream records, metrics, a 1023-node profile): ` +
      `${full.ms.toFixed(2)} ms, ${(full.bytes / 1024).toFixed(0)} kiB; at 2/s: ${((2 * full.ms) / 10).toFixed(2)} % of one core`,
  );
  console.log(
    `dask ProgressBar (its local progress display: a timer thread, no per-task hook), added µs/task: ${dask.progressBar.cpu.toFixed(3)} cpu / ${dask.progressBar.wall.toFixed(3)} wall ` +
      `(dask base ${dask.base.cpu.toFixed(2)} µs/task cpu); tsdask DashboardFeed: ${perTask(feedCpu).toFixed(3)} µs/task cpu`,
  );
  console.log(
    JSON.stringify({
      bench: "dashboard",
      tasks,
      tsdask: { without, withFeed: { ...withFeed, bytes: undefined, meanBytes }, hooks, feedCpu, difference, coreSharePercent: coreShare, quietSharePercent: quietShare, fullSnapshot: full },
      dask,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
