// The cluster's Fine Performance Metrics panel (client.visualizeMetrics outside a notebook) as a
// standalone page in real headless Chromium: the three charts, "Send data, by activity" drawn from
// the workers' get-data after a real peer transfer, readable tooltips, and the span, unit and
// function selectors working on the cluster's records.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import type { Browser } from "playwright-core";
import { span } from "../../src";
import { ramp, total } from "../fixtures/cluster-tasks";
import { withCluster } from "../helpers/cluster";
import { hoverMark, waitForBars } from "../helpers/fpm-page";
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

test("the cluster's panel offline: three charts, Send data from the workers, tooltips, span / unit / function selectors", async () => {
  const file = join(dir, "cluster-fpm.html");
  await withCluster({ nWorkers: 2, threadsPerWorker: 1, name: "fpm-browser" }, async (_cluster, client) => {
    // Two blocks computed at once (in span "blocks") land on the two workers; their total (in the
    // default span) fetches one from the other.
    const [a, b] = span("blocks", () => [client.submit(ramp, 250_000, 1, false), client.submit(ramp, 250_000, 2, false)]);
    await client.submit(total, a, b).result();
    await client.visualizeMetrics({ filename: file });
  });

  const page = await browser.newPage({ viewport: { width: 1200, height: 640 } });
  const { errors, requests } = watchPage(page);
  await page.goto(pathToFileURL(file).href);
  const first = await waitForBars(page, (s) => s.bars.length > 0 && s.titles.includes("Send data, by activity"), "the bars and Send data");
  assert.deepEqual(first.titles.slice(0, 3), ["Task execution, by function", "Task execution, by activity", "Send data, by activity"]);
  assert.ok(first.legend.includes("network") && first.legend.includes("thread-cpu"), first.legend.join(", "));
  for (const name of ["ramp", "total"]) assert.ok(first.functions.includes(name), first.functions.join(", "));
  assert.equal(first.unit, "seconds");

  // A Send data slice's tooltip: an activity with a readable time and its share.
  await hoverMark(page, ".fpm_send_marks path");
  const tooltip = page.locator("#vg-tooltip-element.visible");
  await tooltip.waitFor({ timeout: 5000 });
  assert.match((await tooltip.textContent()) ?? "", /\d[\d.]* (s|ms|µs)[\s\S]*\d[\d.]* %/);

  // Unit → bytes: the bars are the inputs total read from memory; Send data, the bytes served.
  await page.selectOption(".tsdask-fpm-unit-select", "bytes");
  const bytes = await waitForBars(page, (s) => s.bars.length > 0 && !s.bars.includes("thread-cpu"), "the bytes bars");
  assert.ok(bytes.bars.every((activity) => activity === "memory-read"), bytes.bars.join(", "));
  assert.deepEqual(bytes.functions.filter((f) => f === "ramp" || f === "total"), ["total"]);
  // Send data in bytes: what the workers read to serve (Dask's get-data has no network bytes).
  assert.ok(bytes.titles.includes("Send data, by activity") && bytes.legend.includes("memory-read"), `${bytes.titles.join(", ")}; ${bytes.legend.join(", ")}`);

  // Back to seconds, span "blocks": only the blocks' function, and Send data hides (a filter is on).
  await page.selectOption(".tsdask-fpm-unit-select", "seconds");
  await waitForBars(page, (s) => s.bars.includes("thread-cpu"), "the seconds bars");
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by span tag"] summary').click();
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by span tag"] input[type=checkbox][value="blocks"]').check();
  const blocks = await waitForBars(page, (s) => !s.titles.includes("Send data, by activity"), "Send data to hide under the span filter");
  assert.deepEqual(blocks.chips, ["blocks"]);
  assert.deepEqual(blocks.functions.filter((f) => f === "ramp" || f === "total"), ["ramp"]);

  // Then a function instead: its bars only.
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by span tag"] input[type=checkbox][value="blocks"]').uncheck();
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] summary').click();
  await page.locator('.tsdask-fpm-filter[data-filter="Filter by function"] input[type=checkbox][value="total"]').check();
  const totalOnly = await waitForBars(page, (s) => s.chips.join() === "total" && !s.functions.includes("ramp"), "the function filter");
  assert.ok(!totalOnly.titles.includes("Send data, by activity"));
  assert.deepEqual(errors, []);
  for (const url of requests) assert.match(url, /^(file|data|blob):/, `network request to ${url}`);
  await page.close();
});
