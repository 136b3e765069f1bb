// The standalone HTML in real headless Chromium: it renders every mark offline with no console
// error, zooming one plot moves the others, tooltips show untrusted keys as text, and a
// screenshot of the stacked plot goes to test-output/visualize-stacked.png for people to look at.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { type Browser, type Page, chromium } from "playwright-core";
import { type OfflinePage, assertOffline, openOffline } from "../helpers/offline-page";
import { type VegaLiteSpec, visualize } from "../../src/kernel/diagnostics/visualize";
import { binCount } from "../../src/protocol/plot/bins";
import { XSS_KEY, cacheSnapshot, makeCache, makeResources, makeTasks, profiler, resourcesSnapshot, tasksSnapshot } from "./visualize-fixtures";

const root = join(__dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "tsdask-visualize-browser-"));
let browser: Browser;

before(async () => {
  const setup = (await import(pathToFileURL(join(root, "scripts/setup/chromium.mjs")).href)) as {
    ensureChromium(): string;
    CHROMIUM_ARGS: string[];
  };
  browser = await chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens a saved plot, recording console errors, page errors and every request the page makes. */
const open = (file: string): Promise<OfflinePage> =>
  openOffline(browser, file, { width: 1100, height: 950 }, (page) =>
    page.waitForFunction(() => (globalThis as { __tsdaskView?: unknown }).__tsdaskView !== undefined, null, { timeout: 20_000 }),
  );

interface MarkInfo {
  marktype: string;
  count: number;
  /** Page coordinates of each item's centre (rect: its middle; symbol: its position). */
  centres: [number, number][];
}

/** The marks drawn in the `plot`-th stacked view, read from the Vega scenegraph. */
async function marksOf(page: Page, plot: number): Promise<MarkInfo[]> {
  const canvas = await page.locator("#tsdask-plot canvas").boundingBox();
  assert.ok(canvas !== null);
  return page.evaluate(
    ([plotIndex, left, top]) => {
      interface Item { x?: number; y?: number; width?: number; height?: number; items?: Mark[] }
      interface Mark { marktype: string; role?: string; items: Item[] }
      interface View {
        scenegraph(): { root: Mark };
        origin(): [number, number];
        padding(): { left: number; top: number };
      }
      const view = (globalThis as unknown as { __tsdaskView: View }).__tsdaskView;
      // The canvas draws the scene translated by the view's padding plus its origin.
      const [ox, oy] = view.origin();
      const { left: padLeft, top: padTop } = view.padding();
      const concat = view.scenegraph().root.items[0];
      const plotMark = (concat.items as Mark[])[plotIndex];
      const plotItem = plotMark.items[0];
      const dx = left + padLeft + ox + (concat.x ?? 0) + (plotItem.x ?? 0);
      const dy = top + padTop + oy + (concat.y ?? 0) + (plotItem.y ?? 0);
      return (plotItem.items as Mark[])
        .filter((mark) => mark.role === "mark")
        .map((mark) => ({
          marktype: mark.marktype,
          count: mark.items.length,
          centres: mark.items.map((item): [number, number] => [dx + (item.x ?? 0) + (item.width ?? 0) / 2, dy + (item.y ?? 0) + (item.height ?? 0) / 2]),
        }));
    },
    [plot, canvas.x, canvas.y] as const,
  );
}

const xDomain = (page: Page): Promise<number[]> =>
  page.evaluate(() => (globalThis as unknown as { __tsdaskView: { scale(name: string): { domain(): number[] } } }).__tsdaskView.scale("x").domain());

const rowsOf = (spec: VegaLiteSpec, plot: number): unknown[] => ((spec.vconcat as VegaLiteSpec[])[plot].data as { values: unknown[] }).values;

test("the stacked plot renders every mark offline; zoom is linked; untrusted keys stay text", async () => {
  const tasks = makeTasks(60, 3, XSS_KEY);
  const file = join(dir, "stacked.html");
  const plot = await visualize(
    [profiler(tasksSnapshot(tasks)), profiler(resourcesSnapshot(makeResources(4, 0.15))), profiler(cacheSnapshot(makeCache(tasks), "count"))],
    { filename: file, width: 700, height: 220 },
  );
  const opened = await open(file);
  const { page } = opened;

  const taskMarks = await marksOf(page, 0);
  assert.deepEqual(taskMarks.map((m) => [m.marktype, m.count]), [["rect", 60]]);
  const resourceMarks = await marksOf(page, 1);
  assert.deepEqual(resourceMarks.map((m) => [m.marktype, m.count]), [["line", 4], ["symbol", 4], ["line", 4], ["symbol", 4]]);
  const cacheMarks = await marksOf(page, 2);
  // (The step lines sit in a per-group scope; the hover points are one mark over all groups.)
  assert.deepEqual(cacheMarks.map((m) => m.marktype), ["symbol"]);
  assert.equal(cacheMarks[0].count, rowsOf(plot.spec, 2).length);

  mkdirSync(join(root, "test-output"), { recursive: true });
  await page.screenshot({ path: join(root, "test-output/visualize-stacked.png"), fullPage: true });

  // Hover the task whose key is an HTML payload: the tooltip shows it as text and nothing runs.
  const xssIndex = (rowsOf(plot.spec, 0) as { key: string }[]).findIndex((row) => row.key === `'${XSS_KEY}'`);
  const [hx, hy] = taskMarks[0].centres[xssIndex];
  await page.mouse.move(hx, hy);
  const tooltip = page.locator("#vg-tooltip-element.visible");
  await tooltip.waitFor({ timeout: 5000 });
  assert.ok((await tooltip.textContent())?.includes(`'${XSS_KEY}'`));
  assert.equal(await tooltip.locator("img").count(), 0);
  assert.equal(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss), undefined);

  // Hover works in the other plots too: a resource sample and a cache point show their values.
  for (const [[px, py], expected] of [
    [resourceMarks[1].centres[2], /Time \(s\)0\.3% CPU124\.0Memory \(MB\)220\.0/],
    [cacheMarks[0].centres[cacheMarks[0].count - 1], /Group.*Time \(s\).*count/],
  ] as const) {
    await page.mouse.move(px, py);
    // (A function, not a string: the page's CSP forbids evaluating strings.)
    await page.waitForFunction(
      (pattern) => {
        const { document } = globalThis as unknown as { document: { querySelector(selector: string): { textContent: string | null } | null } };
        return new RegExp(pattern).test(document.querySelector("#vg-tooltip-element.visible")?.textContent ?? "");
      },
      expected.source,
      { timeout: 5000 },
    );
  }

  // Wheel-zoom on the top plot: the shared time scale narrows and the cache points below move with it.
  const before = await xDomain(page);
  const pointsBefore = cacheMarks[0].centres;
  await page.mouse.move(hx - 100, hy);
  await page.mouse.wheel(0, -400);
  await page.waitForFunction((old) => {
    const domain = (globalThis as unknown as { __tsdaskView: { scale(n: string): { domain(): number[] } } }).__tsdaskView.scale("x").domain();
    return domain[0] !== old[0] || domain[1] !== old[1];
  }, before);
  const zoomed = await xDomain(page);
  assert.ok(zoomed[1] - zoomed[0] < before[1] - before[0], `zoomed in: ${zoomed} vs ${before}`);
  const pointsAfter = (await marksOf(page, 2))[0].centres;
  const stretch = (pointsAfter[pointsAfter.length - 1][0] - pointsAfter[0][0]) / (pointsBefore[pointsBefore.length - 1][0] - pointsBefore[0][0]);
  assert.ok(Math.abs(stretch - (before[1] - before[0]) / (zoomed[1] - zoomed[0])) < 0.01, `cache plot stretched ×${stretch}`);

  // And back from the bottom plot: a wheel over the cache plot moves the task plot's scale.
  const [cx, cy] = pointsAfter[Math.floor(pointsAfter.length / 2)];
  await page.mouse.move(cx, cy - 20);
  await page.mouse.wheel(0, 400);
  await page.waitForFunction((old) => {
    const domain = (globalThis as unknown as { __tsdaskView: { scale(n: string): { domain(): number[] } } }).__tsdaskView.scale("x").domain();
    return domain[1] - domain[0] > old[1] - old[0];
  }, zoomed);
  const rectsAfter = (await marksOf(page, 0))[0].centres;
  assert.notDeepEqual(rectsAfter, taskMarks[0].centres);

  assertOffline(opened);
  await page.close();
});

test("100 000 tasks render as bounded time bins in Chromium, offline and without errors", async () => {
  const workers = 8;
  const tasks = makeTasks(100_000, workers);
  const file = join(dir, "large.html");
  const plot = await visualize([profiler(tasksSnapshot(tasks)), profiler(cacheSnapshot(makeCache(tasks)))], { filename: file });
  const opened = await open(file);
  const [bins] = await marksOf(opened.page, 0);
  assert.equal(bins.marktype, "rect");
  assert.equal(bins.count, rowsOf(plot.spec, 0).length);
  assert.ok(bins.count <= workers * binCount(800), `${bins.count} marks`);
  assertOffline(opened);
  await opened.page.close();
});

test("empty profilers and a single resource sample draw axes and nothing else, without errors", async () => {
  const file = join(dir, "empty.html");
  await visualize(
    [profiler(tasksSnapshot([], 0)), profiler(resourcesSnapshot([{ time: 1_700_000_000, mem: 50, cpu: 0 }], 0)), profiler(cacheSnapshot([], "count", 0))],
    { filename: file },
  );
  const opened = await open(file);
  assert.deepEqual(await xDomain(opened.page), [0, 1]);
  assert.deepEqual((await marksOf(opened.page, 0)).map((m) => m.count), [0]);
  assert.deepEqual((await marksOf(opened.page, 1)).map((m) => [m.marktype, m.count]), [["line", 1], ["symbol", 1], ["line", 1], ["symbol", 1]]);
  assertOffline(opened);
  await opened.page.close();
});
