// The performance report of a real local computation, opened from file:// in headless Chromium:
// offline (no request, no console error), every tab draws its marks, the profile view zooms and
// brushes, untrusted keys stay text; a large run's report opens with a bounded task stream.
// Screenshots of every tab go to test-output/report-<tab>.png for people to look at.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { MemorySampler, type PerformanceReport, get, performanceReport } from "../../src";
import { binCount } from "../../src/protocol/plot/bins";
import { ROOT, launchChromium } from "../helpers/jupyterlab";
import { type OfflinePage, assertOffline, openOffline } from "../helpers/offline-page";
import { filled, hotLoop } from "./hot";
import { add } from "./tasks";

const SHOTS = join(ROOT, "test-output");
const dir = mkdtempSync(join(tmpdir(), "tsdask-report-browser-"));
const EVIL = "<img src=x onerror=globalThis.__xss=1>";
const TABS = ["Summary", "Task Stream", "Worker Profile (compute)", "Worker Profile (administrative)", "Bandwidth", "System", "Worker Logs", "Memory"];
let browser: Browser;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

const open = (file: string): Promise<OfflinePage> =>
  openOffline(browser, file, { width: 1300, height: 900 }, (page) => page.locator("#panel-summary h1").waitFor({ timeout: 30_000 }));

/** Draws a tab and waits for it. */
async function show(page: Page, tab: string): Promise<void> {
  await page.click(`#tab-${tab}`);
  await page.evaluate((id) => (globalThis as unknown as { __tsdaskReport: { show(id: string): Promise<void> } }).__tsdaskReport.show(id), tab);
}

/** Marks drawn by a tab's Vega views: [marktype, item count] per mark, in scenegraph order. */
function vegaMarks(page: Page, tab: string): Promise<[string, number][]> {
  return page.evaluate((id) => {
    interface Mark { marktype: string; role?: string; items: Item[] }
    interface Item { items?: Mark[] }
    interface View { scenegraph(): { root: Mark } }
    const handles = (globalThis as unknown as { __tsdaskReport: { views: Record<string, { view: View }[]> } }).__tsdaskReport;
    const found: [string, number][] = [];
    const walk = (mark: Mark): void => {
      if (mark.role === "mark") found.push([mark.marktype, mark.items.length]);
      for (const item of mark.items) for (const child of item.items ?? []) walk(child);
    };
    for (const { view } of handles.views[id] ?? []) walk(view.scenegraph().root);
    return found;
  }, tab);
}

describe("a local computation's report", () => {
  let report: PerformanceReport<unknown>;
  let opened: OfflinePage;
  let phases: number;

  before(async () => {
    const ms = new MemorySampler();
    const file = join(dir, "dask-report.html");
    report = await performanceReport({ filename: file }, async () => {
      const dsk: Record<string, unknown> = { x: [filled, 1e5] };
      for (let i = 0; i < 6; i++) dsk[`burn-${i}`] = [hotLoop, 3000];
      dsk[EVIL] = [add, "burn-0", "burn-1"];
      await ms.sample("threads", () => get(dsk, [EVIL, "burn-2", "burn-3", "burn-4", "burn-5", "x"], { scheduler: "threads", numWorkers: 2 }), { interval: 0.05 });
      await ms.sample("sync", () => get({ a: [hotLoop, 1500], b: [add, "a", 1] }, "b"), { interval: 0.05 });
    });
    phases = report.data.summary.tasks;
    opened = await open(file);
  });

  test("it opens from file:// with no request and no console error; the tabs are Dask's and more", async () => {
    assertOffline(opened);
    const labels = await opened.page.locator(".tsdask-report-tab").allTextContents();
    assert.deepEqual(labels, TABS);
    const summary = (await opened.page.locator("#panel-summary").textContent()) ?? "";
    assert.match(summary, /10tasks/, "8 tasks on threads, 2 on sync");
    assert.match(summary, /compute time/);
    assert.match(summary, /Node\.js/);
    const code = (await opened.page.locator(".tsdask-report-code").textContent()) ?? "";
    assert.ok(code.includes('ms.sample("threads"'), "the calling code is the block's source");
    await opened.page.screenshot({ path: join(SHOTS, "report-summary.png"), fullPage: true });
  });

  test("the task stream draws one rect per task phase; hover shows the untrusted key as text", async () => {
    const { page } = opened;
    await show(page, "task-stream");
    const marks = await vegaMarks(page, "task-stream");
    assert.deepEqual(marks, [["rect", phases]]);
    await page.screenshot({ path: join(SHOTS, "report-task-stream.png"), fullPage: true });
    // Hover every rect until the tooltip shows the hostile key.
    const centres = await page.evaluate(() => {
      interface Item { x: number; y: number; width: number; height: number; datum: { key: string } }
      interface View { scenegraph(): { root: { items: { items: { role?: string; items: Item[] }[] }[] } }; origin(): [number, number]; padding(): { left: number; top: number }; container(): { getBoundingClientRect(): { x: number; y: number } } }
      const { view } = (globalThis as unknown as { __tsdaskReport: { views: Record<string, { view: View }[]> } }).__tsdaskReport.views["task-stream"][0];
      const canvas = (view.container() as unknown as { querySelector(s: string): { getBoundingClientRect(): { x: number; y: number } } }).querySelector("canvas").getBoundingClientRect();
      const [ox, oy] = view.origin();
      const { left, top } = view.padding();
      const group = view.scenegraph().root.items[0];
      const rects = group.items.find((mark) => mark.role === "mark")!.items;
      return rects.map((item) => ({ key: item.datum.key, x: canvas.x + left + ox + item.x + item.width / 2, y: canvas.y + top + oy + item.y + item.height / 2 }));
    });
    const evil = centres.find((c) => c.key === EVIL)!;
    assert.ok(evil !== undefined);
    await page.mouse.move(evil.x, evil.y);
    const tooltip = page.locator("#vg-tooltip-element.visible");
    await tooltip.waitFor({ timeout: 5000 });
    assert.ok(((await tooltip.textContent()) ?? "").includes(EVIL));
    assert.equal(await tooltip.locator("img").count(), 0);
  });

  test("the compute profile: the hot function under its prefix; click zooms, the prefix selector and the time brush select", async () => {
    const { page } = opened;
    await show(page, "profile-compute");
    const panel = page.locator("#panel-profile-compute");
    const cells = panel.locator(".tsdask-icicle-cell");
    assert.ok((await cells.count()) >= 2);
    const labels = await panel.locator(".tsdask-icicle text").allTextContents();
    assert.ok(labels.includes("hotLoop"), `frames: ${labels.join(", ")}`);
    const options = await panel.locator("select option").allTextContents();
    assert.match(options[0], /^All$/);
    assert.ok(options.some((o) => o.startsWith("burn (")), `options: ${options.join(" | ")}`);
    await page.screenshot({ path: join(SHOTS, "report-profile-compute.png"), fullPage: true });

    // Hovering it shows its source line (which holds markup) as text.
    const hotFrame = panel.locator(".tsdask-icicle-cell", { has: page.locator("text", { hasText: /^hotLoop$/ }) }).first().locator("rect");
    await hotFrame.hover();
    assert.match((await panel.locator(".tsdask-profile-detail").textContent()) ?? "", /^hotLoop — hot\.ts:\d+ — .*HOT LINE <img src=x onerror=globalThis\.__xss=1>/);
    assert.equal(await panel.locator("img").count(), 0);

    // Click the hotLoop frame: it becomes the root and the breadcrumbs grow.
    await panel.locator(".tsdask-icicle-cell", { has: page.locator("text", { hasText: /^hotLoop$/ }) }).first().locator("rect").click();
    const crumbs = await panel.locator(".tsdask-crumb").allTextContents();
    assert.deepEqual(crumbs.at(-1), "hotLoop");
    assert.equal(await panel.locator(".tsdask-profile-reset").isDisabled(), false);
    await panel.locator(".tsdask-profile-reset").click();
    assert.deepEqual(await panel.locator(".tsdask-crumb").allTextContents(), ["all"]);

    // The prefix selector narrows the tree to one prefix.
    const before = (await panel.locator(".tsdask-profile-summary").textContent()) ?? "";
    const addOption = options.find((o) => o.startsWith(`${EVIL} (`));
    if (addOption !== undefined) {
      await panel.locator("select").selectOption({ label: addOption });
      assert.notEqual(await panel.locator(".tsdask-profile-summary").textContent(), before);
    }
    await panel.locator("select").selectOption({ label: options.find((o) => o.startsWith("burn ("))! });
    const burnSamples = Number(/^(\d+) samples/.exec((await panel.locator(".tsdask-profile-summary").textContent()) ?? "")?.[1]);
    assert.ok(burnSamples > 0);

    // Drag across the first half of the timeline: a time window is selected.
    const box = (await panel.locator(".tsdask-profile-timeline").boundingBox())!;
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    assert.equal(await panel.locator(".tsdask-timeline-selection").count(), 1);
    assert.doesNotMatch((await panel.locator(".tsdask-profile-summary").textContent()) ?? "", /whole run/);
    await panel.locator(".tsdask-profile-all-time").click();
    assert.match((await panel.locator(".tsdask-profile-summary").textContent()) ?? "", /whole run/);
  });

  test("the administrative profile, bandwidth, system and memory tabs draw their contents", async () => {
    const { page } = opened;
    await show(page, "profile-administrative");
    assert.ok((await page.locator("#panel-profile-administrative .tsdask-icicle-cell").count()) >= 2);
    await page.screenshot({ path: join(SHOTS, "report-profile-administrative.png"), fullPage: true });

    await show(page, "bandwidth");
    assert.match((await page.locator("#panel-bandwidth").textContent()) ?? "", /No transfers: the local schedulers move no data between workers/);

    await show(page, "system");
    const system = await vegaMarks(page, "system");
    assert.ok(system.some(([type, count]) => type === "line" && count > 0), JSON.stringify(system));
    await page.screenshot({ path: join(SHOTS, "report-system.png"), fullPage: true });

    await show(page, "memory");
    const memory = await vegaMarks(page, "memory");
    const points = memory.find(([type]) => type === "symbol");
    assert.ok(points !== undefined && points[1] >= 4, JSON.stringify(memory));
    assert.ok(memory.some(([type]) => type === "line"));
    assert.equal(report.data.memory.note, undefined, "the block's own MemorySampler series are shown");
    await page.screenshot({ path: join(SHOTS, "report-memory.png"), fullPage: true });
    assertOffline(opened);
    assert.equal(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss), undefined);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
  });
});

describe("a large run's report", () => {
  test("100 000 tasks: the page opens with a binned task stream and every tab drawn", async () => {
    const inc = (x: number): number => x + 1;
    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) dsk[`inc-${i}`] = [inc, i];
    const file = join(dir, "large.html");
    const report = await performanceReport({ filename: file }, () => get(dsk, Object.keys(dsk)));
    assert.equal(report.data.summary.tasks, 100_000);
    const opened = await open(file);
    const drawStarted = Date.now();
    for (const tab of ["task-stream", "profile-compute", "profile-administrative", "system", "memory"]) await show(opened.page, tab);
    const drawMs = Date.now() - drawStarted;
    console.log(`100 000-task report: opened in ${opened.openMs} ms, every tab drawn in ${drawMs} ms more`);
    const [[type, marks]] = await vegaMarks(opened.page, "task-stream");
    assert.equal(type, "rect");
    assert.ok(marks <= binCount(1000), `${marks} marks for one row`);
    assertOffline(opened);
  });
});
