// The FPM panel in a real JupyterLab with the tsdask extension, from the user notebook run on the
// real tslab kernel: `await fpm.visualize()` shows the live panel in its cell (not the fallbacks),
// its selectors work there, and the saved output renders when the notebook is reopened.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const NOTEBOOK = "fine-performance-metrics.ipynb";
/** Cell indexes (markdown cells count): the computation, and the cell that shows the panel. */
const COMPUTE_CELL = 1;
const PANEL_CELL = 3;

let server: LabServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(join(ROOT, "test-output"), { recursive: true });
  server = await startJupyterLab([join(ROOT, "notebooks", NOTEBOOK)]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1400, height: 1000 }, pageErrors);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
});

/** The activities of the bars drawn in a panel (Vega labels each bar for screen readers). */
function barActivities(panel: Locator): Promise<string[]> {
  return panel.locator(".fpm_bars_marks path").evaluateAll((paths) => paths.map((p) => /Activity: ([^;]*)/.exec(p.getAttribute("aria-label") ?? "")?.[1] ?? "?"));
}

test("the saved panel renders when the notebook is opened; running the cells shows the live panel, whose selectors work", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await lab.openNotebook(page, NOTEBOOK);
  const panel = lab.cell(page, PANEL_CELL).locator(".tsdask-fpm");
  // The output saved by `npm run notebooks` is drawn by the extension, before anything runs.
  await panel.locator(".fpm_bars_marks path").first().waitFor({ timeout: 60_000 });
  await lab.waitForIdleKernel(page);

  await lab.startCell(page, COMPUTE_CELL);
  await lab.cell(page, COMPUTE_CELL).locator(".jp-InputArea-prompt:has-text('[1]')").waitFor({ timeout: 120_000 });
  await lab.startCell(page, PANEL_CELL);
  await lab.cell(page, PANEL_CELL).locator(".jp-InputArea-prompt:has-text('[2]')").waitFor({ timeout: 120_000 });
  await panel.locator(".fpm_bars_marks path").first().waitFor({ timeout: 30_000 });
  assert.equal(await lab.cell(page, PANEL_CELL).locator(".tsdask-fpm").count(), 1);
  // The display shows the panel, not its static image or text table (the cell's echo of the
  // returned FpmPanel is a one-line stream of its own).
  assert.equal(await lab.cell(page, PANEL_CELL).locator(".jp-RenderedSVG, .jp-RenderedImage").count(), 0, "the static image was shown");
  const texts = await lab.cell(page, PANEL_CELL).locator(".jp-RenderedText").allTextContents();
  assert.ok(texts.every((text) => !text.includes("thread budget")), `the text table was shown: ${texts.join(" | ")}`);
  const titles = await panel.locator(".role-title-text").allTextContents();
  assert.deepEqual(titles.slice(0, 3), ["Task execution, by function", "Task execution, by activity", "Send data, by activity"]);
  const functions = await panel.locator(".role-axis-label text").allTextContents();
  for (const name of ["tsqr", "dot", "random_sample"]) assert.ok(functions.includes(name), `functions: ${functions.join(", ")}`);
  assert.ok((await barActivities(panel)).includes("thread-cpu"));
  await panel.screenshot({ path: join(ROOT, "test-output/fpm-lab.png") });

  // Pick a function: its bars only, and Send data hides.
  await panel.locator('.tsdask-fpm-filter[data-filter="Filter by function"] summary').click();
  await panel.locator('.tsdask-fpm-filter[data-filter="Filter by function"] input[value="dot"]').check();
  // (This panel's only: the notebook's cluster panel further down keeps its own.)
  await panel.locator(".role-title-text", { hasText: "Send data, by activity" }).waitFor({ state: "detached", timeout: 30_000 });
  assert.deepEqual(await panel.locator(".role-axis-label text").evaluateAll((ts) => ts.map((t) => t.textContent).filter((t) => t === "dot" || t === "tsqr")), ["dot"]);
  assert.deepEqual(pageErrors, []);
});
