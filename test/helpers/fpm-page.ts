// Reading a Fine Performance Metrics panel back from a real page: its charts and selectors as drawn.
import type { Page } from "playwright-core";

/** What the test reads back from the page. */
export interface PanelState {
  titles: string[];
  bars: string[];
  slices: number;
  legend: string[];
  unit: string;
  chips: string[];
  /** The function axis's labels. */
  functions: string[];
}

/** Charts and selectors as drawn: chart titles, the bars' and legend's activities, the selection. */
function readPanel(page: Page): Promise<PanelState> {
  return page.evaluate(() => {
    interface El {
      textContent: string | null;
      getAttribute(name: string): string | null;
      querySelectorAll(selector: string): ArrayLike<El>;
    }
    const doc = (globalThis as unknown as { document: El & { querySelector(s: string): (El & { value: string }) | null } }).document;
    const all = (selector: string): El[] => Array.from(doc.querySelectorAll(selector));
    return {
      titles: all(".role-title-text").map((t) => t.textContent ?? ""),
      // Vega labels each bar "…; activity: thread-cpu; …" for screen readers.
      bars: all(".fpm_bars_marks path").map((p) => /Activity: ([^;]*)/.exec(p.getAttribute("aria-label") ?? "")?.[1] ?? "?"),
      slices: all(".fpm_activities_marks path").length,
      legend: all(".role-legend-label text").map((t) => t.textContent ?? ""),
      unit: doc.querySelector(".tsdask-fpm-unit-select")?.value ?? "",
      chips: all(".tsdask-fpm-chip-text").map((t) => t.textContent ?? ""),
      functions: all(".role-axis-label text").map((t) => t.textContent ?? ""),
    };
  });
}

/** Polls the page until `check` holds (15 s at most, then fails showing what the panel has). */
export async function waitForBars(page: Page, check: (state: PanelState) => boolean, what: string): Promise<PanelState> {
  const end = Date.now() + 15_000;
  for (;;) {
    const state = await readPanel(page);
    if (check(state)) return state;
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}; the panel shows ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Moves the mouse onto the first mark matching `selector`, at a point where that mark is what the
 * page has under the mouse. Playwright's hover() aims at the middle of the mark's box, which for
 * a donut slice of about a third can lie in the hole, where the chart's background takes it.
 */
export async function hoverMark(page: Page, selector: string): Promise<void> {
  await page.locator(selector).first().scrollIntoViewIfNeeded();
  const point = await page.evaluate((markSelector) => {
    interface El {
      getBoundingClientRect(): { left: number; top: number; width: number; height: number };
    }
    const doc = (globalThis as unknown as { document: { querySelector(s: string): El | null; elementFromPoint(x: number, y: number): El | null } }).document;
    const mark = doc.querySelector(markSelector);
    if (mark === null) return null;
    const box = mark.getBoundingClientRect();
    const steps = 20;
    for (let i = 1; i < steps; i++) {
      for (let j = 1; j < steps; j++) {
        const x = box.left + (box.width * i) / steps;
        const y = box.top + (box.height * j) / steps;
        if (doc.elementFromPoint(x, y) === mark) return { x, y };
      }
    }
    return null;
  }, selector);
  if (point === null) throw new Error(`No point of ${selector} is on top where the mouse can reach it`);
  await page.mouse.move(point.x, point.y);
}
