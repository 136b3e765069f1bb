// Plots fill and follow their space, in a real JupyterLab with a real tslab kernel and cluster and
// headless Debian Chromium: every dashboard panel dragged beside the notebook, then its dock area
// dragged narrow and wide, draws to the area (SVG width and height, axis text inside it); the
// notebook's own plots follow the notebook's width; the Task Stream panel shows recent work; the
// aligned MemorySampler plot shows every series; the FPM panel has the span chooser and idle row
// and the notebook's panel's numbers. Screenshots: test-output/sizing-*.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import { type App, DashboardLab } from "../helpers/dashboard-lab";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const NOTEBOOK = "dashboard-sizing.ipynb";
// In the clone, as every browser test keeps them: a fixed name in /tmp was shared by every clone on the machine.
const SHOTS = join(ROOT, "test-output");
const shot = (name: string): string => join(SHOTS, `sizing-${name}.png`);

let server: LabServer;
let browser: Browser;
let page: Page;
let ui: DashboardLab;
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([join(ROOT, "test/fixtures", NOTEBOOK)]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1600, height: 1000 }, pageErrors);
  ui = new DashboardLab(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
});

interface Box {
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}
const widthOf = (box: Box): number => box.right - box.left;
const heightOf = (box: Box): number => box.bottom - box.top;

/** The client rectangles of what `locator` matches, in page pixels. */
async function boxes(locator: Locator): Promise<Box[]> {
  return locator.evaluateAll((elements) =>
    elements.map((element) => {
      const { left, right, top, bottom } = (element as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect();
      return { left, right, top, bottom };
    }),
  );
}

async function boxOf(locator: Locator): Promise<Box> {
  const [box] = await boxes(locator.first());
  assert.ok(box !== undefined, "the element is on the page");
  return box;
}

/** Text of `svg` that sticks out of `area` (clipped, for a user), as "text@left-right". */
async function textOutside(svg: Locator, area: Box): Promise<string[]> {
  const texts = svg.locator("text");
  const found = await texts.evaluateAll((elements) =>
    elements.map((element) => {
      const { left, right, top, bottom } = (element as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect();
      return { text: element.textContent ?? "", left, right, top, bottom };
    }),
  );
  return found.filter((t) => t.text !== "" && (t.left < area.left - 1 || t.right > area.right + 1)).map((t) => `${t.text}@${Math.round(t.left)}-${Math.round(t.right)}`);
}

/**
 * Drags the dock's split handle on the left edge of `panel` so the panel gets `width` pixels,
 * as a user does with the mouse. Resolves once the panel has that width (±12 px).
 */
async function setPanelWidth(panel: Locator, width: number): Promise<void> {
  const box = await boxOf(panel);
  const handles = await boxes(page.locator("#jp-main-dock-panel > .lm-DockPanel-handle:not(.lm-mod-hidden)"));
  const handle = handles.find((h) => Math.abs((h.left + h.right) / 2 - box.left) < 8 && h.top <= box.top + 5 && h.bottom >= box.bottom - 5);
  assert.ok(handle !== undefined, `a split handle left of the panel at x ${box.left}: ${JSON.stringify(handles)}`);
  const [x, y] = [(handle.left + handle.right) / 2, (handle.top + handle.bottom) / 2];
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(box.right - width, y, { steps: 12 });
  await page.mouse.up();
  await waitFor(`the panel ${width} px wide`, async () => Math.abs(widthOf(await boxOf(panel)) - width) <= 12);
}

/** Polls `check` until it holds; `what` (text, or a function giving what was last seen) names it in the error. */
async function waitFor(what: string | (() => string), check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < end, `timed out waiting for ${typeof what === "string" ? what : what()}`);
    await page.waitForTimeout(100);
  }
}

/** The drawing area of a panel: its content box, inside the 12 px padding. */
async function contentOf(panel: Locator): Promise<Box> {
  const box = await boxOf(panel.locator(".tsdask-dashboard-content"));
  return { left: box.left + 12, right: box.right - 12, top: box.top + 8, bottom: box.bottom - 8 };
}

/** Waits until the panel's Vega SVG is laid out to its area, and returns both. */
async function plotFilling(panel: Locator, what: string): Promise<{ svg: Box; area: Box }> {
  const svg = panel.locator(".tsdask-plot svg.marks").first();
  let last = "";
  await waitFor(() => `${what}: the plot to fill its area (last seen ${last})`, async () => {
    if ((await svg.count()) === 0) return false;
    const [area, drawn, plot] = [await contentOf(panel), await boxOf(svg), await boxOf(panel.locator(".tsdask-plot").first())];
    last = `svg ${Math.round(widthOf(drawn))}×${Math.round(heightOf(drawn))} in ${Math.round(widthOf(area))}×${Math.round(heightOf(area))}`;
    // The actions menu keeps 38 px right of the drawing; the height is what the panel has left.
    return drawn.right <= area.right + 1 && widthOf(drawn) >= widthOf(area) - 50 && Math.abs(heightOf(drawn) - heightOf(plot)) <= 6;
  });
  return { svg: await boxOf(svg), area: await contentOf(panel) };
}

const NARROW = 440;
const WIDE = 1100;

test("the notebook runs: spans, a cluster, its memory sampled twice, bandwidth, the FPM panel", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await ui.openNotebook(NOTEBOOK);
  for (let cell = 0; cell <= 4; cell++) await ui.runCell(NOTEBOOK, cell, 120_000);
  const memory = lab.cell(page, 2).locator(".tsdask-plot svg.marks");
  await memory.waitFor({ timeout: 60_000 });
  // Aligned runs of the same work lie on one another: each line has its own dash, the first solid.
  const dashes = await memory.locator('path[aria-roledescription="line mark"]').evaluateAll((paths) =>
    paths.map((path) => `${(path.getAttribute("aria-label") ?? "").replace(/.*Label: (\w+).*/, "$1")}:${path.getAttribute("stroke-dasharray") ?? "solid"}`),
  );
  assert.equal(dashes.length, 2, JSON.stringify(dashes));
  assert.notEqual(dashes[0].split(":")[1], dashes[1].split(":")[1], `two distinct strokes: ${dashes.join(", ")}`);
  assert.deepEqual(dashes.map((d) => d.split(":")[0]), ["first", "second"]);
});

test("the FPM panel beside the notebook: the span chooser, the idle row, the notebook's panel's numbers", async () => {
  await ui.openSidebar();
  await ui.drag(ui.sidebarItem("fpm"), ui.notebookPanel(NOTEBOOK), 0.85, 0.5);
  const fpm = ui.panel("fpm");
  await fpm.locator(".fpm_bars_marks path").first().waitFor({ timeout: 30_000 });
  const spans = fpm.locator('.tsdask-fpm-filter[data-filter="Filter by span tag"]');
  await waitFor("the span tags", async () => /\((\d+)\)/.test((await spans.locator(".tsdask-fpm-filter-title").textContent()) ?? "") && (await spans.locator("summary").isVisible()));
  await spans.locator("summary").click();
  const tags = await spans.locator("input[type=checkbox]").evaluateAll((boxes) => boxes.map((box) => box.getAttribute("value")));
  assert.ok(["load", "qr", "again"].every((tag) => tags.includes(tag)), `span tags offered: ${tags.join(", ")}`);
  await page.mouse.click(5, 5);
  // The idle row, with the same total as the notebook's own panel (cell 4) once both have the workers' last heartbeats.
  const idleOf = async (where: Locator): Promise<string | undefined> => {
    const labels = await where.locator(".fpm_bars_marks path").evaluateAll((paths) => paths.map((p) => p.getAttribute("aria-label") ?? ""));
    return labels.map((label) => /Function: N\/A;.*Function total: ([^;]*)/.exec(label)?.[1]).find((total) => total !== undefined);
  };
  const inline = lab.cell(page, 4).locator(".tsdask-fpm");
  let seen = "";
  await waitFor(() => `the same idle total in both panels (${seen})`, async () => {
    const [mine, theirs] = [await idleOf(fpm), await idleOf(inline)];
    seen = `dashboard ${mine}, notebook ${theirs}`;
    return mine !== undefined && mine === theirs;
  });
  const summaries = [await fpm.locator(".tsdask-fpm-summary").textContent(), await inline.locator(".tsdask-fpm-summary").textContent()].map((text) => (text ?? "").replace(/^.* · /, ""));
  assert.equal(summaries[0], summaries[1], "the same summary line");
  assert.match(summaries[0], /idle \d/);
  await page.screenshot({ path: shot("fpm-spans") });
});

test("beside a panel, the notebook's plots follow its width: nothing clipped, and they grow back", async () => {
  const fpm = ui.panel("fpm");
  // The dock is 1100 px wide: the notebook gets about 450, then about 850.
  for (const [width, name] of [[650, "narrow-notebook"], [250, "wide-notebook"]] as const) {
    await setPanelWidth(fpm, width);
    for (const cell of [2, 3]) {
      const output = lab.cell(page, cell).locator(".jp-OutputArea-output").filter({ has: page.locator(".tsdask-plot") }).first();
      const svg = output.locator("svg.marks").first();
      let last = "";
      await waitFor(() => `cell ${cell}'s plot inside its output (${last})`, async () => {
        const [area, drawn] = [await boxOf(output), await boxOf(svg)];
        last = `svg ${Math.round(drawn.left)}-${Math.round(drawn.right)} in ${Math.round(area.left)}-${Math.round(area.right)}`;
        // The memory plot (one view) fills the width; the bandwidth plot (two stacked views) scales down to it.
        const fills = cell === 3 || widthOf(drawn) >= widthOf(area) - 60;
        return drawn.right <= area.right + 1 && fills;
      });
      assert.deepEqual(await textOutside(svg, await boxOf(output)), [], `cell ${cell}: no text clipped`);
    }
    await lab.cell(page, 2).scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot(name) });
  }
  const memory = await boxOf(lab.cell(page, 2).locator("svg.marks"));
  assert.ok(widthOf(memory) > 650, `the memory plot grew back with the notebook: ${Math.round(widthOf(memory))} px`);
});

const PANELS = ["fpm", "task-stream", "progress", "workers", "memory", "bandwidth", "profile", "memory-sampler"] as const;

for (const kind of PANELS) {
  test(`the ${kind} panel dragged beside the notebook draws to a narrow and a wide area`, async () => {
    // One panel at a time beside the notebook: close the one before.
    await page.evaluate((k) => {
      for (const widget of (window.jupyterapp as unknown as App).shell.widgets("main")) if (widget.id.startsWith("tsdask-") && !widget.id.startsWith(`tsdask-${k}-`)) widget.close();
    }, kind);
    await ui.openNotebook(NOTEBOOK);
    if ((await ui.panel(kind).count()) === 0) await ui.drag(ui.sidebarItem(kind), ui.notebookPanel(NOTEBOOK), 0.85, 0.5);
    const panel = ui.panel(kind);
    await panel.locator('.tsdask-dashboard-panel[data-state="live"]').waitFor({ timeout: 30_000 });
    const drawn: Record<string, Box> = {};
    for (const [width, size] of [[NARROW, "narrow"], [WIDE, "wide"]] as const) {
      await setPanelWidth(panel, width);
      const area = await contentOf(panel);
      if (kind === "task-stream" || kind === "memory-sampler") {
        const { svg } = await plotFilling(panel, `${kind} ${size}`);
        assert.ok(heightOf(svg) >= heightOf(area) * 0.6, `the plot fills the panel's height: ${Math.round(heightOf(svg))} of ${Math.round(heightOf(area))} px`);
        assert.deepEqual(await textOutside(panel.locator(".tsdask-plot svg.marks").first(), area), [], "no axis or legend text clipped");
        drawn[size] = svg;
      } else if (kind === "fpm") {
        // Three charts side by side: below their minimum the panel scrolls; above it they fill it.
        const svg = panel.locator(".tsdask-plot svg.marks").first();
        let last = "";
        await waitFor(() => `the FPM charts redrawn to ${size} (svg ${last} in ${Math.round(area.left)}-${Math.round(area.right)})`, async () => {
          const box = await boxOf(svg);
          last = `${Math.round(box.left)}-${Math.round(box.right)}`;
          return size === "wide" ? widthOf(box) >= widthOf(area) * 0.8 && box.right <= area.right + 1 : widthOf(box) <= Math.max(widthOf(area), 524) + 1;
        });
        drawn[size] = await boxOf(svg);
      } else {
        // HTML views: their body takes the panel's width, never wider than the area.
        const view = panel.locator(".tsdask-dashboard-body > *").first();
        await waitFor(`the ${kind} view at the panel's width`, async () => Math.abs(widthOf(await boxOf(view)) - widthOf(area)) <= 2);
        drawn[size] = await boxOf(view);
        const icicle = panel.locator("svg").first();
        if (kind === "profile" && (await icicle.count()) > 0) assert.ok((await boxOf(icicle)).right <= area.right + 1, "the profile's drawing inside the panel");
      }
      await page.screenshot({ path: shot(`${kind}-${size}`) });
    }
    assert.ok(widthOf(drawn.wide) > widthOf(drawn.narrow) + 300, `${kind}: what it draws follows the area: ${Math.round(widthOf(drawn.narrow))} → ${Math.round(widthOf(drawn.wide))} px`);
  });
}

test("the Task Stream panel counts the recent work on the cluster's threads; no page errors", async () => {
  // Which work is recent (Dask's 20 s clear interval) is tested on records in taskstream.unit.test.ts.
  await page.evaluate(async () => void (await window.jupyterapp.commands.execute("tsdask:open-panel", { kind: "task-stream" })));
  const summary = ui.panel("task-stream").locator(".tsdask-dashboard-summary");
  await summary.waitFor({ timeout: 30_000 });
  assert.match((await summary.textContent()) ?? "", /^\d+ most recent tasks on 2 worker threads/);
  await ui.runCell(NOTEBOOK, 5);
  assert.deepEqual(pageErrors, []);
});
