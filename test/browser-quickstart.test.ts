// notebooks/quickstart.ipynb in a real JupyterLab, on the real tslab kernel, in headless Debian
// Chromium: its saved outputs are cleared, every cell runs, and what the real ProgressBar,
// profilers and visualize() draw is checked as a user would see it. Screenshots: test-output/quickstart-*.png.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "./helpers/jupyterlab";
import * as lab from "./helpers/lab-page";

const EVIL = "<img src=x onerror=window.__xss=1>";
const SHOTS = join(ROOT, "test-output");
const NOTEBOOK = "quickstart.ipynb";

/**
 * Appended to the copy under test: the real ProgressBar, Profiler and visualize() on a graph
 * whose only key is markup. Kept out of the user's notebook, which is about something else.
 */
const HOSTILE_CELL = `{
  const evil = ${JSON.stringify(EVIL)};
  const spin = (x: number) => { const until = Date.now() + 30; while (Date.now() < until); return x; };
  const hostile = new Profiler();
  await withCallbacks([new ProgressBar(), hostile], () => get({ [evil]: [spin, 1] }, evil));
  await visualize(hostile);
}`;

interface NotebookJson {
  cells: { cell_type: string; id?: string; metadata?: object; source: string | string[]; outputs?: unknown[]; execution_count?: number | null }[];
}

const scratch = mkdtempSync(join(tmpdir(), "tsdask-quickstart-"));
let server: LabServer;
let browser: Browser;
let page: Page;
/** Cell positions (markdown included) by the start of their source. */
let cellIndex: (start: string) => number;
let cellCount = 0;
const pageErrors: string[] = [];

/** The quick start with its outputs cleared, so everything the test sees is produced now. */
function clearedCopy(): string {
  const notebook = JSON.parse(readFileSync(join(ROOT, "notebooks", NOTEBOOK), "utf8")) as NotebookJson;
  for (const cell of notebook.cells) {
    if (cell.cell_type !== "code") continue;
    cell.outputs = [];
    cell.execution_count = null;
  }
  notebook.cells.push({ cell_type: "code", id: "hostile-keys", metadata: {}, source: HOSTILE_CELL, outputs: [], execution_count: null });
  const sources = notebook.cells.map((cell) => (Array.isArray(cell.source) ? cell.source.join("") : cell.source));
  cellCount = sources.length;
  cellIndex = (start) => {
    const index = sources.findIndex((source) => source.startsWith(start));
    assert.ok(index >= 0, `${NOTEBOOK} has no cell starting with ${JSON.stringify(start)}`);
    return index;
  };
  const path = join(scratch, NOTEBOOK);
  writeFileSync(path, JSON.stringify(notebook));
  return path;
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([clearedCopy()]);
  browser = await launchChromium();
  // Tall and wide enough for the whole stacked plot with its legends (the screenshots show it all).
  page = await newLabPage(browser, { width: 1500, height: 1300 }, pageErrors);
});

after(async () => {
  await browser?.close();
  const orphans = await stopLab(server);
  rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(orphans, [], "kernel processes outlived the server");
});

const cell = (start: string): Locator => lab.cell(page, cellIndex(start));

/**
 * A screenshot of one element. Scrolling it into view first lets the notebook settle: offscreen
 * cells (content-visibility: auto) take their real height as they appear, which moves the element.
 */
async function shoot(element: Locator, name: string): Promise<void> {
  await element.scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  await element.screenshot({ path: join(SHOTS, `quickstart-${name}.png`) });
}

/** One stacked plot of a rendered Vega view: its marks and its x axis as the SVG shows them. */
interface SubView {
  rects: number;
  lines: number;
  symbols: number;
  /** The x axis' accessible description, which names its domain ("… values from 0.0 to 3.0"). */
  xAxis: string;
  xTicks: string[];
  /** The y axis' labels: the worker rows of a task plot. */
  yTicks: string[];
}

/** The top-level views of the plot in `plot` (a .tsdask-plot), top to bottom. */
function subViews(plot: Locator): Promise<SubView[]> {
  return plot.locator("svg.marks").evaluate((svg: lab.PageElement) => {
    const root = svg.querySelector("g.role-frame.root");
    if (root === null) throw new Error("no Vega scene in the plot");
    const views = Array.from(root.querySelectorAll(":scope > g > g > g.role-scope"));
    const count = (view: lab.PageElement, mark: string): number => view.querySelectorAll(`g.${mark}.role-mark > path`).length;
    return views.map((view) => {
      const axis = view.querySelector('g.role-axis[aria-label^="X-axis"]');
      const yAxis = view.querySelector('g.role-axis[aria-label^="Y-axis"]');
      return {
        rects: count(view, "mark-rect"),
        lines: count(view, "mark-line"),
        symbols: count(view, "mark-symbol"),
        xAxis: axis?.getAttribute("aria-label") ?? "",
        xTicks: Array.from(axis?.querySelectorAll(".role-axis-label text") ?? []).map((text) => text.textContent ?? ""),
        yTicks: Array.from(yAxis?.querySelectorAll(".role-axis-label text") ?? []).map((text) => text.textContent ?? ""),
      };
    });
  });
}

test("the quick start runs in JupyterLab; its progress bar advances live and finishes", { timeout: 480_000 }, async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await page.evaluate(async () => void (await window.jupyterapp.commands.execute("application:toggle-left-area"))); // the file browser
  await lab.openNotebook(page, NOTEBOOK);
  await lab.waitForIdleKernel(page);
  assert.equal(await page.locator(".tsdask-output").count(), 0, "the copy under test still had outputs");
  await page.evaluate(() => void window.jupyterapp.commands.execute("notebook:run-all-cells"));

  const progress = cell("const a = da.random.normal").locator(".tsdask-progress");
  await progress.waitFor({ timeout: 90_000 });
  const seen: number[] = [];
  const deadline = Date.now() + 180_000;
  while ((await progress.getAttribute("data-state")) !== "finished") {
    assert.ok(Date.now() < deadline, `the bar did not finish; percentages seen: ${seen.join(", ")}`);
    seen.push(Number(await progress.locator("[role=progressbar]").getAttribute("aria-valuenow")));
    await page.waitForTimeout(50);
  }
  const inBetween = new Set(seen.filter((value) => value > 0 && value < 100));
  assert.ok(inBetween.size >= 2, `expected the bar to pass through several values, saw ${seen.join(", ")}`);
  assert.deepEqual([...seen].sort((a, b) => a - b), seen, "the bar went backwards");
  assert.equal(await progress.locator(".tsdask-progress-percent").textContent(), "100%");
  assert.match((await progress.locator(".tsdask-progress-counts").textContent()) ?? "", /^(\d+) \/ \1$/);
  assert.equal(await progress.locator(".tsdask-progress-state").textContent(), "Finished");
  const groups = await progress.locator(".tsdask-progress-group-name").allTextContents();
  assert.ok(["normal", "dot", "transpose", "mean_chunk"].every((name) => groups.includes(name)), `groups: ${groups.join(", ")}`);
  await progress.hover();
  await page.screenshot({ path: join(SHOTS, "quickstart-progress.png") });

  // Every cell then runs to the end (the last one is the hostile-key cell).
  await lab.cell(page, cellCount - 1).locator(".jp-InputArea-prompt").filter({ hasText: /\[\d+\]/ }).waitFor({ timeout: 120_000 });
  await lab.waitForIdleKernel(page);
  assert.equal(await page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count(), 0, "a cell wrote to stderr");
  assert.match((await cell("rprof.results[0]").locator(".jp-OutputArea-output").textContent()) ?? "", /\{ time: \d+\.\d+, mem: [\d.]+, cpu: [\d.]+ \}/);
  assert.match((await cell("class PrintKeys").locator(".jp-OutputArea-output").textContent()) ?? "", /Computing: 'a'!\s*Computing: 'b'!\s*Computing: 'c'!/);
});

test("visualize([prof, rprof, cprof]) shows three stacked plots with their marks", async () => {
  const plot = cell("visualize([").locator(".tsdask-plot");
  await plot.locator("svg.marks").waitFor({ timeout: 30_000 });
  const summary = (await cell("visualize([").locator(".jp-OutputArea-output").last().textContent()) ?? "";
  const [, tasks, workers] = (/(\d+) tasks on (\d+) workers?/.exec(summary) ?? []).map(Number);
  assert.ok(tasks! > 0, `summary: ${summary}`);
  const [tasksView, resourcesView, cacheView, ...rest] = await subViews(plot);
  assert.deepEqual(rest, [], "more than three plots");
  assert.equal(tasksView?.rects, tasks, "one rectangle per task");
  // Arrays compute on the thread pool: one row per worker thread, labelled with its thread id.
  assert.equal(tasksView?.yTicks.length, workers, `rows: ${tasksView?.yTicks.join(", ")}`);
  assert.ok(workers! >= 2 || availableParallelism() === 1, `${workers} workers`);
  assert.ok(tasksView!.yTicks.every((label) => /^\d+$/.test(label)), `rows: ${tasksView?.yTicks.join(", ")}`);
  assert.ok(resourcesView !== undefined && resourcesView.lines === 2 && resourcesView.symbols >= 2, `resources: ${JSON.stringify(resourcesView)}`);
  // One cache line per task group (random_sample, tsqr, dot).
  assert.ok(cacheView !== undefined && cacheView.lines === 3, `cache: ${JSON.stringify(cacheView)}`);
  // The single profiler's plot above it is one view with the same rectangles.
  const single = await subViews(cell("prof.visualize()").locator(".tsdask-plot"));
  assert.deepEqual(single.map((view) => view.rects), [tasks]);
  await shoot(plot, "visualize");
});

test("hovering a task shows its key; zooming the top plot zooms all three", async () => {
  const plot = cell("visualize([").locator(".tsdask-plot");
  const rects = plot.locator("svg .plot_0_group g.mark-rect.role-mark > path");
  // The widest rectangle is the easiest to hit.
  const widths = await Promise.all((await rects.all()).map(async (rect) => (await rect.boundingBox())?.width ?? 0));
  await rects.nth(widths.indexOf(Math.max(...widths))).hover();
  const tooltip = page.locator("#vg-tooltip-element");
  await tooltip.waitFor({ state: "visible" });
  assert.match((await tooltip.textContent()) ?? "", /\('[a-z_]+-[0-9a-f]{32}[^']*', \d+, \d+\)/, "the tooltip names the task's key");
  await page.screenshot({ path: join(SHOTS, "quickstart-tooltip.png") });

  const domains = (views: SubView[]): string[] => views.map((view) => /values from .*/.exec(view.xAxis)?.[0] ?? `no domain in "${view.xAxis}"`);
  const before = await subViews(plot);
  assert.equal(new Set(domains(before)).size, 1, `one shared x domain: ${domains(before).join(" / ")}`);
  // The tooltip is a fixed element above the page: while it shows it may sit on the spot the
  // wheel is aimed at and take the event itself. Move away until it hides.
  await page.mouse.move(0, 0);
  await tooltip.waitFor({ state: "hidden" });
  const background = plot.locator("svg .plot_0_group path.background").first();
  await background.scrollIntoViewIfNeeded();
  const area = await background.boundingBox();
  assert.ok(area !== null);
  const aim = { x: area.x + area.width / 2, y: area.y + area.height / 2 };
  const plotElement = await plot.elementHandle();
  // Wait on this plot's own axis: the notebook's first .tsdask-plot is another cell's.
  const zoomed = (timeout: number) =>
    page
      .waitForFunction(
        ([element, previous]) => {
          const axis = element?.querySelector('g.plot_0_group g.role-axis[aria-label^="X-axis"]');
          return axis != null && axis.getAttribute("aria-label") !== previous;
        },
        [plotElement, before[0]!.xAxis] as const,
        { timeout },
      )
      .then(() => true, () => false);
  // Under load a wheel was once lost (a clean-clone run saw no zoom in 30 s; the cause was not
  // found): a person would scroll again, so the check is that some wheel over the plot zooms it.
  let zoomedIn = false;
  for (let attempt = 0; attempt < 4 && !zoomedIn; attempt++) {
    await page.mouse.move(aim.x, aim.y);
    const aimedAtPlot = await page.evaluate(([element, point]) => element?.contains(document.elementFromPoint(point.x, point.y)) ?? false, [plotElement, aim] as const);
    assert.ok(aimedAtPlot, "the wheel is aimed at the plot, not at something above it");
    await page.mouse.wheel(0, -600);
    zoomedIn = await zoomed(10_000);
  }
  assert.ok(zoomedIn, "a wheel over the top plot zooms it");
  const after = await subViews(plot);
  after.forEach((view, i) => {
    assert.notEqual(view.xAxis, before[i]!.xAxis, `plot ${i}'s x domain did not change`);
    assert.notDeepEqual(view.xTicks, before[i]!.xTicks, `plot ${i}'s x tick labels did not change`);
  });
  assert.equal(new Set(domains(after)).size, 1, `zoomed domains differ: ${domains(after).join(" / ")}`);
  await shoot(plot, "zoomed");
});

test("a task key that is markup shows as text in the real bar and plot, and runs nothing", async () => {
  const hostile = lab.cell(page, cellCount - 1);
  const progress = hostile.locator(".tsdask-progress");
  assert.equal(await progress.getAttribute("data-state"), "finished");
  assert.deepEqual(await progress.locator(".tsdask-progress-group-name").allTextContents(), [EVIL]);
  const plot = hostile.locator(".tsdask-plot");
  await plot.locator("svg.marks").waitFor();
  const legend = await plot.locator("svg .role-legend-label text").allTextContents();
  assert.ok(legend.includes(EVIL), `legend: ${legend.join(" | ")}`);
  await plot.locator("svg g.mark-rect.role-mark > path").first().hover();
  const tooltip = page.locator("#vg-tooltip-element");
  await tooltip.waitFor({ state: "visible" });
  assert.ok(((await tooltip.textContent()) ?? "").includes(`'${EVIL}'`), `tooltip: ${await tooltip.textContent()}`);
  await page.screenshot({ path: join(SHOTS, "quickstart-hostile.png") });
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('img[src="x"]').count(), 0);
  assert.deepEqual(pageErrors, []);
});

test("the dark theme recolours the real bar and plots", async () => {
  const summary = cell("const a = da.random.normal").locator(".tsdask-progress-summary");
  const track = cell("const a = da.random.normal").locator(".tsdask-progress-bar");
  const plot = cell("visualize([").locator(".tsdask-plot");
  const label = plot.locator("svg .role-axis-label text").first();
  const light = { text: await lab.color(summary, "color"), track: await lab.color(track, "backgroundColor"), label: await lab.color(label, "fill") };
  await lab.switchTheme(page, "JupyterLab Dark");
  await page.waitForFunction(
    (previous) => {
      const text = document.querySelector(".tsdask-plot svg .role-axis-label text");
      return text !== null && getComputedStyle(text).fill !== previous;
    },
    light.label,
    { timeout: 30_000 },
  );
  const dark = { text: await lab.color(summary, "color"), track: await lab.color(track, "backgroundColor"), label: await lab.color(label, "fill") };
  assert.ok(lab.luminance(light.text) < 0.4 && lab.luminance(dark.text) > 0.6, `progress text ${light.text} → ${dark.text}`);
  assert.ok(lab.luminance(light.track) > lab.luminance(dark.track), `progress track ${light.track} → ${dark.track}`);
  assert.ok(lab.luminance(light.label) < 0.6 && lab.luminance(dark.label) > 0.5, `axis labels ${light.label} → ${dark.label}`);
  // The re-embedded plot still has every mark (the zoom is reset by the re-embed).
  const views = await subViews(plot);
  assert.equal(views.length, 3);
  assert.ok(views[0]!.rects > 0);
  await shoot(cell("const a = da.random.normal"), "dark-progress");
  await shoot(plot, "dark");
});
