// The Fine Performance Metrics panel from a real computation, as a standalone page in real
// headless Chromium: the three charts drawn offline with no console error, working selectors
// (unit → other bars; a function → Send data hides), tooltips with readable values and
// percentages, update() keeping the selection, and task names with HTML in them shown as text.
// A screenshot goes to test-output/fpm-panel.png for people to look at.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { FinePerformanceMetrics, type FpmData, array as da, closePools, get, span, withCallbacks } from "../../src";
import { readLike } from "../fixtures/metered-tasks";
import { waitForBars } from "../helpers/fpm-page";
import { watchPage } from "../helpers/page-log";

const root = join(__dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "tsdask-fpm-browser-"));
const XSS_KEY = "<img src=x onerror=window.__xss=1>";
let browser: Browser;

before(async () => {
  const setup = (await import(pathToFileURL(join(root, "scripts/setup/chromium.mjs")).href)) as { ensureChromium(): string; CHROMIUM_ARGS: string[] };
  browser = await chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  closePools();
  rmSync(dir, { recursive: true, force: true });
});

test("the panel: three charts offline, selectors that work, values readable, HTML in names as text", async () => {
  const fpm = new FinePerformanceMetrics();
  await withCallbacks(fpm, async () => {
    const a = da.random.random([2000, 500], { chunks: [500, 500] });
    await span("load", () => a.sum().compute({ scheduler: "threads" }));
    await get({ [XSS_KEY]: [readLike, 30, "I/O", 4096] }, XSS_KEY, { scheduler: "threads" });
  });
  const file = join(dir, "fpm.html");
  const panel = await fpm.visualize({ filename: file });
  assert.equal(panel.file, file);

  const page = await browser.newPage({ viewport: { width: 1200, height: 640 } });
  const { errors, requests } = watchPage(page);
  await page.goto(pathToFileURL(file).href);

  const first = await waitForBars(page, (s) => s.bars.length > 0, "the bars");
  assert.deepEqual(first.titles.slice(0, 3), ["Task execution, by function", "Task execution, by activity", "Send data, by activity"]);
  assert.ok(first.bars.includes("thread-cpu") && first.bars.includes("I/O"), JSON.stringify(first.bars));
  assert.ok(first.slices >= 3);
  assert.ok(first.legend.includes("idle"));
  assert.equal(first.unit, "seconds");
  mkdirSync(join(root, "test-output"), { recursive: true });
  await page.screenshot({ path: join(root, "test-output/fpm-panel.png") });

  // Hover a bar: the tooltip names the function and activity with a readable value and a share.
  const bar = page.locator(".fpm_bars_marks path").first();
  await bar.hover();
  const tooltip = page.locator("#vg-tooltip-element.visible");
  await tooltip.waitFor({ timeout: 5000 });
  assert.match((await tooltip.textContent()) ?? "", /Value\d[\d.]* (s|ms|µs)Of the function\d[\d.]* %/);

  // The task whose key is HTML: its name is drawn as text, and nothing ran.
  const labels = await page.locator(".role-axis-label text").allTextContents();
  assert.ok(labels.some((label) => label.startsWith("<img")), JSON.stringify(labels));
  assert.equal(await page.locator(".tsdask-fpm img").count(), 0);

  // Unit → bytes: the bars now show the digested bytes only.
  await page.selectOption(".tsdask-fpm-unit-select", "bytes");
  const bytes = await waitForBars(page, (s) => s.bars.length > 0 && s.bars.every((a) => a === "S3 Infrequent Access"), "the bytes bars");
  assert.deepEqual(bytes.legend, ["S3 Infrequent Access"]);

  // Back to seconds, then pick a function: Send data hides, the choice shows as a chip.
  await page.selectOption(".tsdask-fpm-unit-select", "seconds");
  await waitForBars(page, (s) => s.bars.includes("thread-cpu"), "the seconds bars");
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] summary').click();
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] input[type=checkbox][value="sum"]').check();
  const filtered = await waitForBars(page, (s) => !s.titles.includes("Send data, by activity"), "Send data to hide");
  assert.deepEqual(filtered.chips, ["sum"]);
  assert.ok(!filtered.legend.includes("I/O"), "only the chosen function's activities");

  // Newer data redraws in place and keeps the selection; options only grow.
  const newer: FpmData = { ...panel.data, metrics: [...panel.data.metrics, { context: "execute", prefix: "late-arrival", activity: "thread-cpu", unit: "seconds", value: 1 }] };
  const options = await page.evaluate(async (data) => {
    const handle = (globalThis as unknown as { __tsdaskFpm: { update(d: unknown): Promise<void>; state: unknown; options: { functions: string[] } } }).__tsdaskFpm;
    await handle.update(data);
    return { state: handle.state, functions: handle.options.functions };
  }, newer);
  assert.deepEqual(options.state, { spans: [], functions: ["sum"], unit: "seconds" });
  assert.ok(options.functions.includes("late-arrival") && options.functions.includes("sum"));

  assert.equal(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss), undefined);
  assert.deepEqual(errors, []);
  for (const url of requests) assert.match(url, /^(file|data|blob):/, `network request to ${url}`);
  await page.close();
});
