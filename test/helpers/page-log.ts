// What a browser page did that a test must check: console and uncaught errors, and every request.
import type { Page } from "playwright-core";

export interface PageLog {
  readonly errors: string[];
  readonly requests: string[];
}

/** Starts recording `page`'s console errors, page errors and requests. */
export function watchPage(page: Page): PageLog {
  const log: PageLog = { errors: [], requests: [] };
  page.on("console", (message) => void (message.type() === "error" && log.errors.push(message.text())));
  page.on("pageerror", (error) => void log.errors.push(error.message));
  page.on("request", (request) => void log.requests.push(request.url()));
  return log;
}
