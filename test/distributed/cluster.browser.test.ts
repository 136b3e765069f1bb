// The cluster card in a real JupyterLab (headless Chromium): workers, threads, memory and the
// dashboard link as a user sees them; names from the kernel stay text, only http(s) links link.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { type LabServer, ROOT, launchChromium, newLabPage, startJupyterLab, stopLab } from "../helpers/jupyterlab";
import * as lab from "../helpers/lab-page";

const EVIL = "<img src=x onerror=window.__xss=1>";

let server: LabServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  server = await startJupyterLab([join(ROOT, "test/fixtures/cluster-cards.ipynb")]);
  browser = await launchChromium();
  page = await newLabPage(browser, { width: 1280, height: 900 }, pageErrors);
});

after(async () => {
  await browser?.close();
  await stopLab(server);
});

test("a saved cluster card renders its facts and workers as text", async () => {
  await lab.openLab(page, server.baseUrl, server.token);
  await lab.openNotebook(page, "cluster-cards.ipynb");
  const card = lab.cell(page, 1).locator(".tsdask-cluster");
  await card.waitFor({ timeout: 30_000 });
  assert.equal(await card.locator(".tsdask-cluster-title").textContent(), "LocalCluster 'local'");
  const facts = await card.locator(".tsdask-cluster-facts").evaluate((dl) =>
    [...dl.querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
  );
  assert.deepEqual(facts, [
    ["Workers", "2"],
    ["Threads", "3"],
    ["Memory", "2.00 GiB"],
    ["Dashboard", "http://127.0.0.1:8787/status"],
    ["Transport", `Unix sockets in /tmp/${EVIL}`],
  ]);
  assert.equal(await card.locator("a").getAttribute("href"), "http://127.0.0.1:8787/status");
  const rows = await card.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
  assert.deepEqual(rows, [
    ["worker-0", "unix:///tmp/x/worker-0.1.sock", "1", "2.00 GiB", "101"],
    [EVIL, "unix:///tmp/x/worker-1.2.sock", "2", "no limit", "102"],
  ]);
  assert.equal(await lab.cell(page, 1).locator(".jp-RenderedText").count(), 0, "the text fallback is not shown beside the card");

  const hostile = lab.cell(page, 2).locator(".tsdask-cluster");
  await hostile.waitFor();
  assert.equal(await hostile.locator(".tsdask-cluster-title").textContent(), `LocalCluster '${EVIL}'`);
  assert.equal(await hostile.locator("a").count(), 0, "a javascript: link is shown as text, not linked");
  assert.equal(await page.locator(".tsdask-cluster img").count(), 0);
  assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
  assert.deepEqual(pageErrors, []);
});
