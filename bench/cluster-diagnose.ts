// Seed 003's diagnostics on LocalCluster(2 workers × 1 thread), beside Dask distributed's
// LocalCluster(n_workers=2, threads_per_worker=1) measured in the same run:
//  1. The workers' statistical profiler on the seeds' QR example (10000×1000 in 1000×1000
//     chunks, q.dot(r)): profile on (the default) and off, interleaved, a fresh cluster per run;
//     the user's run (cluster start + first compute) and a warm compute, wall time and the worker
//     processes' CPU; Dask's profiler on and off the same way (its distributed here predates the
//     Python 3.11 switch-off). Target ≤ 3 %.
//  2. performanceReport of a 1 000 000-task cluster run: the run alone and recorded, the page's
//     size, Chromium opening it (summary drawn, then every tab) — target under 5 s — beside Dask's
//     performance_report of a smaller run (its task stream keeps 100 000 tasks at most).
// Run: npm run bench -- cluster-diagnose   (TSDASK_BENCH_ROUNDS, TSDASK_REPORT_TASKS and
// TSDASK_DASK_REPORT_TASKS change the sizes; TSDASK_BENCH_PARTS=profile or =report runs one part)

import { readFileSync, readdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, LocalCluster, get, performanceReport } from "../src";
import * as da from "../src/kernel/collections/array";
import { DASK_PYTHON, type ReportOpened, cpuSeconds, ensureDistributed, median, launchChromium, openDaskReport, openReport, printTable, runPython } from "./harness";
import { inc } from "../test/fixtures/tasks";

const ROUNDS = Number(process.env.TSDASK_BENCH_ROUNDS ?? 6);
const REPORT_TASKS = Number(process.env.TSDASK_REPORT_TASKS ?? 1_000_000);
const DASK_REPORT_TASKS = Number(process.env.TSDASK_DASK_REPORT_TASKS ?? 20_000);
/** Which parts run: "profile", "report" or both (the default), comma-separated. */
const PARTS = new Set((process.env.TSDASK_BENCH_PARTS ?? "profile,report").split(","));

interface Run {
  wall: number;
  /** CPU seconds of the worker processes. */
  cpu: number;
  /** Of which V8's sampler threads ("v8:ProfEvntProc", one per profiled thread: the per-sample cost). */
  samplerCpu?: number;
}

/** One fresh cluster: the user's run of the seed, then a warm compute on the same cluster. */
interface QrRuns {
  /** Cluster start and the first compute (wall), the worker processes' CPU from their start to its end. */
  first: Run;
  /** A second compute (a long-lived cluster's steady state): its wall and the workers' CPU during it. */
  warm: Run;
}

type Mode = "on" | "off";
type Phase = keyof QrRuns;

/** CPU seconds of a process's V8 sampler threads (named by V8), from /proc. */
function samplerCpuSeconds(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (!readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").startsWith("v8:ProfEvntProc")) continue;
      total += cpuSeconds(pid, Number(tid));
    } catch {
      // the thread ended meanwhile
    }
  }
  return total;
}

const ratioPercent = (ratio: number): number => (ratio - 1) * 100;
const formatPercent = (value: number): string => `${value.toFixed(1)} %`;
/** The median over rounds of on / off − 1, each round's two runs taken back to back: less swayed by a load that drifts. */
const paired = (runs: Record<Mode, QrRuns[]>, phase: Phase, field: "wall" | "cpu"): number =>
  ratioPercent(median(runs.on.map((on, i) => on[phase][field] / runs.off[i][phase][field])));
const medianOf = (runs: Record<Mode, QrRuns[]>, mode: Mode, phase: Phase, field: "wall" | "cpu"): number => median(runs[mode].map((run) => run[phase][field]));

/**
 * The seed as a user runs it, on a fresh cluster with the profiler on (the default) or off: start
 * the cluster, build the QR, compute it (the "first" figures), then compute it again (the "warm"
 * figures). Cluster start is inside the first figures because the profiler's one-time costs are
 * paid there (each thread's V8 profiler starts with its worker: code logging, a deoptimisation)
 * and a user running the seed pays them; the warm compute is what a long-lived cluster costs.
 */
async function qrRun(profile: boolean): Promise<QrRuns> {
  const t0 = performance.now();
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, dashboardAddress: null, name: "bench-profile", profile });
  const client = await Client.connect(cluster);
  try {
    const a = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(a);
    const product = q.dot(r);
    await product.compute();
    const pids = cluster.processes.map((p) => p.pid);
    const workersCpu = (): number => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const samplersCpu = (): number => pids.reduce((sum, pid) => sum + samplerCpuSeconds(pid), 0);
    const cpu0 = workersCpu();
    const sampler0 = samplersCpu();
    const first = { wall: (performance.now() - t0) / 1000, cpu: cpu0, samplerCpu: sampler0 };
    const t1 = performance.now();
    await product.compute();
    return { first, warm: { wall: (performance.now() - t1) / 1000, cpu: workersCpu() - cpu0, samplerCpu: samplersCpu() - sampler0 } };
  } finally {
    await client.close();
    await cluster.close();
  }
}

async function profilerOverhead(): Promise<Record<string, unknown>> {
  const ours: Record<Mode, QrRuns[]> = { on: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const)) ours[mode].push(await qrRun(mode === "on"));
  }
  const dask = runPython<{ distributed: string; runs: Record<Mode, QrRuns[]> }>("dask_cluster_diagnose.py", ["profile", String(ROUNDS)], {}, DASK_PYTHON);
  console.log(`\nThe workers' statistical profiler on the QR example, LocalCluster(2×1), ${ROUNDS} fresh clusters each way, interleaved; medians`);
  const rows: (string | number)[][] = [];
  const figures: Record<string, number> = {};
  for (const [phase, label] of [["first", "user's run (start + 1st compute)"], ["warm", "warm compute"]] as const) {
    for (const [field, unit] of [["wall", "wall s"], ["cpu", "workers' CPU s"]] as const) {
      const ourOverhead = paired(ours, phase, field);
      const daskOverhead = paired(dask.runs, phase, field);
      figures[`${phase} ${field}`] = ourOverhead;
      rows.push([`${label}, ${unit}`, medianOf(ours, "off", phase, field), medianOf(ours, "on", phase, field), formatPercent(ourOverhead), medianOf(dask.runs, "off", phase, field), medianOf(dask.runs, "on", phase, field), formatPercent(daskOverhead)]);
    }
  }
  printTable(["", "tsdask off", "tsdask on", "tsdask overhead", "dask off", "dask on", "dask overhead"], rows);
  const samplerShare = (phase: Phase): string => formatPercent(median(ours.on.map((run, i) => (run[phase].samplerCpu ?? 0) / ours.off[i][phase].cpu)) * 100);
  console.log(`of which V8's sampler threads (their own CPU, % of the off run's workers' CPU): user's run ${samplerShare("first")}, warm compute ${samplerShare("warm")}`);
  console.log("(overhead: the median over rounds of on / off − 1 within a round, whose two runs are back to back: less swayed by a load that drifts)");
  console.log(`(user's run: wall from LocalCluster.start to the end of the first compute, workers' CPU from their start — the profiler starts with them; warm: a second compute on the same cluster)`);
  const verdict = (value: number): string => `${formatPercent(value)} (${value <= 3 ? "met" : "NOT met"})`;
  console.log(
    `profiler overhead, target ≤ 3 %: user's run — workers' CPU ${verdict(figures["first cpu"])}, wall ${verdict(figures["first wall"])}; warm compute — workers' CPU ${verdict(figures["warm cpu"])}, wall ${verdict(figures["warm wall"])}`,
  );
  console.log(`(Dask distributed ${dask.distributed} samples its task threads every 10 ms from the event loop)`);
  return { ours, dask: dask.runs, figures };
}

/** A cluster run of `tasks` independent inc tasks, alone and in a report (fresh keys each). */
async function clusterReport(client: Client, tasks: number, file: string): Promise<{ get: number; withReport: number; bytes: number; recorded: number }> {
  const graph = (prefix: string): Record<string, unknown> => {
    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < tasks; i++) dsk[`${prefix}-${i}`] = [inc, i];
    return dsk;
  };
  const warm = graph("warm");
  await get(warm, Object.keys(warm).slice(0, 1000), { scheduler: client });
  let dsk = graph("inc");
  let t0 = performance.now();
  await get(dsk, Object.keys(dsk), { scheduler: client });
  const plain = (performance.now() - t0) / 1000;
  dsk = graph("inc2");
  t0 = performance.now();
  const report = await performanceReport({ filename: file }, () => get(dsk, Object.keys(dsk), { scheduler: client }));
  const withReport = (performance.now() - t0) / 1000;
  return { get: plain, withReport, bytes: statSync(file).size, recorded: report.data.summary.tasks };
}

async function reportTimings(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "tsdask-bench-cluster-report-"));
  const browser = await launchChromium();
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, dashboardAddress: null, name: "bench-report" });
  const client = await Client.connect(cluster);
  try {
    const small = await clusterReport(client, DASK_REPORT_TASKS, join(dir, "small.html"));
    const smallOpened = await openReport(browser, join(dir, "small.html"));
    const big = await clusterReport(client, REPORT_TASKS, join(dir, "big.html"));
    const bigOpened = await openReport(browser, join(dir, "big.html"));
    const dask = runPython<{ distributed: string; tasks: number; get: number; with_report: number | null; html_bytes: number | null; file: string | null; why?: string }>(
      "dask_cluster_diagnose.py",
      ["report", String(DASK_REPORT_TASKS), join(dir, "dask.html")],
      {},
      DASK_PYTHON,
    );
    const daskOpened = dask.file === null ? null : await openDaskReport(browser, dask.file);
    const mb = (bytes: number | null): string => (bytes === null ? "–" : `${(bytes / 1e6).toFixed(2)} MB`);
    const all = (o: ReportOpened): number => o.open + o.taskStream + o.rest;
    const orNone = (value: number | null): number | string => value ?? "–";
    console.log(`\nperformanceReport of a cluster run: ${REPORT_TASKS} and ${DASK_REPORT_TASKS} independent tasks on LocalCluster(2×1); Dask distributed ${dask.distributed}'s performance_report on ${DASK_REPORT_TASKS}; seconds`);
    printTable(
      ["", `ours ${REPORT_TASKS}`, `ours ${DASK_REPORT_TASKS}`, `Dask ${DASK_REPORT_TASKS}`],
      [
        ["tasks in the report", big.recorded, small.recorded, dask.with_report === null ? "–" : dask.tasks],
        ["the run alone", big.get, small.get, dask.get],
        ["the run recorded + report written", big.withReport, small.withReport, orNone(dask.with_report)],
        ["HTML size", mb(big.bytes), mb(small.bytes), mb(dask.html_bytes)],
        ["Chromium: open to summary", bigOpened.open, smallOpened.open, "–"],
        ["Chromium: + task stream tab", bigOpened.taskStream, smallOpened.taskStream, "–"],
        ["Chromium: + the other tabs", bigOpened.rest, smallOpened.rest, "–"],
        ["Chromium: everything drawn", all(bigOpened), all(smallOpened), orNone(daskOpened)],
      ],
    );
    console.log(`${REPORT_TASKS}-task report drawn in ${all(bigOpened).toFixed(2)} s (target < 5 s: ${all(bigOpened) < 5 ? "met" : "NOT met"}); the run alone, Dask / ours at ${DASK_REPORT_TASKS} tasks: ${(dask.get / small.get).toFixed(1)}×`);
    if (dask.with_report === null || daskOpened === null) console.log(`Dask's performance_report could not run here: ${dask.why}`);
    else console.log(`at ${DASK_REPORT_TASKS} tasks, Dask / ours: recording + report ${(dask.with_report / small.withReport).toFixed(1)}×, size ${(dask.html_bytes! / small.bytes).toFixed(1)}×, drawn ${(daskOpened / all(smallOpened)).toFixed(1)}×`);
    return { big, bigOpened, small, smallOpened, dask, daskOpened };
  } finally {
    await client.close();
    await cluster.close();
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  ensureDistributed();
  const overhead = PARTS.has("profile") ? await profilerOverhead() : null;
  const report = PARTS.has("report") ? await reportTimings() : null;
  console.log(JSON.stringify({ bench: "cluster-diagnose", rounds: ROUNDS, overhead, report }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
