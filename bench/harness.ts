// Shared by the benchmarks: timing, running the Dask side in the project's Python, and printing.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { Client, LocalCluster, type SchedulerName, get } from "../src";

const root = join(__dirname, "..", "..");

/** Best wall time in seconds of `repeats` runs after one warm-up. */
export async function bestOf(repeats: number, run: () => Promise<unknown>): Promise<number> {
  await run();
  let best = Infinity;
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await run();
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  return best;
}

/** Wall time in seconds of one run. */
export async function timeOnce(run: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await run();
  return (performance.now() - t0) / 1000;
}

/** Whether this build has the scheduler (threads and processes arrive with the pool executors). */
export async function hasScheduler(scheduler: SchedulerName): Promise<boolean> {
  try {
    await get({ x: 1 }, "x", { scheduler });
    return true;
  } catch (error) {
    if (error instanceof Error && /not available/.test(error.message)) return false;
    throw error;
  }
}

/**
 * Runs bench/<script> with the project's Python (see scripts/setup/python.mjs), or `python`, and
 * parses its JSON output.
 */
export function runPython<T>(
  script: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
  python = process.env.TSDASK_PYTHON ?? join(root, ".venv/bin/python"),
): T {
  const stdout = execFileSync(python, [join(root, "bench", script), ...args], {
    cwd: join(root, "bench"),
    env: { ...process.env, ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 1024 * 1024,
  });
  const lastLine = stdout.trim().split("\n").pop() ?? "";
  return JSON.parse(lastLine) as T;
}

/** The Python with Dask distributed the cluster benchmarks compare with: Debian's (python3-distributed). */
export const DASK_PYTHON = process.env.TSDASK_DISTRIBUTED_PYTHON ?? "/usr/bin/python3";

/** Dask distributed for the comparison: Debian's python3-distributed, installed if missing. */
export function ensureDistributed(): void {
  try {
    execFileSync(DASK_PYTHON, ["-c", "import distributed, dask.array, numpy"], { stdio: "ignore" });
    return;
  } catch {
    console.log(`${DASK_PYTHON} has no dask distributed: installing Debian's python3-distributed (apt-get)`);
  }
  try {
    execFileSync("apt-get", ["update"], { stdio: "inherit" });
    execFileSync("apt-get", ["install", "-y", "python3-distributed"], { stdio: "inherit" });
  } catch (error) {
    throw new Error(`Cannot install python3-distributed (run as root: apt-get install -y python3-distributed): ${(error as Error).message}`);
  }
}

/** Debian's Chromium, headless, as the browser tests launch it (scripts/setup/chromium.mjs). */
export async function launchChromium(): Promise<Browser> {
  const setup = (await import(pathToFileURL(join(root, "scripts/setup/chromium.mjs")).href)) as { ensureChromium(): string; CHROMIUM_ARGS: string[] };
  return chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS });
}

/** Seconds a performance report took to draw in Chromium, step by step. */
export interface ReportOpened {
  /** Navigation to the summary drawn. */
  open: number;
  /** Then the task stream tab drawn. */
  taskStream: number;
  /** Then every other tab drawn. */
  rest: number;
}

/** Opens one of our performance reports from disk and draws its tabs one after the other. */
export async function openReport(browser: Browser, file: string): Promise<ReportOpened> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  try {
    const t0 = performance.now();
    await page.goto(pathToFileURL(file).href);
    await page.locator("#panel-summary h1").waitFor({ timeout: 60_000 });
    const t1 = performance.now();
    const show = (tab: string): Promise<void> =>
      page.evaluate((id) => (globalThis as unknown as { __tsdaskReport: { show(id: string): Promise<void> } }).__tsdaskReport.show(id), tab);
    await show("task-stream");
    const t2 = performance.now();
    const tabs = await page.locator(".tsdask-report-tab").evaluateAll((buttons) => buttons.map((button) => button.id.slice("tab-".length)));
    for (const tab of tabs) await show(tab);
    const t3 = performance.now();
    return { open: (t1 - t0) / 1000, taskStream: (t2 - t1) / 1000, rest: (t3 - t2) / 1000 };
  } finally {
    await page.close();
  }
}

/** Opens Dask's performance_report from disk; it draws everything at once: seconds to Bokeh's plots painted. */
export async function openDaskReport(browser: Browser, file: string): Promise<number> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  try {
    const t0 = performance.now();
    await page.goto(pathToFileURL(file).href, { timeout: 300_000 });
    await page.waitForFunction("globalThis.Bokeh !== undefined && Object.keys(globalThis.Bokeh.index).length > 0", null, { timeout: 300_000, polling: 10 });
    await page.evaluate(() => {
      const frame = (globalThis as unknown as { requestAnimationFrame(callback: () => void): void }).requestAnimationFrame.bind(globalThis);
      return new Promise<void>((done) => frame(() => frame(done)));
    });
    return (performance.now() - t0) / 1000;
  } finally {
    await page.close();
  }
}

/** Prints rows as an aligned table. */
/** CPU seconds (user + system) a process has used, or one of its threads (`tid`), from /proc. */
export function cpuSeconds(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are the 14th and 15th fields of the whole line (11th, 12th after the name).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function printTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  const cells = [header, ...rows].map((row) => row.map((cell) => (typeof cell === "number" ? format(cell) : cell)));
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  for (const row of cells) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join("  "));
}

function format(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 1 ? value.toFixed(2) : value.toFixed(3);
}

/** A LocalCluster of `count` one-thread workers with a Client on it, for `body`; both closed after. */
export async function onLocalCluster<T>(count: number, name: string, body: (client: Client) => Promise<T>): Promise<T> {
  const cluster = await LocalCluster.start({ nWorkers: count, threadsPerWorker: 1, name, dashboardAddress: null });
  try {
    const client = await Client.connect(cluster);
    try {
      return await body(client);
    } finally {
      await client.close();
    }
  } finally {
    await cluster.close();
  }
}
