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
  const stream = await cellStarting("const sp = new StatisticalProfiler(); // read in the next section");
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
  // The widest labelled frame below the root, whatever the saved profile's timings made it
  // (a label is drawn only where a frame is wide enough for it).
  // The view redraws when its size changes (a resize observer), and scrolling a windowed notebook
  // renders other cells around it: the view is scrolled to first, its frames read once two reads
  // 200 ms apart agree, and the one to click is found again by its label.
  await output.scrollIntoViewIfNeeded();
  const labelled = output.locator(".tsdask-icicle-cell", { has: page.locator("text") });
  const readFrames = (): Promise<string> =>
    labelled.evaluateAll((nodes) => JSON.stringify(nodes.map((node) => [Number(node.querySelector("rect")?.getAttribute("width") ?? 0), node.querySelector("text")?.textContent?.trim() ?? ""])));
  let frames = await readFrames();
  for (let settled = false, reads = 0; !settled; reads++) {
    assert.ok(reads < 50, `the profile view still redraws after 10 s: ${frames}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await readFrames();
    settled = again === frames;
    frames = again;
  }
  const crumbsBefore = await output.locator(".tsdask-crumb").count();
  const byWidth = (JSON.parse(frames) as [number, string][]).sort((a, b) => b[0] - a[0]);
  assert.ok(byWidth.length >= 2, "the profile has labelled frames below the root");
  const name = byWidth[1][1];
  // Dispatched to the frame itself: a mouse click goes to a point on the page, and a redraw between
  // finding the frame and pressing the button (ci28: once in a fresh-clone run) leaves another
  // frame, or the root, at that point. The view maps each drawn mark to its own frame.
  // The label whole: as a substring, a frame named "qr" would also find "tsqr" drawn before it.
  const wholeLabel = new RegExp(`^\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`);
  await output.locator(".tsdask-icicle-cell", { has: page.locator("text", { hasText: wholeLabel }) }).first().locator("rect").dispatchEvent("click");
  const crumbs = await output.locator(".tsdask-crumb").allTextContents();
  assert.ok(crumbs.length > crumbsBefore, `a click on ${name} zooms in: ${crumbs.join(" › ")}`);
  // A label too long for its frame ends in "…"; the crumb names the frame in full.
  assert.ok(crumbs.at(-1)!.startsWith(name.replace(/…$/, "")), `${crumbs.at(-1)} names the frame clicked, ${name}`);
  assert.deepEqual(pageErrors, []);
});
