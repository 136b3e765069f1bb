// Seed 003's diagnostics at work:
//  1. The statistical profiler's cost on the seeds' QR example (qr of a 10000×1000 array in
//     1000×1000 chunks, q.dot(r), threads scheduler): plain and profiled runs interleaved, wall
//     and process CPU time. Target ≤ 3 %. (Dask's own profiler is disabled on this machine's
//     Python 3.11, dask/distributed#8616: there is no Dask figure to set beside it.)
//  2. performanceReport of a 1 000 000-task graph: recording cost, building and writing the HTML,
//     its size, and Chromium opening it (summary drawn, then every tab) — target under 5 s — and
//     ours on 100 000 tasks beside Dask's closest local counterpart on the same graph
//     (bench/dask_report.py: Profiler + ResourceProfiler + visualize saved offline; Dask's
//     performance_report needs `distributed`, which this machine's package index does not carry).
// Run: npm run bench -- diagnose   (TSDASK_BENCH_ROUNDS, TSDASK_REPORT_TASKS change the sizes)

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StatisticalProfiler, get, performanceReport, withCallbacks } from "../src";
import * as da from "../src/kernel/collections/array";
import { type ReportOpened, launchChromium, openDaskReport, openReport, printTable, runPython } from "./harness";

const ROUNDS = Number(process.env.TSDASK_BENCH_ROUNDS ?? 6);
const REPORT_TASKS = Number(process.env.TSDASK_REPORT_TASKS ?? 1_000_000);
const COMPARED_TASKS = 100_000;

interface Timed {
  wall: number;
  cpu: number;
}

/** Wall and process CPU seconds (every thread of this process: the pool's workers included). */
async function timed(run: () => Promise<unknown>): Promise<Timed> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const cpu = process.cpuUsage(cpu0);
  return { wall: (performance.now() - t0) / 1000, cpu: (cpu.user + cpu.system) / 1e6 };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const percent = (with_: number, without: number): string => `${(((with_ - without) / without) * 100).toFixed(1)} %`;

/** One process's runs of the QR example: a warm-up, then two timed runs, plain or profiled. */
async function qrRuns(mode: "plain" | "profiled"): Promise<void> {
  const a = da.random.random([10000, 1000], { chunks: [1000, 1000] });
  const [q, r] = da.linalg.qr(a);
  const a2 = q.dot(r);
  // Warm the pool and its WebAssembly, as an earlier computation in a session would have.
  await a2.compute({ scheduler: "threads" });
  const runs: Timed[] = [];
  let samples = 0;
  for (let i = 0; i < 2; i++) {
    if (mode === "plain") runs.push(await timed(() => a2.compute({ scheduler: "threads" })));
    else {
      const sp = new StatisticalProfiler();
      runs.push(await timed(() => withCallbacks(sp, () => a2.compute({ scheduler: "threads" }))));
      samples = sp.results.count;
    }
  }
  console.log(JSON.stringify({ first: runs[0], second: runs[1], samples }));
}

/**
 * Plain and profiled runs in separate processes (a thread keeps V8's sampler once it has been
 * profiled, so "plain" must come from a process that never profiled), interleaved round by round.
 * A process's first profile also pays for discarding the threads' optimised code once.
 */
async function profilerOverhead(): Promise<Record<string, number>> {
  const runs: Record<"plain" | "profiled", { first: Timed; second: Timed; samples: number }[]> = { plain: [], profiled: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["plain", "profiled"] as const) : (["profiled", "plain"] as const);
    for (const mode of order) {
      const out = execFileSync(process.execPath, [__filename, "--qr", mode], { encoding: "utf8" });
      runs[mode].push(JSON.parse(out.trim().split("\n").pop()!));
    }
  }
  const med = (mode: "plain" | "profiled", which: "first" | "second", field: keyof Timed): number => median(runs[mode].map((run) => run[which][field]));
  const figures = {
    plainWall: med("plain", "second", "wall"),
    profiledWall: med("profiled", "second", "wall"),
    plainCpu: med("plain", "second", "cpu"),
    profiledCpu: med("profiled", "second", "cpu"),
    firstPlainCpu: med("plain", "first", "cpu"),
    firstProfiledCpu: med("profiled", "first", "cpu"),
    firstPlainWall: med("plain", "first", "wall"),
    firstProfiledWall: med("profiled", "first", "wall"),
    samples: median(runs.profiled.map((run) => run.samples)),
  };
  console.log(`\nStatistical profiler on the QR example (threads): ${ROUNDS} processes each way, interleaved; medians`);
  printTable(
    ["", "plain", "profiled", "overhead"],
    [
      ["first profile: wall s", figures.firstPlainWall, figures.firstProfiledWall, percent(figures.firstProfiledWall, figures.firstPlainWall)],
      ["first profile: process CPU s", figures.firstPlainCpu, figures.firstProfiledCpu, percent(figures.firstProfiledCpu, figures.firstPlainCpu)],
      ["later profiles: wall s", figures.plainWall, figures.profiledWall, percent(figures.profiledWall, figures.plainWall)],
      ["later profiles: process CPU s", figures.plainCpu, figures.profiledCpu, percent(figures.profiledCpu, figures.plainCpu)],
    ],
  );
  console.log(`(${figures.samples} compute samples per profiled run; Dask: its profiler is disabled on Python 3.11, nothing to compare)`);
  return figures;
}

async function reportOf(tasks: number, file: string): Promise<{ get: number; withReport: number; bytes: number }> {
  const inc = (x: number): number => x + 1;
  const dsk: Record<string, unknown> = {};
  for (let i = 0; i < tasks; i++) dsk[`inc-${i}`] = [inc, i];
  const keys = Object.keys(dsk);
  await get(dsk, keys.slice(0, 100));
  const plain = await timed(() => get(dsk, keys));
  const reported = await timed(() => performanceReport({ filename: file }, () => get(dsk, keys)));
  return { get: plain.wall, withReport: reported.wall, bytes: statSync(file).size };
}

async function reportTimings(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "tsdask-bench-report-"));
  const browser = await launchChromium();
  try {
    // The smaller run first: the larger one's garbage would otherwise be collected on its time.
    const small = await reportOf(COMPARED_TASKS, join(dir, "small.html"));
    const smallOpened = await openReport(browser, join(dir, "small.html"));
    const big = await reportOf(REPORT_TASKS, join(dir, "big.html"));
    const bigOpened = await openReport(browser, join(dir, "big.html"));
    const dask = runPython<{ tasks: number; get: number; with_report: number; html_bytes: number; file: string }>("dask_report.py", [String(COMPARED_TASKS), join(dir, "dask.html")]);
    const daskOpened = await openDaskReport(browser, dask.file);
    const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(2)} MB`;
    const all = (o: ReportOpened): number => o.open + o.taskStream + o.rest;
    console.log(`\nperformanceReport (sync scheduler): ${REPORT_TASKS} and ${COMPARED_TASKS} tasks; Dask: Profiler + ResourceProfiler + visualize on ${COMPARED_TASKS}; seconds`);
    printTable(
      ["", `ours ${REPORT_TASKS}`, `ours ${COMPARED_TASKS}`, `Dask ${COMPARED_TASKS}`],
      [
        ["get alone", big.get, small.get, dask.get],
        ["get recorded + page built and written", big.withReport, small.withReport, dask.with_report],
        ["HTML size", mb(big.bytes), mb(small.bytes), mb(dask.html_bytes)],
        ["Chromium: open to summary", bigOpened.open, smallOpened.open, "–"],
        ["Chromium: + task stream tab", bigOpened.taskStream, smallOpened.taskStream, "–"],
        ["Chromium: + the other tabs", bigOpened.rest, smallOpened.rest, "–"],
        ["Chromium: everything drawn", all(bigOpened), all(smallOpened), daskOpened],
      ],
    );
    console.log(`ratios at ${COMPARED_TASKS} tasks, Dask / ours: recording + page ${(dask.with_report / small.withReport).toFixed(1)}×, size ${(dask.html_bytes / small.bytes).toFixed(1)}×, drawn in Chromium ${(daskOpened / all(smallOpened)).toFixed(1)}×`);
    return { big, bigOpened, small, smallOpened, dask, daskOpened };
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.argv[2] === "--qr") return qrRuns(process.argv[3] as "plain" | "profiled");
  const overhead = await profilerOverhead();
  const report = await reportTimings();
  console.log(JSON.stringify({ bench: "diagnose", rounds: ROUNDS, overhead, report }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
