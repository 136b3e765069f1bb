// The cluster's Fine Performance Metrics panel (client.visualizeMetrics outside a notebook) as a
// standalone page in real headless Chromium: "Send data, by activity" is drawn from the workers'
// get-data after a real peer transfer, with readable tooltips, and hides when a function is picked.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import type { Browser } from "playwright-core";
import { ramp, total } from "../fixtures/cluster-tasks";
import { withCluster } from "../helpers/cluster";
import { launchChromium } from "../helpers/jupyterlab";
import { watchPage } from "../helpers/page-log";

const dir = mkdtempSync(join(tmpdir(), "tsdask-cluster-fpm-browser-"));
let browser: Browser;

before(async () => {
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the cluster's panel offline: Send data from the workers, tooltips, hidden under a filter", async () => {
  const file = join(dir, "cluster-fpm.html");
  await withCluster({ nWorkers: 2, threadsPerWorker: 1, name: "fpm-browser" }, async (_cluster, client) => {
    // Two blocks computed at once land on the two workers; their total fetches one from the other.
    const [a, b] = [client.submit(ramp, 250_000, 1, false), client.submit(ramp, 250_000, 2, false)];
    await client.submit(total, a, b).result();
    await client.visualizeMetrics({ filename: file });
  });

  const page = await browser.newPage({ viewport: { width: 1200, height: 640 } });
  const { errors, requests } = watchPage(page);
  await page.goto(pathToFileURL(file).href);
  const sendSlices = page.locator(".fpm_send_marks path");
  await sendSlices.first().waitFor({ timeout: 15_000 });
  assert.deepEqual((await page.locator(".role-title-text").allTextContents()).slice(0, 3), ["Task execution, by function", "Task execution, by activity", "Send data, by activity"]);
  assert.ok((await page.locator(".role-legend-label text").allTextContents()).includes("network"));
  const functions = await page.locator(".role-axis-label text").allTextContents();
  for (const name of ["ramp", "total"]) assert.ok(functions.includes(name), functions.join(", "));

  // A Send data slice's tooltip: an activity with a readable time and its share.
  await sendSlices.first().hover();
  const tooltip = page.locator("#vg-tooltip-element.visible");
  await tooltip.waitFor({ timeout: 5000 });
  assert.match((await tooltip.textContent()) ?? "", /\d[\d.]* (s|ms|µs)[\s\S]*\d[\d.]* %/);

  // Pick a function: Send data hides, as in Dask.
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] summary').click();
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] input[type=checkbox][value="total"]').check();
  await page.waitForFunction(() => !Array.from(document.querySelectorAll(".role-title-text")).some((t) => t.textContent === "Send data, by activity"));
  assert.deepEqual(errors, []);
  for (const url of requests) assert.match(url, /^(file|data|blob):/, `network request to ${url}`);
  await page.close();
});
