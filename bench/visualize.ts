// Benchmark of visualize() for 10 k / 100 k / 1 M tasks: spec build, Node SVG render, and the
// standalone HTML's first render in headless Chromium, with peak memory; beside Dask's
// plot_tasks (Bokeh) for the same records in the same run.
// Run: npx tsc -p tsconfig.test.json && node build/bench/visualize.js [sizes…]
// Each size runs in its own Node process, so "peak RSS" is that size's own peak.

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { visualize } from "../src/kernel/diagnostics/visualize";
import { T0, cacheSnapshot, makeCache, makeResources, makeTasks, profiler, resourcesSnapshot, tasksSnapshot } from "../test/diagnostics/visualize-fixtures";

const root = join(__dirname, "../..");
const WORKERS = 8;
const DASK_LIMIT = 100_000;

interface Setup {
  ensureChromium(): string;
  CHROMIUM_ARGS: string[];
}
interface PythonSetup {
  ensurePythonEnv(): { python: string };
}

const ms = (start: number): number => Math.round(performance.now() - start);
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

/** One size in this process: prints one JSON line with the timings. */
async function measureOne(n: number, dir: string): Promise<void> {
  const tasks = makeTasks(n, WORKERS);
  const span = tasks[tasks.length - 1].endTime - T0;
  const profilers = [
    profiler(tasksSnapshot(tasks)),
    profiler(resourcesSnapshot(makeResources(Math.ceil(span) + 1, 1))),
    profiler(cacheSnapshot(makeCache(tasks))),
  ];
  const inputRss = process.memoryUsage().rss;
  // The first call in a process loads vega (ESM, ~0.5 MB of code): timed apart, as a kernel pays it once.
  let start = performance.now();
  await visualize(profiler(tasksSnapshot(makeTasks(10))), { save: false });
  const firstCall = ms(start);
  start = performance.now();
  const plot = await visualize(profilers, { save: false });
  const build = ms(start);
  const specBytes = JSON.stringify(plot.spec).length;
  start = performance.now();
  const svg = await plot.toSVG();
  const svgTime = ms(start);
  start = performance.now();
  const file = plot.save(join(dir, `tsdask-${n}.html`));
  const save = ms(start);
  const result = {
    n,
    firstCall,
    inputRss,
    build,
    specBytes,
    svg: svgTime,
    svgBytes: svg.length,
    save,
    htmlBytes: statSync(file).size,
    file,
    peakRss: process.resourceUsage().maxRSS * 1024,
    heapUsed: process.memoryUsage().heapUsed,
  };
  console.log(JSON.stringify(result));
}

/** Dask's plot_tasks for the same records, saved with Bokeh inlined (offline) for Chromium. */
function daskOne(python: string, n: number, dir: string): { build: number; save: number; htmlBytes: number; file: string; peakRss: number } {
  const file = join(dir, `dask-${n}.html`);
  const script = `
import json, resource, time
from dask.diagnostics.profile import TaskData
from dask.diagnostics.profile_visualize import plot_tasks
from bokeh.io import save
from bokeh.resources import INLINE
n, workers, t0 = ${n}, ${WORKERS}, ${T0}
clock = [t0 + 0.01] * workers
results = []
for i in range(n):
    w = i % workers
    d = 0.015 if w == 0 else 0.01
    g = ["load", "add", "sum"][(i // workers) % 3]
    s = clock[w]; clock[w] += d
    results.append(TaskData((g + "-0123456789abcdef0123456789abcdef", i), (g, i), s, s + d, w))
start = time.perf_counter()
fig = plot_tasks(results, {}, t0, max(clock))
build = time.perf_counter() - start
start = time.perf_counter()
save(fig, filename=${JSON.stringify(file)}, resources=INLINE, title="dask")
saved = time.perf_counter() - start
print(json.dumps({"build": round(build * 1000), "save": round(saved * 1000), "peakRss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
`;
  const out = JSON.parse(execFileSync(python, ["-c", script], { encoding: "utf8", maxBuffer: 1 << 24 }).trim().split("\n").pop() as string);
  return { ...out, htmlBytes: statSync(file).size, file };
}

/** Time from navigation to the first frame painted after the plot library says it is drawn. */
async function firstRender(browser: Browser, file: string, ready: string): Promise<{ ms: number; jsHeap: number }> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 950 } });
  const errors: string[] = [];
  page.on("pageerror", (error) => void errors.push(error.message));
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const start = performance.now();
  await page.goto(pathToFileURL(file).href, { waitUntil: "load", timeout: 300_000 });
  await page.waitForFunction(ready, null, { timeout: 300_000, polling: 10 });
  // Two animation frames: the one the plot was drawn in has been painted.
  await page.evaluate(() => {
    const frame = (globalThis as unknown as { requestAnimationFrame(callback: () => void): void }).requestAnimationFrame.bind(globalThis);
    return new Promise<void>((done) => frame(() => frame(done)));
  });
  const elapsed = ms(start);
  const { metrics } = (await cdp.send("Performance.getMetrics")) as { metrics: { name: string; value: number }[] };
  await page.close();
  if (errors.length > 0) throw new Error(`${file}: ${errors.join("; ")}`);
  return { ms: elapsed, jsHeap: metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? NaN };
}

async function main(): Promise<void> {
  const [flag, size, outDir] = process.argv.slice(2);
  if (flag === "--one") return measureOne(Number(size), outDir);
  const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10_000, 100_000, 1_000_000];
  const dir = mkdtempSync(join(tmpdir(), "tsdask-bench-visualize-"));
  const setup = (await import(pathToFileURL(join(root, "scripts/setup/chromium.mjs")).href)) as Setup;
  const python = process.env.TSDASK_PYTHON ?? ((await import(pathToFileURL(join(root, "scripts/setup/python.mjs")).href)) as PythonSetup).ensurePythonEnv().python;
  const browser = await chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS });
  const lines: string[] = [];
  try {
    for (const n of sizes) {
      const ours = JSON.parse(execFileSync(process.execPath, [__filename, "--one", String(n), dir], { encoding: "utf8", maxBuffer: 1 << 24 }).trim().split("\n").pop() as string);
      const render = await firstRender(browser, ours.file, "globalThis.__tsdaskView !== undefined");
      const line =
        `tsdask ${n.toLocaleString("en")} tasks: spec build ${ours.build} ms (${mb(ours.specBytes)} JSON), ` +
        `build + Chromium first render ${ours.build + render.ms} ms (render ${render.ms} ms, page JS heap ${mb(render.jsHeap)}), ` +
        `Node SVG ${ours.svg} ms (${mb(ours.svgBytes)}), HTML ${mb(ours.htmlBytes)} written in ${ours.save} ms, ` +
        `peak RSS ${mb(ours.peakRss)} (records alone ${mb(ours.inputRss)}); loading vega on the first call ${ours.firstCall} ms`;
      console.log(line);
      lines.push(line);
      rmSync(ours.file);
      if (n > DASK_LIMIT) {
        console.log(`dask   ${n.toLocaleString("en")} tasks: skipped (Bokeh's one-glyph-per-task HTML at this size takes minutes and GBs)`);
        continue;
      }
      const dask = daskOne(python, n, dir);
      const daskRender = await firstRender(browser, dask.file, "globalThis.Bokeh !== undefined && Object.keys(globalThis.Bokeh.index).length > 0");
      const daskLine =
        `dask   ${n.toLocaleString("en")} tasks: plot_tasks ${dask.build} ms, build + Chromium first render ${dask.build + daskRender.ms} ms ` +
        `(render ${daskRender.ms} ms, page JS heap ${mb(daskRender.jsHeap)}), HTML ${mb(dask.htmlBytes)} saved in ${dask.save} ms, peak RSS ${mb(dask.peakRss)}; ` +
        `ratio dask/tsdask (build + first render) ${((dask.build + daskRender.ms) / (ours.build + render.ms)).toFixed(1)}×`;
      console.log(daskLine);
      lines.push(daskLine);
      rmSync(dask.file);
    }
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const results = join(root, "bench/results");
  execFileSync("mkdir", ["-p", results]);
  writeFileSync(join(results, "visualize.txt"), lines.join("\n") + "\n");
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
