// What every plot builder gets: the shared time frame and colours, its size, and whether it is
// the bottom plot (only that one names the time axis, as in Dask's stacked layout).

import type { TimeFrame } from "./frame";
import type { GroupColors } from "./groups";

export type { VegaLiteSpec } from "../../display/vega";

export interface PlotContext {
  readonly frame: TimeFrame;
  readonly colors: GroupColors;
  readonly width: number;
  readonly height: number;
  /** True for the bottom plot of the stack: it carries the "Time (s)" title. */
  readonly bottom: boolean;
  /** True when a task plot above already has the group legend. */
  readonly groupLegendShown: boolean;
}

/**
 * Above this many task records the task plot shows per-worker time bins instead of one rectangle
 * per task. 5 000 is where rectangles stop being readable and cheap at once: at 800 px a run of
 * 5 000 tasks over a few workers is already ~1 px per task (Dask #397's grey slab), and Vega's
 * canvas renders ~10 k marks in ~0.3 s but 100 k in ~1 s per redraw (js-ecosystem.md §7), while
 * the inlined data grows ~60 bytes per mark. The same limit bounds the points of line plots.
 */
export const DETAIL_LIMIT = 5000;

/** Time bins per plot when aggregating: one per 2 px, finer than the eye needs, coarse enough to stay small. */
export function binCount(width: number): number {
  return Math.max(1, Math.round(width / 2));
}
