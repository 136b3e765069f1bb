// Seed 003's notebook in a real JupyterLab (headless Chromium): its saved outputs — the task
// stream, the statistical profile (tsdask's "profile" output) and the memory plot — render with
// tsdask's extension, and the profile output zooms on a click as the report's does.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const SHOTS = join(ROOT, "test-output");
const NOTEBOOK = "diagnosing-performance.ipynb";

let server: LabServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startJupyterLab([join(ROOT, "notebooks", NOTEBOOK)]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1400, height: 1000 }, pageErrors);
  await lab.openLab(page, server.baseUrl, server.token);
  await lab.openNotebook(page, NOTEBOOK);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(await stopLab(server), [], "kernel processes outlived the server");
});

/** The cell whose source starts with `start` (found in the notebook's model: off-screen editors may be empty), scrolled into view. */
async function cellStarting(start: string): Promise<ReturnType<typeof lab.cell>> {
  const index = await page.evaluate((prefix) => {
    const panel = window.jupyterapp.shell.currentWidget as unknown as { content: { model: { cells: { length: number; get(i: number): { sharedModel: { getSource(): string } } } } } };
    const { cells } = panel.content.model;
    for (let i = 0; i < cells.length; i++) if (cells.get(i).sharedModel.getSource().trimStart().startsWith(prefix)) return i;
    return -1;
  }, start);
  assert.ok(index >= 0, `no cell starts with ${start}`);
  const cell = lab.cell(page, index);
  await cell.scrollIntoViewIfNeeded();
  return cell;
}

test("the saved task stream and memory plots render as live Vega views", async () => {
  const stream = await cellStarting("const ts = await getTaskStream");
  await stream.locator(".tsdask-plot svg .mark-rect path").first().waitFor({ timeout: 60_000 });
  assert.ok((await stream.locator(".tsdask-plot svg .mark-rect path").count()) > 10);
  await stream.screenshot({ path: join(SHOTS, "notebook-task-stream.png") });
  const memory = await cellStarting("const ms = new MemorySampler()");
  await memory.locator(".tsdask-plot svg .mark-line path").first().waitFor({ timeout: 60_000 });
  assert.equal(await memory.locator(".tsdask-plot svg .mark-line path").count(), 2, "one line per label");
});

test("the saved statistical profile renders as the icicle view and zooms on a click", async () => {
  const output = await cellStarting("await sp.visualize()");
  const cells = output.locator(".tsdask-profile .tsdask-icicle-cell");
  await cells.first().waitFor({ timeout: 60_000 });
  assert.ok((await cells.count()) > 5);
  const prefixes = await output.locator(".tsdask-profile select option").allTextContents();
  assert.ok(prefixes.some((text) => text.startsWith("tsqr (")), prefixes.join(" | "));
  await output.screenshot({ path: join(SHOTS, "notebook-profile.png") });
  const frame = output.locator(".tsdask-icicle-cell", { has: page.locator("text", { hasText: /^applyQ$/ }) }).first();
  await frame.locator("rect").click();
  assert.equal((await output.locator(".tsdask-crumb").allTextContents()).at(-1), "applyQ");
  assert.deepEqual(pageErrors, []);
});
