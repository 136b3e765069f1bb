// The JupyterLab extension in a real JupyterLab (from .venv) driven by headless Debian Chromium:
// a notebook runs on the real tslab kernel and its outputs are checked as a user would see them.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "./helpers/jupyterlab";
import * as lab from "./helpers/lab-page";

const EVIL = "<img src=x onerror=window.__xss=1>";
const SHOTS = join(ROOT, "test-output");

let server: LabServer;
let browser: Browser;
let page: Page;
/** Uncaught errors raised by the tsdask extension's code (other extensions' noise is not ours). */
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([join(ROOT, "test/fixtures/widgets.ipynb"), join(ROOT, "test/fixtures/saved-outputs.ipynb")]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1280, height: 900 }, pageErrors);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
});

test("JupyterLab loads the tsdask extension from the install prefix", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  const extensions = await page.evaluate(() => {
    const config = JSON.parse(document.getElementById("jupyter-config-data")?.textContent ?? "{}") as {
      federated_extensions?: { name: string }[];
    };
    return (config.federated_extensions ?? []).map((extension) => extension.name);
  });
  assert.ok(extensions.includes("tsdask"), `federated extensions: ${extensions.join(", ")}`);
  await lab.openNotebook(page, "widgets.ipynb");
  await lab.waitForIdleKernel(page);
  assert.ok(server.kernelPids().length > 0, "the tslab kernel process was not found");
  await lab.startCell(page, 0);
  await lab.cell(page, 0).locator(".jp-InputArea-prompt:has-text('[1]')").waitFor({ timeout: 60_000 });
  // The setup cell prints nothing; anything here is a compile or runtime error.
  assert.deepEqual(await lab.cell(page, 0).locator(".jp-OutputArea-output").allTextContents(), []);
});

test("a progress bar appears, advances in place and reaches 100%", async () => {
  await lab.startCell(page, 1);
  const progress = lab.cell(page, 1).locator(".tsdask-progress");
  await progress.waitFor({ timeout: 30_000 });
  // Tag the DOM node: if an update rebuilt the view, the tag would be gone.
  await progress.evaluate((el) => el.setAttribute("data-test-first-render", "yes"));
  const seen: number[] = [];
  const deadline = Date.now() + 30_000;
  while ((await progress.getAttribute("data-state")) !== "finished") {
    assert.ok(Date.now() < deadline, `the bar did not finish; percentages seen: ${seen.join(", ")}`);
    seen.push(Number(await progress.locator("[role=progressbar]").getAttribute("aria-valuenow")));
    await page.waitForTimeout(40);
  }
  const inBetween = new Set(seen.filter((value) => value > 0 && value < 100));
  assert.ok(inBetween.size >= 3, `expected the bar to move through several values, saw ${seen.join(", ")}`);
  assert.deepEqual([...seen].sort((a, b) => a - b), seen, "the bar went backwards");
  assert.equal(await progress.getAttribute("data-test-first-render"), "yes", "the view was rebuilt instead of patched");
  assert.equal(await lab.cell(page, 1).locator(".tsdask-output").count(), 1);
  assert.equal(await lab.cell(page, 1).locator(".jp-RenderedText").count(), 0, "the text/plain fallback was shown instead");
  assert.equal(await progress.locator(".tsdask-progress-percent").textContent(), "100%");
  assert.equal(await progress.locator(".tsdask-progress-counts").textContent(), "40 / 40");
  assert.equal(await progress.locator(".tsdask-progress-state").textContent(), "Finished");
  assert.match((await progress.locator(".tsdask-progress-rate").textContent()) ?? "", /^[\d.]+ tasks\/s$/);
  assert.match((await progress.locator(".tsdask-progress-elapsed").textContent()) ?? "", /^\d\.\d\d s$/);

  // Per-group counts show on hover; the hostile group name is plain text.
  const groups = progress.locator(".tsdask-progress-groups");
  assert.equal(await groups.isVisible(), false);
  await progress.hover();
  await groups.waitFor({ state: "visible" });
  assert.deepEqual(await groups.locator(".tsdask-progress-group-name").allTextContents(), ["inc", EVIL]);
  assert.deepEqual(await groups.locator(".tsdask-progress-group-counts").allTextContents(), ["30 / 30", "10 / 10"]);
  await page.screenshot({ path: join(SHOTS, "progress-hover.png") });
});

test("finished, errored and cancelled bars look different", async () => {
  await lab.startCell(page, 2);
  const bars = lab.cell(page, 2).locator(".tsdask-progress");
  await page.waitForFunction(() => document.querySelectorAll(".tsdask-progress").length >= 3);
  assert.deepEqual(await bars.evaluateAll((els) => els.map((el) => el.getAttribute("data-state"))), ["errored", "cancelled"]);
  assert.deepEqual(await lab.cell(page, 2).locator(".tsdask-progress-state").allTextContents(), ["Errored", "Cancelled"]);
  const fills = [
    await lab.color(lab.cell(page, 1).locator(".tsdask-progress-fill"), "backgroundColor"),
    await lab.color(bars.nth(0).locator(".tsdask-progress-fill"), "backgroundColor"),
    await lab.color(bars.nth(1).locator(".tsdask-progress-fill"), "backgroundColor"),
  ];
  assert.equal(new Set(fills).size, 3, `fill colours: ${fills.join(" / ")}`);
});

test("a plot shows Vega marks, sanitised tooltips and export actions; an update streams in place", async () => {
  await lab.startCell(page, 3);
  const plot = lab.cell(page, 3).locator(".tsdask-plot");
  const bars = plot.locator("svg .mark-rect path");
  await page.waitForFunction(() => document.querySelectorAll(".tsdask-plot svg .mark-rect path").length === 4, undefined, {
    timeout: 30_000,
  });
  const svg = plot.locator("svg.marks");
  await svg.evaluate((el) => el.setAttribute("data-test-first-embed", "yes"));
  const labels = await plot.locator("svg .role-axis-label text").allTextContents();
  assert.ok(labels.includes(EVIL), `axis labels: ${labels.join(" | ")}`);

  await bars.first().hover();
  const tooltip = page.locator("#vg-tooltip-element");
  await tooltip.waitFor({ state: "visible" });
  assert.ok(((await tooltip.textContent()) ?? "").includes(EVIL), "the tooltip shows the key as text");
  assert.equal(await tooltip.locator("img").count(), 0);
  await page.screenshot({ path: join(SHOTS, "plot-tooltip.png") });

  await plot.locator("details > summary").click();
  const actions = await plot.locator("details .vega-actions a").allTextContents();
  assert.deepEqual(actions, ["Save as SVG", "Save as PNG"]);
  const [download] = await Promise.all([page.waitForEvent("download"), plot.locator("details .vega-actions a").first().click()]);
  assert.match(download.suggestedFilename(), /^tsdask-plot-1\.svg$/);
  await page.keyboard.press("Escape");

  await lab.startCell(page, 4);
  await page.waitForFunction(() => document.querySelectorAll(".tsdask-plot svg .mark-rect path").length === 8, undefined, {
    timeout: 30_000,
  });
  assert.equal(await svg.getAttribute("data-test-first-embed"), "yes", "the update re-embedded instead of streaming");
  assert.equal(await lab.cell(page, 4).locator(".jp-OutputArea-output").count(), 0, "the update landed in the plot's own cell");
});

test("hostile task keys run no script and add no image", async () => {
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('img[src="x"]').count(), 0);
  assert.deepEqual(pageErrors, []);
});

test("the dark theme recolours bars and plots", async () => {
  const summary = lab.cell(page, 1).locator(".tsdask-progress-summary");
  const axisLabel = lab.cell(page, 3).locator("svg .role-axis-label text").first();
  const lightText = await lab.color(summary, "color");
  const lightLabel = await lab.color(axisLabel, "fill");
  await lab.switchTheme(page, "JupyterLab Dark");
  await page.waitForFunction(
    (before) => {
      const label = document.querySelector(".tsdask-plot svg .role-axis-label text");
      return label !== null && getComputedStyle(label).fill !== before;
    },
    lightLabel,
    { timeout: 30_000 },
  );
  const darkText = await lab.color(summary, "color");
  const darkLabel = await lab.color(axisLabel, "fill");
  assert.ok(lab.luminance(lightText) < 0.4 && lab.luminance(darkText) > 0.6, `progress text ${lightText} → ${darkText}`);
  assert.ok(lab.luminance(lightLabel) < 0.6 && lab.luminance(darkLabel) > 0.5, `axis labels ${lightLabel} → ${darkLabel}`);
  await lab.cell(page, 1).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, "dark-theme.png") });
  await lab.cell(page, 4).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, "dark-theme-plot.png") });
});

test("saved outputs render in a reopened, untrusted notebook", async () => {
  await lab.openNotebook(page, "saved-outputs.ipynb");
  const trusted = await page.evaluate(
    () => window.jupyterapp.shell.currentWidget?.content.model.cells.get(1).trusted,
  );
  assert.equal(trusted, false);
  const progress = lab.cell(page, 1).locator(".tsdask-progress");
  await progress.waitFor();
  assert.equal(await progress.getAttribute("data-state"), "finished");
  assert.equal(await progress.locator(".tsdask-progress-counts").textContent(), "12 / 12");
  await page.waitForFunction(() => document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .tsdask-plot svg .mark-rect path").length === 3);
  const labels = await lab.cell(page, 2).locator("svg .role-axis-label text").allTextContents();
  assert.ok(labels.includes("<b>bold?</b>"), `axis labels: ${labels.join(" | ")}`);
  // An output from a newer tsdask says what is wrong instead of drawing garbage.
  assert.match(
    (await lab.cell(page, 3).locator(".tsdask-message").textContent()) ?? "",
    /protocol version 2; this extension understands version 1/,
  );
  await page.screenshot({ path: join(SHOTS, "saved-outputs.png") });
});
