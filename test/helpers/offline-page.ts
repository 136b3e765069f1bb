// Opening a standalone tsdask page (plot, profile, report) from file:// in Chromium while recording
// what would show it is not offline and clean: console errors, page errors, every request made.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { watchPage } from "./page-log";

export interface OfflinePage {
  readonly page: Page;
  readonly errors: string[];
  readonly requests: string[];
  /** Milliseconds from navigation until `ready` resolved. */
  readonly openMs: number;
}

/** Opens `file` and waits for `ready` (the page's own sign that it has drawn). */
export async function openOffline(
  browser: Browser,
  file: string,
  viewport: { width: number; height: number },
  ready: (page: Page) => Promise<unknown>,
): Promise<OfflinePage> {
  const page = await browser.newPage({ viewport });
  const { errors, requests } = watchPage(page);
  const started = Date.now();
  await page.goto(pathToFileURL(file).href);
  await ready(page);
  return { page, errors, requests, openMs: Date.now() - started };
}

/** No console or page error, and nothing loaded but the file itself and data: or blob: URLs. */
export function assertOffline(opened: OfflinePage): void {
  assert.deepEqual(opened.errors, []);
  assert.ok(opened.requests.length > 0);
  for (const url of opened.requests) assert.match(url, /^(file|data|blob):/, `network request to ${url}`);
}
