// The standalone dashboard page in real headless Chromium, served by serveDashboard and fed by a
// real local computation (DashboardFeed) plus cluster-shaped sections from a provider (as the
// Client will give them): live progress, workers, memory, bandwidth, empty states, no request elsewhere,
// hostile names as text, light and dark. Screenshots: test-output/dashboard-page*.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { type Browser, type Page, chromium } from "playwright-core";
import { DashboardFeed, DashboardPublisher, type DashboardServer, MemorySampler, StatisticalProfiler, get, serveDashboard, withCallbacks } from "../../src";
import { now } from "../../src/kernel/clock";
import { color } from "../helpers/lab-page";
import { EVIL, clusterSections } from "./fixtures";

const root = join(__dirname, "../../..");
const SHOTS = join(root, "test-output");
const publisher = new DashboardPublisher({ notebook: false, minIntervalMs: 250 });
let server: DashboardServer;
let browser: Browser;
let page: Page;
const errors: string[] = [];
const requests: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const setup = (await import(pathToFileURL(join(root, "scripts/setup/chromium.mjs")).href)) as { ensureChromium(): string; CHROMIUM_ARGS: string[] };
  browser = await chromium.launch({ executablePath: process.env.TSDASK_CHROMIUM ?? setup.ensureChromium(), args: setup.CHROMIUM_ARGS });
  server = await serveDashboard("127.0.0.1:0", publisher);
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (message) => void (message.type() === "error" && errors.push(message.text())));
  page.on("pageerror", (error) => void errors.push(error.message));
  page.on("request", (request) => void requests.push(request.url()));
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const card = (kind: string) => page.locator(`.tsdask-dashboard-card[data-kind="${kind}"]`);

test("before any data, every panel says what to run", async () => {
  await page.goto(server.url);
  await card("fpm").locator(".tsdask-dashboard-empty").waitFor();
  assert.match((await card("progress").textContent()) ?? "", /new DashboardFeed\(\)/);
  assert.match((await card("workers").textContent()) ?? "", /Client\.connect/);
});

test("a local computation's progress goes live on the page and ends finished", async () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const slow = async (x: number): Promise<number> => {
    await sleep(20);
    return x + 1;
  };
  const dsk: Record<string, unknown> = { x: 0 };
  for (let i = 0; i < 120; i++) dsk[`slow-${i}`] = [slow, "x"];
  dsk["total"] = [(...xs: number[]) => xs.reduce((a, b) => a + b, 0), ...Array.from({ length: 120 }, (_, i) => `slow-${i}`)];
  const running = withCallbacks(new DashboardFeed({ publisher, label: "page test" }), () => get(dsk, "total"));
  const progress = card("progress").locator(".tsdask-dashboard-computation").first();
  await progress.waitFor({ timeout: 20_000 });
  await progress.evaluate((el) => el.setAttribute("data-test-first", "yes"));
  const seen: number[] = [];
  while ((await progress.getAttribute("data-state")) !== "finished") {
    seen.push(Number(await progress.locator("[role=progressbar]").getAttribute("aria-valuenow")));
    await page.waitForTimeout(50);
    assert.ok(seen.length < 600, "the computation never showed as finished");
  }
  assert.equal(await running, 120);
  assert.ok(new Set(seen.filter((v) => v > 0 && v < 100)).size >= 2, `the bar moved through: ${[...new Set(seen)].join(", ")}`);
  assert.equal(await progress.getAttribute("data-test-first"), "yes", "updated in place, not rebuilt");
  assert.equal(await progress.locator(".tsdask-dashboard-computation-label").textContent(), "page test");
  assert.equal(await progress.locator(".tsdask-progress-counts").textContent(), "121 / 121");
  assert.deepEqual(await progress.locator(".tsdask-progress-group-name").allTextContents(), ["slow", "total"]);
});

test("cluster sections fill the workers, memory and bandwidth panels; hostile names stay text", async () => {
  const source = publisher.provide({ name: "test cluster", sections: () => clusterSections(now()) });
  try {
    const rows = card("workers").locator("tbody tr");
    await page.waitForFunction(() => document.querySelectorAll('.tsdask-dashboard-card[data-kind="workers"] tbody tr').length === 4, undefined, { timeout: 10_000 });
    assert.deepEqual(await rows.locator("td.tsdask-col-name").allTextContents(), ["worker-0", "worker-2", "worker-3", EVIL].sort(new Intl.Collator(undefined, { numeric: true }).compare));
    assert.equal(await rows.filter({ hasText: "worker-3" }).locator("td.tsdask-col-status").textContent(), "paused");
    assert.equal(await rows.filter({ hasText: "worker-2" }).locator("td.tsdask-col-spilled").textContent(), "512.00 MiB");
    assert.match((await card("workers").locator(".tsdask-dashboard-summary").textContent()) ?? "", /LocalCluster · 4 workers · 8 threads · 8\.00 GiB memory/);
    const memory = card("memory");
    assert.equal(await memory.locator(".tsdask-memory-worker").count(), 4);
    const managedWidth = await memory.locator(".tsdask-memory-bar").first().locator(".tsdask-memory-managed").evaluate((el) => parseFloat(el.style.width));
    assert.ok(managedWidth > 0 && managedWidth < 100, `managed ${managedWidth}%`);
    const bandwidth = card("bandwidth");
    assert.match((await bandwidth.locator(".tsdask-dashboard-summary").textContent()) ?? "", /300\.00 MiB\/s/);
    assert.deepEqual(await bandwidth.locator(".tsdask-bandwidth-row .tsdask-bandwidth-name").allTextContents(), ["Float64Array", EVIL]);
    const fills = await bandwidth.locator(".tsdask-bandwidth-fill").evaluateAll((els) => els.map((el) => parseFloat((el as unknown as { style: { width: string } }).style.width)));
    assert.deepEqual(fills, [100, 0.125], "bars by type scale to the largest");
    // Senders are rows, receivers columns, by name (sorted as the workers table sorts them).
    const byName = new Intl.Collator(undefined, { numeric: true }).compare;
    const matrix = bandwidth.locator(".tsdask-bandwidth-matrix");
    const receivers = ["worker-0", EVIL].sort(byName);
    assert.deepEqual(await matrix.locator("thead th").allTextContents(), ["from \\ to", ...receivers]);
    assert.deepEqual(await matrix.locator("tbody th").allTextContents(), ["worker-0", EVIL, "worker-2"].sort(byName));
    const cells = async (sender: string): Promise<Record<string, string>> => {
      const rows = await matrix.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => cell.textContent ?? "")));
      const [, ...texts] = rows.find(([name]) => name === sender) ?? [];
      return Object.fromEntries(receivers.map((receiver, i) => [receiver, texts[i]]));
    };
    assert.deepEqual(await cells("worker-0"), { "worker-0": "", [EVIL]: "512.00 MiB/s" });
    assert.deepEqual(await cells("worker-2"), { "worker-0": "1.00 GiB/s", [EVIL]: "" });
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await page.evaluate(() => (window as { __xss?: unknown }).__xss), undefined);
    // Cards with data move to the front.
    const order = await page.locator(".tsdask-dashboard-card").evaluateAll((els) => els.map((el) => el.getAttribute("data-kind")));
    assert.deepEqual(order.slice(0, 4), ["progress", "workers", "memory", "bandwidth"]);
    assert.match((await card("fpm").textContent()) ?? "", /Fine Performance Metrics come from a cluster/);
    await page.screenshot({ path: join(SHOTS, "dashboard-page.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForFunction(() => document.body.dataset.jpThemeLight === "false");
    await page.screenshot({ path: join(SHOTS, "dashboard-page-dark.png"), fullPage: true });
    assert.equal(await color(page.locator("body"), "backgroundColor"), "rgb(17, 17, 17)");
  } finally {
    source.close();
  }
});

/**
 * Runs `check` with a page on the process's own publisher (the notebook's), which MemorySampler
 * and StatisticalProfiler feed; the page and its server are closed afterwards.
 */
async function withOwnFeedPage(check: (ownPage: Page, url: string) => Promise<void>): Promise<void> {
  const own = await serveDashboard("127.0.0.1:0");
  const ownPage = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  ownPage.on("pageerror", (error) => void errors.push(error.message));
  try {
    await check(ownPage, own.url);
  } finally {
    await ownPage.close();
    await own.close();
  }
}

test("the last MemorySampler's series: one line per label, aligned at 0 s on request", () =>
  withOwnFeedPage(async (samplerPage, url) => {
    const ms = new MemorySampler();
    const grow = async (): Promise<number> => {
      const blocks: Float64Array[] = [];
      for (let i = 0; i < 6; i++) {
        blocks.push(new Float64Array(2 ** 20).fill(i));
        await new Promise((resolve) => setTimeout(resolve, 60));
      }
      return blocks.length;
    };
    await ms.sample("first", grow, { interval: 0.05 });
    await ms.sample(EVIL, grow, { interval: 0.05 });
    await samplerPage.goto(url);
    const panel = samplerPage.locator('.tsdask-dashboard-card[data-kind="memory-sampler"]');
    await panel.locator("svg .mark-line path").nth(1).waitFor({ timeout: 15_000 });
    assert.equal(await panel.locator("svg .mark-line path").count(), 2, "one line per label");
    assert.match((await panel.locator(".tsdask-dashboard-summary").textContent()) ?? "", /^2 series \(first, <img/);
    const legend = await panel.locator("svg .role-legend-label text").allTextContents();
    // Vega shortens long legend labels with an ellipsis; the label stays text.
    assert.equal(legend.length, 2);
    assert.equal(legend[0], "first");
    assert.ok(legend[1].startsWith("<img src=x onerror="), legend[1]);
    assert.match((await panel.locator("svg .role-axis-title text").allTextContents()).join("|"), /Time\|Process memory/);
    await panel.locator(".tsdask-memory-sampler-align input").check();
    await panel.locator("svg .role-axis-title text", { hasText: "Time since the block started (s)" }).waitFor({ timeout: 10_000 });
    assert.equal(await samplerPage.locator('img[src="x"]').count(), 0);
  }));

test("the last StatisticalProfiler's profile: its icicle, by task prefix", () =>
  withOwnFeedPage(async (profilePage, url) => {
    // Two prefixes of CPU-bound tasks on the sync scheduler: the main thread is sampled.
    const busy = (ms: number): number => {
      const end = Date.now() + ms;
      let turns = 0;
      while (Date.now() < end) turns++;
      return turns;
    };
    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < 6; i++) {
      dsk[`crunch-${i}`] = [busy, 60];
      dsk[`grind-${i}`] = [busy, 30];
    }
    const sp = new StatisticalProfiler({ interval: 0.005, cycle: 0.1 });
    await withCallbacks(sp, () => get(dsk, Object.keys(dsk)));
    assert.ok(sp.results.count > 0, "the profiler sampled the tasks");
    await profilePage.goto(url);
    const panel = profilePage.locator('.tsdask-dashboard-card[data-kind="profile"]');
    await panel.locator(".tsdask-icicle-cell").first().waitFor({ timeout: 15_000 });
    const prefixes = await panel.locator("select option").allTextContents();
    assert.ok(prefixes.some((text) => text.startsWith("crunch")) && prefixes.some((text) => text.startsWith("grind")), JSON.stringify(prefixes));
    const cells = await panel.locator(".tsdask-icicle-cell").count();
    assert.ok(cells >= 2, `the icicle has frames: ${cells}`);
  }));

test("the page made no request outside its server and logged no error", () => {
  const origin = new URL(server.url).origin;
  assert.deepEqual(requests.filter((url) => !url.startsWith(origin)), []);
  assert.deepEqual(errors, []);
});
