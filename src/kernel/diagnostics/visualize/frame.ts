// The one time axis every stacked plot shares: seconds since the earliest profiler's block
// started (Dask #9478: plots of one run must line up), over a span that is never zero (Dask #2770).

import type { ProfileSnapshot } from "../types";

export interface TimeFrame {
  /** Epoch seconds shown as 0 on the x axis. */
  readonly origin: number;
  /** Seconds shown: the x domain is [0, span]. */
  readonly span: number;
}

/**
 * A span this short is taken as "no span": one resource sample, an empty profiler.
 * The axis then shows one second rather than a degenerate [0, 0] domain that Vega cannot draw.
 * A real run, however short, keeps its own span so its tasks fill the width.
 */
const MIN_SPAN = 1e-6;
const FALLBACK_SPAN = 1;

export function timeFrame(snapshots: readonly ProfileSnapshot[]): TimeFrame {
  let first = Infinity;
  let last = -Infinity;
  let blockStart = Infinity;
  const see = (time: number): void => {
    if (time < first) first = time;
    if (time > last) last = time;
  };
  for (const snapshot of snapshots) {
    if (Number.isFinite(snapshot.startTime)) blockStart = Math.min(blockStart, snapshot.startTime);
    if (Number.isFinite(snapshot.endTime)) last = Math.max(last, snapshot.endTime);
    if (snapshot.kind === "tasks") {
      for (const task of snapshot.results) {
        see(task.startTime);
        see(task.endTime);
      }
    } else if (snapshot.kind === "resources") {
      for (const sample of snapshot.results) see(sample.time);
    } else {
      for (const entry of snapshot.results) {
        see(entry.cacheTime);
        see(entry.freeTime);
      }
    }
  }
  // A registered (not block-scoped) profiler may have no block start: start at its first record.
  const origin = Number.isFinite(blockStart) ? blockStart : Number.isFinite(first) ? first : 0;
  const span = Number.isFinite(last) ? last - origin : 0;
  return { origin, span: span >= MIN_SPAN ? span : FALLBACK_SPAN };
}

/** The x encoding every plot uses, so one zoom moves them all. */
export function timeAxis(frame: TimeFrame, showTitle: boolean): Record<string, unknown> {
  return {
    field: "t",
    type: "quantitative",
    title: showTitle ? "Time (s)" : null,
    scale: { domain: [0, frame.span], zero: false, nice: false },
    axis: { grid: false },
  };
}
