// A LocalCluster's diagnostics opened from file:// in headless Chromium (one worker's clock 5 s
// ahead): the performance report of the seeds' QR example plus a task whose key is markup — no
// request, no console error, every tab drawing its marks, keys as text everywhere — and the
// task-stream plot and profile pages the Client writes. Screenshots go to test-output/cluster-*.png.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { Client, LocalCluster, MemorySampler, type PerformanceReport, get, getTaskStream, now, performanceReport } from "../../src";
import * as da from "../../src/kernel/collections/array";
import { ROOT, launchChromium } from "../helpers/jupyterlab";
import { type OfflinePage, assertOffline, openOffline } from "../helpers/offline-page";
import { hotLoop } from "../diagnostics/hot";
import { ramp, total } from "../fixtures/cluster-tasks";

const SHOTS = join(ROOT, "test-output");
const dir = mkdtempSync(join(tmpdir(), "tsdask-cluster-report-"));
const EVIL = "<img src=x onerror=globalThis.__xss=1>";
const TABS = [
  "Summary",
  "Task Stream",
  "Worker Profile (compute)",
  "Worker Profile (administrative)",
  "Scheduler Profile (administrative)",
  "Bandwidth",
  "System",
  "Worker Logs",
  "Fine Performance Metrics",
  "Memory",
];

let browser: Browser;
let cluster: LocalCluster;
let client: Client;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
  cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, dashboardAddress: null, name: "report-browser", simulatedClockOffsets: [0, 5] });
  client = await Client.connect(cluster);
  // The workers' first clock-offset estimates.
  await new Promise((resolve) => setTimeout(resolve, 1200));
});
after(async () => {
  await client?.close();
  await cluster?.close();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Handles = { show(id: string): Promise<void>; views: Record<string, { view: VegaView }[]> };
interface VegaView {
  scenegraph(): { root: VegaMark };
}
interface VegaMark {
  marktype: string;
  role?: string;
  items: { items?: VegaMark[]; datum?: Record<string, unknown> }[];
}

/** Draws a tab and waits for it. */
async function show(page: Page, tab: string): Promise<void> {
  await page.click(`#tab-${tab}`);
  await page.evaluate((id) => (globalThis as unknown as { __tsdaskReport: Handles }).__tsdaskReport.show(id), tab);
}

/** [marktype, item count] of every mark a tab's Vega views drew. */
function vegaMarks(page: Page, tab: string): Promise<[string, number][]> {
  return page.evaluate((id) => {
    const found: [string, number][] = [];
    const walk = (mark: VegaMark): void => {
      if (mark.role === "mark") found.push([mark.marktype, mark.items.length]);
      for (const item of mark.items) for (const child of item.items ?? []) walk(child);
    };
    for (const { view } of (globalThis as unknown as { __tsdaskReport: Handles }).__tsdaskReport.views[id] ?? []) walk(view.scenegraph().root);
    return found;
  }, tab);
}

describe("the performance report of a cluster run", () => {
  let report: PerformanceReport<unknown>;
  let opened: OfflinePage;
  let t0: number;
  let t1: number;

  before(async () => {
    const file = join(dir, "dask-report.html");
    t0 = now();
    report = await performanceReport({ filename: file }, async () => {
      const ms = new MemorySampler();
      await ms.sample("qr", async () => {
        const a = da.random.random([4000, 1000], { chunks: [1000, 1000] });
        const [q, r] = da.linalg.qr(a);
        await q.dot(r).compute();
      }, { interval: 0.25 });
      // A key that is markup, whose inputs come from both workers.
      await get({ [EVIL]: [total, "x", "y"], x: [ramp, 200_000, 1, true], y: [ramp, 300_000, 2, true], burn: [hotLoop, 4000] }, [EVIL, "burn"]);
    });
    t1 = now();
    opened = await openOffline(browser, file, { width: 1300, height: 900 }, (page) => page.locator("#panel-summary h1").waitFor({ timeout: 30_000 }));
  });

  test("it opens from file:// with no request and no console error; the summary has the cluster's workers and their clocks", async () => {
    assertOffline(opened);
    const { page } = opened;
    assert.deepEqual(await page.locator(".tsdask-report-tab").allTextContents(), TABS);
    const summary = (await page.locator("#panel-summary").textContent()) ?? "";
    assert.match(summary, /Client\(LocalCluster 'report-browser'\)/);
    assert.match(summary, /transfer time/);
    const rows = await page.locator(".tsdask-report-workers tr").allTextContents();
    assert.equal(rows.length, 3);
    assert.ok(rows.some((row) => /^worker-1unix:\/\/.*\+5\.0\d s$/.test(row)), rows.join(" | "));
    await page.screenshot({ path: join(SHOTS, "cluster-report-summary.png"), fullPage: true });
  });

  test("the task stream: a row per worker, the phases in their colours, on the block's time axis; the markup key is text in the hover", async () => {
    const { page } = opened;
    await show(page, "task-stream");
    const marks = await vegaMarks(page, "task-stream");
    assert.deepEqual(marks, [["rect", report.data.taskStream.data === undefined ? 0 : (report.data.taskStream.data as { data: { values: unknown[] } }).data.values.length]]);
    const data = await page.evaluate(() => {
      const handles = (globalThis as unknown as { __tsdaskReport: Handles }).__tsdaskReport;
      const root = handles.views["task-stream"][0].view.scenegraph().root;
      const items: Record<string, unknown>[] = [];
      const walk = (mark: VegaMark): void => {
        if (mark.role === "mark") for (const item of mark.items) items.push(item.datum!);
        for (const item of mark.items) for (const child of item.items ?? []) walk(child);
      };
      walk(root);
      return items;
    });
    assert.deepEqual([...new Set(data.map((d) => d.row))].sort(), ["worker-0", "worker-1"]);
    assert.ok(data.some((d) => d.phase === "transfer" && typeof d.from === "string" && /^worker-[01]$/.test(d.from as string)));
    const xs = data.map((d) => d.t2 as number);
    assert.ok(Math.max(...xs) <= t1 - t0 + 0.05, `the last phase ends ${Math.max(...xs)} s in: the skewed worker lines up`);
    await page.screenshot({ path: join(SHOTS, "cluster-report-task-stream.png"), fullPage: true });
    // Hover the markup key's compute rect.
    const centre = await page.evaluate((evil) => {
      interface Item { x: number; y: number; width: number; height: number; datum: { key: string; phase: string } }
      interface View { scenegraph(): { root: { items: { items: { role?: string; items: Item[] }[] }[] } }; origin(): [number, number]; padding(): { left: number; top: number }; container(): { querySelector(s: string): { getBoundingClientRect(): { x: number; y: number } } | null } }
      const { view } = (globalThis as unknown as { __tsdaskReport: { views: Record<string, { view: View }[]> } }).__tsdaskReport.views["task-stream"][0];
      const canvas = view.container().querySelector("canvas")!.getBoundingClientRect();
      const [ox, oy] = view.origin();
      const { left, top } = view.padding();
      const rects = view.scenegraph().root.items[0].items.find((mark) => mark.role === "mark")!.items;
      const item = rects.find((r) => r.datum.key === evil && r.datum.phase === "compute")!;
      return { x: canvas.x + left + ox + item.x + Math.max(1, item.width / 2), y: canvas.y + top + oy + item.y + item.height / 2 };
    }, EVIL);
    await page.mouse.move(centre.x, centre.y);
    const tooltip = page.locator("#vg-tooltip-element.visible");
    await tooltip.waitFor({ timeout: 5000 });
    assert.ok(((await tooltip.textContent()) ?? "").includes(EVIL));
    assert.equal(await tooltip.locator("img").count(), 0);
  });

  test("the workers' profiles and the scheduler's: icicles of their threads, the QR kernels named, prefixes as text", async () => {
    const { page } = opened;
    await show(page, "profile-compute");
    const compute = page.locator("#panel-profile-compute");
    assert.ok((await compute.locator(".tsdask-icicle-cell").count()) >= 5);
    const labels = await compute.locator(".tsdask-icicle text").allTextContents();
    assert.ok(labels.includes("applyQ") || labels.includes("qrReflectors"), labels.join(", "));
    const options = await compute.locator("select option").allTextContents();
    assert.ok(options.some((o) => o.startsWith("tsqr (")), options.join(" | "));
    assert.ok(options.some((o) => o.startsWith(`${EVIL} (`)) || options.some((o) => o.startsWith("burn (")), options.join(" | "));
    await page.screenshot({ path: join(SHOTS, "cluster-report-profile-compute.png"), fullPage: true });
    // A kernel frame is its AssemblyScript function in its asm/ file (issue 25.6), not wasm-function[N] in the module's hash.
    const kernels = report.data.computeProfile.data!.profile.frames.filter(([, , filename]) => filename.startsWith("asm/"));
    assert.ok(kernels.length > 0, "WebAssembly kernels in their asm/ files, not the module's hash");
    assert.ok(kernels.every(([, name]) => !name.startsWith("wasm-function")), `kernels by name: ${kernels.map(([, name]) => name).join(", ")}`);
    assert.ok(!report.data.computeProfile.data!.profile.frames.some(([, name]) => /^wasm-function\[/.test(name)));
    for (const tab of ["profile-administrative", "profile-scheduler"]) {
      await show(page, tab);
      assert.ok((await page.locator(`#panel-${tab} .tsdask-icicle-cell`).count()) >= 2, tab);
      await page.screenshot({ path: join(SHOTS, `cluster-report-${tab}.png`), fullPage: true });
    }
  });

  test("bandwidth, system, fine performance metrics and memory draw the cluster's data", async () => {
    const { page } = opened;
    await show(page, "bandwidth");
    const bandwidth = await vegaMarks(page, "bandwidth");
    assert.ok(bandwidth.filter(([type, count]) => type === "rect" && count > 0).length >= 2, JSON.stringify(bandwidth));
    const pairs = (report.data.bandwidth.data!.workers as { layer: { data?: unknown }[]; data: { values: { source: string; destination: string }[] } }).data.values;
    assert.deepEqual(pairs.map((p) => [p.source, p.destination].sort().join(" ")).sort()[0], "worker-0 worker-1", "the heatmap names the workers");
    await page.screenshot({ path: join(SHOTS, "cluster-report-bandwidth.png"), fullPage: true });

    await show(page, "system");
    assert.ok((await vegaMarks(page, "system")).some(([type, count]) => type === "line" && count > 0));
    assert.match(JSON.stringify((report.data.system.data as { title: unknown }).title), /cluster's 2 workers/);
    await page.screenshot({ path: join(SHOTS, "cluster-report-system.png"), fullPage: true });

    // Each worker's log lines under its name, as text (Dask's Worker Logs tab).
    await show(page, "worker-logs");
    const logs = page.locator("#panel-worker-logs");
    assert.deepEqual((await logs.locator("h2").allTextContents()).map((h) => h.split(" — ")[0]).sort(), ["worker-0", "worker-1"]);
    assert.match((await logs.locator(".tsdask-report-logs").first().textContent()) ?? "", /^\d\d:\d\d:\d\d\.\d{6} - INFO - Start worker at: unix:\/\//);

    await show(page, "fine-metrics");
    const fpm = page.locator("#panel-fine-metrics");
    assert.ok((await fpm.locator("canvas, svg").count()) > 0);
    assert.match((await fpm.textContent()) ?? "", /Client\(LocalCluster 'report-browser'\)/);
    await page.screenshot({ path: join(SHOTS, "cluster-report-fine-metrics.png"), fullPage: true });

    await show(page, "memory");
    const memory = await vegaMarks(page, "memory");
    assert.ok(memory.some(([type, count]) => type === "symbol" && count >= 3), JSON.stringify(memory));
    await page.screenshot({ path: join(SHOTS, "cluster-report-memory.png"), fullPage: true });

    assertOffline(opened);
    assert.equal(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss), undefined);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
  });
});

describe("the Client's own pages", () => {
  test("getTaskStream's plot and client.profile's page open offline and draw", async () => {
    const a = da.random.random([3000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(a);
    const t0 = now();
    const ts = await getTaskStream(() => q.dot(r).compute(), { plot: "save", filename: join(dir, "task-stream.html"), width: 1100 });
    const page1 = await openOffline(browser, ts.figure!.file!, { width: 1300, height: 500 }, (page) =>
      page.waitForFunction(() => (globalThis as { __tsdaskView?: unknown }).__tsdaskView !== undefined, null, { timeout: 20_000 }),
    );
    assertOffline(page1);
    await page1.page.screenshot({ path: join(SHOTS, "cluster-task-stream.png") });

    const file = join(dir, "profile.html");
    await client.profile({ start: t0, filename: file });
    const page2 = await openOffline(browser, file, { width: 1300, height: 700 }, (page) => page.locator(".tsdask-icicle-cell").first().waitFor({ timeout: 20_000 }));
    assertOffline(page2);
    const options = await page2.page.locator("select option").allTextContents();
    assert.ok(options.some((o) => o.startsWith("tsqr (")), options.join(" | "));
    await page2.page.screenshot({ path: join(SHOTS, "cluster-profile.png") });
  });
});
