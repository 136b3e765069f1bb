// The tsdask dashboard with real clusters, in a real JupyterLab with real tslab kernels and headless
// Debian Chromium, as a user would use it: the Fine Performance Metrics item dragged beside a notebook
// whose LocalCluster computes, its bars growing while the cell runs; the unit and function selectors;
// a reload that brings the panel back with its selection, live again; the cluster's own dashboard
// page; two notebooks with two clusters, each panel fed by its own; closing a notebook; a notebook
// with no cluster. Screenshots: test-output/dashboard-cluster-*.png.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import type { DashboardSnapshot } from "../../src/protocol/dashboard";
import { DashboardLab } from "../helpers/dashboard-lab";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const SHOTS = join(ROOT, "test-output");
const A = "dashboard-cluster-a.ipynb";
const B = "dashboard-cluster-b.ipynb";
/** A notebook that starts no cluster (its cells are never run here). */
const PLAIN = "dashboard-a.ipynb";

let server: LabServer;
let browser: Browser;
let page: Page;
let ui: DashboardLab;
const pageErrors: string[] = [];
/** The worker processes of the clusters the notebooks started, to check none outlives its kernel. */
const workerPids = new Set<number>();

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([A, B, PLAIN].map((name) => join(ROOT, "test/fixtures", name)));
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1500, height: 950 }, pageErrors);
  ui = new DashboardLab(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
  // A worker leaves when its kernel's IPC channel closes, after removing its folder: give it a moment.
  const alive = (): number[] => [...workerPids].filter((pid) => existsSync(`/proc/${pid}`));
  for (const end = Date.now() + 15_000; alive().length > 0 && Date.now() < end; ) await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(alive(), [], "cluster workers outlived their kernels");
});

/** Seconds from the FPM view's value text: "1.23 s", "456 ms", "78 µs", "1.2 min". */
function seconds(text: string): number {
  const match = /^([\d.]+) (h|min|s|ms|µs|ns)$/.exec(text.trim());
  assert.ok(match, `a duration: ${text}`);
  const scale = { h: 3600, min: 60, s: 1, ms: 1e-3, µs: 1e-6, ns: 1e-9 }[match[2] as "s"];
  return Number(match[1]) * scale;
}

/** The bars of an FPM panel as drawn: function → its total (text), and each bar segment's activity. */
async function fpmBars(panel: Locator): Promise<{ totals: Record<string, string>; activities: string[]; functions: string[] }> {
  // Vega labels each bar segment for screen readers: "Function: spin; Activity: thread-cpu; …; Function total: 1.2 s".
  const labels = await panel.locator(".fpm_bars_marks path").evaluateAll((paths) => paths.map((p) => p.getAttribute("aria-label") ?? ""));
  const field = (label: string, name: string): string | undefined => new RegExp(`${name}: ([^;]*)`).exec(label)?.[1];
  const totals: Record<string, string> = {};
  const activities: string[] = [];
  for (const label of labels) {
    const fn = field(label, "Function");
    const total = field(label, "Function total");
    if (fn !== undefined && total !== undefined) totals[fn] = total;
    activities.push(field(label, "Activity") ?? "?");
  }
  return { totals, activities, functions: Object.keys(totals) };
}

/** The dashboard link the cluster card in cell `index` of the notebook in front shows. */
async function cardLink(index: number): Promise<string> {
  const card = lab.cell(page, index).locator(".tsdask-cluster");
  await card.waitFor({ timeout: 60_000 });
  const href = await card.locator("a").getAttribute("href");
  assert.match(href ?? "", /^http:\/\/127\.0\.0\.1:\d+\/status$/);
  return href!;
}

/** The cluster's own page's current snapshot (its workers' pids are remembered for the leak check). */
async function pageSnapshot(link: string): Promise<DashboardSnapshot> {
  const snapshot = (await (await fetch(new URL("snapshot.json", link))).json()) as DashboardSnapshot;
  for (const worker of snapshot.workers ?? []) workerPids.add(worker.pid);
  return snapshot;
}

let linkA = "";
let spinBefore = 0;

test("the FPM item dragged onto the right half of a cluster notebook splits the dock beside it", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await ui.openNotebook(A);
  await ui.openSidebar();
  const notebook = ui.notebookPanel(A);
  await ui.drag(ui.sidebarItem("fpm"), notebook, 0.85, 0.5);
  const fpm = ui.panel("fpm");
  await fpm.waitFor({ timeout: 10_000 });
  await ui.assertBeside(notebook, fpm);
  assert.equal(await page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar").count(), 2, "a split: the panel has its own tab bar");
  // No cluster yet: the panel waits for the kernel's feed.
  assert.equal(await fpm.locator(".tsdask-dashboard-panel").getAttribute("data-state"), "empty");
  // Workers below the FPM panel, to watch the cluster too, and the task stream below the notebook.
  await ui.drag(ui.sidebarItem("workers"), fpm, 0.5, 0.92);
  await ui.panel("workers").waitFor({ timeout: 10_000 });
  await ui.drag(ui.sidebarItem("task-stream"), notebook, 0.5, 0.92);
  await ui.panel("task-stream").waitFor({ timeout: 10_000 });
});

/** The task stream panel's drawn rectangles and its rows' labels. */
async function streamMarks(panel: Locator): Promise<{ marks: number; rows: string[] }> {
  const marks = await panel.locator("svg .mark-rect path").count();
  const rows = await panel.locator("svg .role-axis").filter({ hasText: "Worker thread" }).locator(".role-axis-label text").allTextContents();
  return { marks, rows };
}

test("a cluster computation in the notebook: the FPM panel's bars grow while the cell runs", async () => {
  await ui.runCell(A, 0);
  linkA = await cardLink(0);
  const fpm = ui.panel("fpm");
  const workers = ui.panel("workers");
  await workers.locator(".tsdask-dashboard-summary", { hasText: "LocalCluster 'cluster A' · 2 workers · 2 threads" }).waitFor({ timeout: 30_000 });
  assert.equal(await workers.locator("tbody tr").count(), 2);

  // What the panels show while cell 1 runs — every total of the spin bar, every count of the
  // task stream's marks — noted in the page itself every 25 ms: looked at from here, a few round
  // trips per look, their steps went by unseen on a loaded machine.
  const [fpmElement, streamElement, cellElement] = await Promise.all([fpm.elementHandle(), ui.panel("task-stream").elementHandle(), ui.notebookPanel(A).locator(".jp-Cell").nth(1).elementHandle()]);
  const shown = await page.evaluateHandle(
    ([panel, stream, cell]: readonly lab.PageElement[]) => {
      const spin: string[] = [];
      const marks: number[] = [];
      const timer = setInterval(() => {
        for (const path of Array.from(panel.querySelectorAll(".fpm_bars_marks path"))) {
          const label = path.getAttribute("aria-label") ?? "";
          const total = /Function total: ([^;]*)/.exec(label)?.[1];
          if (/Function: spin;/.test(label) && total !== undefined && spin.at(-1) !== total) spin.push(total);
        }
        const running = cell.querySelector(".jp-InputArea-prompt")?.textContent?.includes("*") ?? false;
        const count = stream.querySelectorAll("svg .mark-rect path").length;
        if (running && count > 0 && marks.at(-1) !== count) marks.push(count);
      }, 25);
      return { spin, marks, stop: () => clearInterval(timer) };
    },
    [fpmElement, streamElement, cellElement] as unknown as readonly lab.PageElement[],
  );
  const spinSeries = async (): Promise<number[]> => (await shown.evaluate(({ spin }) => [...spin])).map(seconds);
  await ui.startCell(A, 1);
  let series: number[] = [];
  let shot = false;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const running = (await lab.cell(page, 1).locator(".jp-InputArea-prompt").textContent())?.includes("*") ?? false;
    series = await spinSeries();
    // The picture for people: the panel beside the notebook, live, part-way through the run.
    if (!shot && running && series.length >= 2) {
      await page.screenshot({ path: join(SHOTS, "dashboard-cluster-fpm-live.png") });
      shot = true;
    }
    if (!running && series.length > 0) break;
    assert.ok(Date.now() < deadline, `the cell did not finish; spin totals seen: ${series.join(", ")}`);
    await page.waitForTimeout(150);
  }
  await ui.cellDone(A, 1);
  series = await spinSeries();
  const streamed = await shown.evaluate(({ marks }) => [...marks]);
  await shown.evaluate(({ stop }) => stop());
  assert.ok(series.length >= 3, `the spin bar grew in steps while the cell ran: ${series.join(" → ")} s`);
  assert.deepEqual([...series].sort((a, b) => a - b), series, `never shrinks: ${series.join(" → ")}`);
  assert.ok(shot, "a screenshot while it ran");
  assert.ok(streamed.length >= 2, `the task stream drew new tasks while the cell ran: ${streamed.join(" → ")} marks`);
  const stream = await streamMarks(ui.panel("task-stream"));
  assert.deepEqual(stream.rows, ["worker-0", "worker-1"], "one row per worker thread, by the workers' names");
  // The last tasks' metrics come with the workers' next heartbeats.
  await page.waitForFunction(() => Array.from(document.querySelectorAll(".tsdask-dashboard .fpm_bars_marks path")).some((p) => /Function: total;/.test(p.getAttribute("aria-label") ?? "")), undefined, { timeout: 15_000 });
  const { functions, activities } = await fpmBars(fpm);
  assert.ok(["spin", "nap", "total"].every((fn) => functions.includes(fn)), JSON.stringify(functions));
  assert.ok(activities.includes("thread-cpu") && activities.includes("thread-noncpu"), JSON.stringify(activities));
  assert.match((await fpm.locator(".tsdask-fpm-summary").textContent()) ?? "", /^LocalCluster 'cluster A', 2 workers, 2 threads · /);
  assert.equal(await ui.sidebarItem("fpm").getAttribute("data-has-data"), "true");
  assert.equal(await ui.sidebarItem("task-stream").getAttribute("data-has-data"), "true");
  assert.deepEqual(await ui.notebookPanel(A).locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output").allTextContents(), ["total 180\n"], "nothing of the feed lands in the notebook");
  spinBefore = series.at(-1)!;
});

test("the unit and function selectors redraw the bars; the choice stays through updates", async () => {
  const fpm = ui.panel("fpm");
  const unit = fpm.locator(".tsdask-fpm-unit-select");
  // The "total" task read its inputs from its worker's memory: counted, in bytes too.
  await unit.locator('option[value="bytes"]').waitFor({ state: "attached", timeout: 15_000 });
  assert.deepEqual(await unit.locator("option").allTextContents(), ["bytes", "count", "seconds"]);
  await unit.selectOption("bytes");
  await page.waitForFunction(() => {
    const labels = Array.from(document.querySelectorAll(".tsdask-dashboard .fpm_bars_marks path")).map((p) => p.getAttribute("aria-label") ?? "");
    return labels.length > 0 && labels.every((label) => /Activity: memory-read/.test(label));
  }, undefined, { timeout: 10_000 });
  await page.screenshot({ path: join(SHOTS, "dashboard-cluster-fpm-bytes.png") });
  await unit.selectOption("seconds");

  const filter = fpm.locator('.tsdask-fpm-filter[data-filter="Filter by function"]');
  await filter.locator("summary").click();
  await filter.locator('input[type=checkbox][value="spin"]').check();
  await page.waitForFunction(() => {
    const labels = Array.from(document.querySelectorAll(".tsdask-dashboard .fpm_bars_marks path")).map((p) => p.getAttribute("aria-label") ?? "");
    return labels.length > 0 && labels.every((label) => /Function: spin;/.test(label));
  }, undefined, { timeout: 10_000 });
  await page.mouse.click(5, 5); // closes the list
  assert.deepEqual(await filter.locator(".tsdask-fpm-chip-text").allTextContents(), ["spin"]);
  // A new snapshot (a small computation) redraws the panel: the choice stays.
  await ui.runCell(A, 1);
  assert.deepEqual((await fpmBars(fpm)).functions, ["spin"]);
  assert.deepEqual(await filter.locator(".tsdask-fpm-chip-text").allTextContents(), ["spin"]);
  const total = seconds((await fpmBars(fpm)).totals.spin!);
  assert.ok(total > spinBefore, `the second run added to spin: ${spinBefore} → ${total} s`);
  spinBefore = total;
});

test("after a reload the FPM panel is back in its place with its selection, and live again", async () => {
  const before = await ui.dockLayout();
  await page.waitForTimeout(1500); // the workspace save's debounce
  await page.reload();
  await ui.waitForApp();
  const fpm = ui.panel("fpm");
  await fpm.waitFor({ state: "attached", timeout: 30_000 });
  assert.deepEqual(await ui.dockLayout(), before, "every tab is back in its place");
  await ui.openNotebook(A);
  await ui.startCell(A, 1);
  const filter = fpm.locator('.tsdask-fpm-filter[data-filter="Filter by function"]');
  await filter.locator(".tsdask-fpm-chip-text", { hasText: "spin" }).waitFor({ timeout: 30_000 });
  // Live again: the running cell's tasks push the spin bar past what it was before the reload.
  let latest = 0;
  const deadline = Date.now() + 90_000;
  while (latest <= spinBefore) {
    assert.ok(Date.now() < deadline, `the panel did not move past ${spinBefore} s (at ${latest} s)`);
    const total = (await fpmBars(fpm)).totals.spin;
    if (total !== undefined) latest = seconds(total);
    await page.waitForTimeout(200);
  }
  assert.deepEqual((await fpmBars(fpm)).functions, ["spin"], "the restored selection still filters");
  await page.screenshot({ path: join(SHOTS, "dashboard-cluster-restored.png") });
  await ui.cellDone(A, 1);
});

test("the cluster's own dashboard page renders its workers, memory, FPM, task stream and profile while it runs", async () => {
  await ui.startCell(A, 1);
  const standalone = await newLabPage(browser, { width: 1400, height: 1000 }, pageErrors);
  const errors: string[] = [];
  standalone.on("console", (message) => void (message.type() === "error" && errors.push(message.text())));
  await standalone.goto(linkA);
  await standalone.locator('.tsdask-dashboard-card[data-kind="workers"] tbody tr').nth(1).waitFor({ timeout: 30_000 });
  await standalone.locator('.tsdask-dashboard-card[data-kind="fpm"] .fpm_bars_marks path').first().waitFor({ timeout: 30_000 });
  await standalone.locator('.tsdask-dashboard-card[data-kind="memory"] .tsdask-memory-worker').nth(1).waitFor({ timeout: 30_000 });
  await standalone.locator('.tsdask-dashboard-card[data-kind="task-stream"] svg .mark-rect path').first().waitFor({ timeout: 30_000 });
  await standalone.locator('.tsdask-dashboard-card[data-kind="profile"] .tsdask-icicle-cell').first().waitFor({ timeout: 30_000 });
  assert.match((await standalone.locator(".tsdask-dashboard-page-status").textContent()) ?? "", /^live/);
  const summary = await standalone.locator('.tsdask-dashboard-card[data-kind="workers"] .tsdask-dashboard-summary').textContent();
  assert.match(summary ?? "", /^LocalCluster 'cluster A' · 2 workers · 2 threads/);
  await standalone.screenshot({ path: join(SHOTS, "dashboard-cluster-page.png"), fullPage: true });
  assert.deepEqual(errors, []);
  await standalone.close();
  await pageSnapshot(linkA);
  await ui.cellDone(A, 1);
});

test("two notebooks with two clusters: each panel shows its own notebook's cluster", async () => {
  // Pin the FPM panel to A; B gets a following one.
  await ui.openNotebook(A);
  await ui.panel("fpm").locator(".tsdask-dashboard-pin").click();
  const pinned = ui.panel("fpm", A);
  await pinned.waitFor();
  await ui.openNotebook(A); // B opens as a tab beside A, not over the panels
  await ui.runCell(B, 0);
  const linkB = await cardLink(0);
  assert.notEqual(linkB, linkA, "the second cluster's dashboard is on another port");
  await ui.runCell(B, 1);
  await pageSnapshot(linkB);
  await ui.sidebarItem("fpm").click();
  const following = ui.panel("fpm");
  await page.waitForFunction(() => Array.from(document.querySelectorAll(".tsdask-dashboard .fpm_bars_marks path")).some((p) => /Function: tango;/.test(p.getAttribute("aria-label") ?? "")), undefined, { timeout: 30_000 });
  const [mine, theirs] = [await fpmBars(following), await fpmBars(pinned)];
  assert.ok(mine.functions.includes("bravo") && mine.functions.includes("tango"), JSON.stringify(mine.functions));
  assert.ok(!mine.functions.includes("spin") && !mine.functions.includes("nap"), `B's panel shows none of A's functions: ${mine.functions}`);
  assert.deepEqual(theirs.functions, ["spin"], "A's pinned panel keeps to A (and to its selection)");
  await ui.panel("workers").locator(".tsdask-dashboard-summary", { hasText: "LocalCluster 'cluster B' · 1 worker · 2 threads" }).waitFor({ timeout: 30_000 });
  await page.screenshot({ path: join(SHOTS, "dashboard-cluster-two.png") });
});

test("closing a notebook disconnects the panels that showed its cluster", async () => {
  await ui.closeNotebook(A);
  const pinned = ui.panel("fpm", A);
  await pinned.locator('.tsdask-dashboard-panel[data-state="disconnected"]').waitFor({ state: "attached", timeout: 10_000 });
  assert.match((await pinned.locator(".tsdask-dashboard-empty").textContent()) ?? "", /dashboard-cluster-a\.ipynb is not open/);
  assert.equal(await pinned.locator(".fpm_bars_marks path").count(), 0, "the closed notebook's data is gone");
  // B closes its cluster: its panels go back to waiting, with no error.
  await ui.runCell(B, 2);
  await ui.panel("workers").locator('.tsdask-dashboard-panel[data-state="empty"]').waitFor({ timeout: 10_000 });
});

test("a notebook with no cluster shows the panels' empty states, not errors", async () => {
  await ui.openNotebook(PLAIN);
  for (const kind of ["fpm", "workers", "memory", "task-stream", "bandwidth"]) {
    await page.evaluate(async (k) => void (await window.jupyterapp.commands.execute("tsdask:open-panel", { kind: k })), kind);
    const panel = ui.panel(kind);
    await panel.locator('.tsdask-dashboard-panel[data-state="empty"]').waitFor({ timeout: 10_000 });
    assert.match((await panel.locator(".tsdask-dashboard-empty").textContent()) ?? "", /No dashboard data from dashboard-a\.ipynb's kernel yet/);
    assert.equal(await panel.locator(".tsdask-dashboard-note").count(), 0);
  }
  await ui.panel("fpm").locator(".tsdask-dashboard-empty-code", { hasText: "Client.connect" }).waitFor({ state: "attached" });
  await page.evaluate(async () => void (await window.jupyterapp.commands.execute("tsdask:open-panel", { kind: "fpm" })));
  await page.screenshot({ path: join(SHOTS, "dashboard-cluster-empty.png") });
  assert.deepEqual(pageErrors, []);
});
