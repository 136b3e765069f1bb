// The tsdask dashboard in a real JupyterLab (from .venv) with real tslab kernels, driven by headless
// Debian Chromium as a user would: the sidebar, a real Lumino drag of a panel into the dock, live
// panels fed by the kernel's own iopub channel, pinning, two notebooks, layout restore after a
// reload, closing a notebook, the default layout and the dark theme. Screenshots: test-output/dashboard-*.png.
//
// When the FPM and task-stream views land, their checks go in the marked places below: the panels
// are already opened, dragged and restored here, and their kinds need only a `mount` (panels.ts).
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const SHOTS = join(ROOT, "test-output");
const A = "dashboard-a.ipynb";
const B = "dashboard-b.ipynb";

let server: LabServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([join(ROOT, "test/fixtures", A), join(ROOT, "test/fixtures", B)]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1400, height: 900 }, pageErrors);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
});

/** The parts of JupyterLab's app object these tests use (through --LabApp.expose_app_in_browser). */
interface App {
  shell: {
    widgets(area: string): Iterable<ShellWidget>;
    activateById(id: string): void;
    currentWidget: ShellWidget | null;
  };
  commands: { execute(id: string, args?: object): Promise<unknown> };
}
interface ShellWidget {
  id: string;
  title: { label: string };
  context?: { path: string; save(): Promise<void> };
  sessionContext?: { ready: Promise<void>; session: { kernel: { status: string } | null } | null };
  content?: { activeCellIndex: number; model: { cells: { get(i: number): { executionCount: number | null } } } };
  close(): void;
}

const sidebarItem = (kind: string): Locator => page.locator(`.tsdask-sidebar-item[data-kind="${kind}"]`);
/** A dashboard panel by kind; `pinned`: the one whose title names that notebook, or the following one. */
function panel(kind: string, pinned?: string): Locator {
  const panels = page.locator(`.tsdask-dashboard[id^="tsdask-${kind}-"]`);
  return pinned === undefined ? panels.filter({ hasNot: page.locator(".tsdask-dashboard-status", { hasText: "Pinned to" }) }) : panels.filter({ has: page.locator(".tsdask-dashboard-status", { hasText: `Pinned to ${pinned}` }) });
}
const notebookPanel = (path: string): Locator => page.locator(`.jp-NotebookPanel[data-tsdask-test-path="${path}"]`);

async function waitForApp(): Promise<void> {
  await page.waitForFunction(() => window.jupyterapp !== undefined, undefined, { timeout: 60_000 });
  await page.evaluate(() => window.jupyterapp.restored);
}

/** Opens (or brings forward) a notebook, waits for its kernel, and tags its panel for locators. */
async function openNotebook(path: string): Promise<void> {
  await page.evaluate((p) => void window.jupyterapp.commands.execute("docmanager:open", { path: p }), path);
  await page.waitForFunction((p) => window.jupyterapp.shell.currentWidget?.context?.path === p, path, { timeout: 60_000 });
  await lab.waitForIdleKernel(page);
  await page.evaluate((p) => {
    const app = window.jupyterapp as unknown as App;
    for (const widget of app.shell.widgets("main")) {
      if (widget.context?.path === p) document.getElementById(widget.id)?.setAttribute("data-tsdask-test-path", p);
    }
  }, path);
}

/** Runs cell `index` of notebook `path` (made current first) and returns at once. */
async function startCell(path: string, index: number): Promise<void> {
  await openNotebook(path);
  await lab.startCell(page, index);
}

async function cellDone(path: string, index: number): Promise<void> {
  await page.waitForFunction(
    ([p, i]) => {
      const app = window.jupyterapp as unknown as App;
      for (const widget of app.shell.widgets("main")) {
        if (widget.context?.path === p) return widget.content!.model.cells.get(i as number).executionCount !== null && widget.sessionContext?.session?.kernel?.status === "idle";
      }
      return false;
    },
    [path, index] as const,
    { timeout: 90_000 },
  );
}

/** Drags from the centre of `from` to a point of `to` given as fractions of its box, in small steps as a hand would. */
async function drag(from: Locator, to: Locator, fx: number, fy: number): Promise<void> {
  const start = (await from.boundingBox())!;
  const target = (await to.boundingBox())!;
  const [x0, y0] = [start.x + start.width / 2, start.y + start.height / 2];
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move(x0 + 12, y0 + 4, { steps: 4 });
  await page.mouse.move(target.x + target.width * fx, target.y + target.height * fy, { steps: 25 });
  await page.waitForTimeout(150);
  await page.mouse.up();
}

/** The main area as tab bars (their tabs' labels, in order) and their places, rounded to 10 px. */
async function dockLayout(): Promise<{ tabs: string[]; x: number; y: number; width: number; height: number }[]> {
  const bars = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar");
  const layout = [];
  for (let i = 0; i < (await bars.count()); i++) {
    const bar = bars.nth(i);
    const box = (await bar.boundingBox())!;
    const round = (n: number): number => Math.round(n / 10) * 10;
    layout.push({ tabs: await bar.locator(".lm-TabBar-tabLabel").allTextContents(), x: round(box.x), y: round(box.y), width: round(box.width), height: round(box.height) });
  }
  return layout.sort((a, b) => a.x - b.x || a.y - b.y);
}

/** The live bar of computation `label` in a Progress panel. */
const computation = (progress: Locator, label: string): Locator =>
  progress.locator(".tsdask-dashboard-computation").filter({ has: page.locator(".tsdask-dashboard-computation-label", { hasText: label }) });

/** Watches a running computation in a Progress panel until it finishes; returns the percentages seen. */
async function watchUntilFinished(bar: Locator): Promise<number[]> {
  // Attached is enough: a panel behind another tab updates all the same.
  await bar.waitFor({ state: "attached", timeout: 60_000 });
  await bar.evaluate((el) => el.setAttribute("data-test-first-render", "yes"));
  const seen: number[] = [];
  const deadline = Date.now() + 60_000;
  while ((await bar.getAttribute("data-state")) !== "finished") {
    assert.ok(Date.now() < deadline, `the computation did not finish on the panel; seen: ${seen.join(", ")}`);
    seen.push(Number(await bar.locator("[role=progressbar]").getAttribute("aria-valuenow")));
    await page.waitForTimeout(60);
  }
  assert.equal(await bar.getAttribute("data-test-first-render"), "yes", "the panel rebuilt the bar instead of patching it");
  return seen;
}

test("the tsdask sidebar lists every panel, none with data before anything ran", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await openNotebook(A);
  await page.locator('.jp-SideBar .lm-TabBar-tab[data-id="tsdask-sidebar"]').click();
  await page.locator(".tsdask-sidebar").waitFor();
  const labels = await page.locator(".tsdask-sidebar-label").allTextContents();
  assert.deepEqual(labels, ["Fine Performance Metrics", "Task Stream", "Progress", "Workers", "Memory", "Bandwidth", "Profile", "Memory Sampler"]);
  assert.deepEqual(await page.locator(".tsdask-sidebar-item").evaluateAll((els) => els.map((el) => el.getAttribute("data-has-data"))), Array(8).fill("false"));
  assert.match((await page.locator(".tsdask-sidebar-source").textContent()) ?? "", /dashboard-a\.ipynb/);
});

test("dragging Fine Performance Metrics onto the right half of the notebook splits the dock beside it", async () => {
  const notebook = notebookPanel(A);
  await drag(sidebarItem("fpm"), notebook, 0.85, 0.5);
  const fpm = panel("fpm");
  await fpm.waitFor({ timeout: 10_000 });
  const [nb, box] = [(await notebook.boundingBox())!, (await fpm.boundingBox())!];
  assert.ok(box.x >= nb.x + nb.width - 2, `the panel (x ${box.x}) is right of the notebook (ends at ${nb.x + nb.width})`);
  assert.ok(Math.abs(box.y - nb.y) < 40 && Math.abs(box.height - nb.height) < 40, "side by side, the same height");
  assert.ok(nb.width > 300 && box.width > 300, `both visible: notebook ${nb.width}px, panel ${box.width}px`);
  // Its tab is in its own tab bar (a split), not a tab beside the notebook's.
  const tabBars = await page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar").count();
  assert.equal(tabBars, 2);
  // No cluster in this notebook: the panel says what to run, not an error.
  assert.equal(await fpm.locator(".tsdask-dashboard-panel").getAttribute("data-state"), "empty");
  assert.match((await fpm.locator(".tsdask-dashboard-empty").textContent()) ?? "", /Client\.connect/);
  assert.match((await fpm.locator(".tsdask-dashboard-status").textContent()) ?? "", /Following the active notebook: dashboard-a\.ipynb/);
  await page.screenshot({ path: join(SHOTS, "dashboard-fpm-dragged.png") });
});

test("a Progress panel dropped below it follows the notebook's computation live", async () => {
  await drag(sidebarItem("progress"), panel("fpm"), 0.5, 0.9);
  const progress = panel("progress");
  await progress.waitFor({ timeout: 10_000 });
  const [fpmBox, box] = [(await panel("fpm").boundingBox())!, (await progress.boundingBox())!];
  assert.ok(box.y >= fpmBox.y + fpmBox.height - 2 && Math.abs(box.x - fpmBox.x) < 5, "split below the FPM panel");
  assert.match((await progress.locator(".tsdask-dashboard-empty").textContent()) ?? "", /No dashboard data from dashboard-a\.ipynb's kernel yet/);

  await startCell(A, 0);
  await cellDone(A, 0);
  await startCell(A, 1);
  const seen = await watchUntilFinished(computation(progress, "notebook A"));
  const moving = new Set(seen.filter((value) => value > 0 && value < 100));
  assert.ok(moving.size >= 2, `the bar moved while the cell ran: ${seen.join(", ")}`);
  assert.deepEqual([...seen].sort((a, b) => a - b), seen, "never backwards");
  const bar = computation(progress, "notebook A");
  assert.equal(await bar.locator(".tsdask-progress-counts").textContent(), "161 / 161");
  assert.deepEqual(await bar.locator(".tsdask-progress-group-name").allTextContents(), ["slow", "total"]);
  await cellDone(A, 1);
  // The feed is an update for a display id no cell shows: nothing lands in the notebook.
  const outputs = notebookPanel(A).locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output");
  assert.deepEqual(await outputs.allTextContents(), ["total 160\n"]);
  assert.equal(await sidebarItem("progress").getAttribute("data-has-data"), "true");
  assert.equal(await sidebarItem("fpm").getAttribute("data-has-data"), "false");
  await page.screenshot({ path: join(SHOTS, "dashboard-progress-live.png") });
});

test("a panel pinned to a notebook keeps to it; following panels move with the active notebook; two kernels never mix", async () => {
  // Pin the Progress panel to A; open a second, following Progress panel as a tab beside it.
  await panel("progress").locator(".tsdask-dashboard-pin").click();
  const pinned = panel("progress", A);
  await pinned.waitFor();
  assert.equal(await page.locator(".lm-TabBar-tab", { hasText: `Progress — ${A}` }).count(), 1, "the pin is in the title");
  await sidebarItem("progress").click();
  const following = panel("progress");
  await following.waitFor();

  await openNotebook(B);
  await page.waitForFunction(() => document.querySelector(".tsdask-sidebar-source")?.textContent?.includes("dashboard-b.ipynb") === true);
  // B has run nothing: its panels show empty states, not A's data and not errors.
  await following.locator(".tsdask-dashboard-empty", { hasText: "No dashboard data from dashboard-b.ipynb's kernel yet" }).waitFor({ state: "attached" });
  assert.equal(await sidebarItem("progress").getAttribute("data-has-data"), "false");
  assert.equal(await panel("fpm").locator(".tsdask-dashboard-panel").getAttribute("data-state"), "empty");

  await startCell(B, 0);
  await cellDone(B, 0);
  await startCell(B, 1);
  await page.evaluate(() => window.jupyterapp.commands.execute("tsdask:open-panel", { kind: "progress" }));
  await watchUntilFinished(computation(following, "notebook B"));
  assert.equal(await computation(following, "notebook A").count(), 0, "the following panel shows B's kernel only");
  assert.equal(await computation(pinned, "notebook B").count(), 0, "the pinned panel never shows B's computation");
  assert.equal(await computation(pinned, "notebook A").count(), 1);
  await cellDone(B, 1);
});

test("after a reload the panels come back where they were, pinned as they were, and live again", async () => {
  const before = await dockLayout();
  assert.ok(before.some((bar) => bar.tabs.includes("Fine Performance Metrics")), JSON.stringify(before));
  // The layout is saved when it changes; give the workspace save its debounce.
  await page.waitForTimeout(1500);
  await page.reload();
  await waitForApp();
  await panel("fpm").waitFor({ state: "attached", timeout: 30_000 });
  await panel("progress", A).waitFor({ state: "attached", timeout: 30_000 });
  assert.deepEqual(await dockLayout(), before, "every tab is back in its place");
  assert.equal(await page.locator(".lm-TabBar-tab", { hasText: `Progress — ${A}` }).count(), 1, "the pin survived");

  // Live again: the pinned panel takes A's next computation.
  await startCell(A, 1);
  await page.locator(".lm-TabBar-tab", { hasText: `Progress — ${A}` }).click();
  // The newest run comes first (running ones lead); the kernel still lists the earlier run too.
  await watchUntilFinished(computation(panel("progress", A), "notebook A").first());
  assert.equal(await computation(panel("progress", A), "notebook A").count(), 2);
  await cellDone(A, 1);
  await page.screenshot({ path: join(SHOTS, "dashboard-restored.png") });
});

test("the default layout puts FPM beside the notebook and the task stream below it", async () => {
  await openNotebook(B);
  await page.evaluate(() => window.jupyterapp.commands.execute("tsdask:default-layout"));
  const stream = panel("task-stream");
  await stream.waitFor({ timeout: 10_000 });
  const [nb, fpm, ts] = [(await notebookPanel(B).boundingBox())!, (await panel("fpm").boundingBox())!, (await stream.boundingBox())!];
  const boxes = JSON.stringify({ nb, fpm, ts });
  assert.ok(fpm.x >= nb.x + nb.width - 2 && Math.abs(fpm.y - nb.y) < 40, `FPM right of the notebook: ${boxes}`);
  assert.ok(ts.y >= nb.y + nb.height - 2 && Math.abs(ts.x - nb.x) < 5, `the task stream below the notebook: ${boxes}`);
  // (Task stream rows during a run: checked here once the task-stream view lands.)
  assert.match((await stream.locator(".tsdask-dashboard-empty").textContent()) ?? "", /task stream/i);
  await page.screenshot({ path: join(SHOTS, "dashboard-default-layout.png") });
});

test("restarting a kernel drops its old snapshot: the panels wait for the new process's feed", async () => {
  await startCell(B, 1);
  await cellDone(B, 1);
  await page.evaluate(() => window.jupyterapp.commands.execute("tsdask:open-panel", { kind: "progress" }));
  const following = panel("progress");
  await computation(following, "notebook B").first().waitFor({ state: "attached" });
  await page.evaluate(async (p) => {
    const app = window.jupyterapp as unknown as App;
    for (const widget of app.shell.widgets("main")) {
      if (widget.context?.path === p) await (widget.sessionContext as unknown as { restartKernel(): Promise<void> }).restartKernel();
    }
  }, B);
  await following.locator(".tsdask-dashboard-empty", { hasText: "No dashboard data from dashboard-b.ipynb's kernel yet" }).waitFor({ timeout: 30_000 });
  assert.equal(await computation(following, "notebook B").count(), 0);
  await openNotebook(B); // and wait for the new kernel to be idle
});

test("closing a notebook disconnects the panels that showed its kernel", async () => {
  await page.evaluate(async (p) => {
    const app = window.jupyterapp as unknown as App;
    for (const widget of app.shell.widgets("main")) {
      if (widget.context?.path === p) {
        await widget.context.save();
        widget.close();
      }
    }
  }, A);
  const pinned = panel("progress", A);
  await pinned.locator('.tsdask-dashboard-panel[data-state="disconnected"]').waitFor({ timeout: 10_000 });
  assert.match((await pinned.locator(".tsdask-dashboard-empty").textContent()) ?? "", /dashboard-a\.ipynb is not open/);
  assert.equal(await computation(pinned, "notebook A").count(), 0, "the closed notebook's data is gone");
  assert.equal(await pinned.locator(".tsdask-dashboard-status").getAttribute("data-connected"), "false");
});

test("the dark theme recolours the sidebar and panels; nothing from tsdask raised an error", async () => {
  const status = panel("progress").locator(".tsdask-dashboard-status");
  const light = await lab.color(status, "color");
  await lab.switchTheme(page, "JupyterLab Dark");
  const dark = await lab.color(status, "color");
  assert.ok(lab.luminance(light) < lab.luminance(dark), `status text ${light} → ${dark}`);
  // JupyterLab shows its splash while it swaps theme files.
  await page.locator("#jupyterlab-splash").waitFor({ state: "detached", timeout: 30_000 });
  await page.screenshot({ path: join(SHOTS, "dashboard-dark.png") });
  await lab.switchTheme(page, "JupyterLab Light");
  assert.deepEqual(pageErrors, []);
});
