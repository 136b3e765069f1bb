// Time bins for plots of many intervals (tasks, task phases): per row and bin, the busy fraction
// and the colour group with the most busy time, instead of one sub-pixel mark per interval.

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

/** Rounds seconds for tooltips and data: microseconds are more than any plot resolves. */
export function seconds(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

export interface BinnedIntervals {
  /** Epoch seconds of each interval. */
  readonly starts: ArrayLike<number>;
  readonly ends: ArrayLike<number>;
  /** Row index of each interval (into `rowLabels`). */
  readonly rows: ArrayLike<number>;
  /** Colour group index of each interval (into `colorDomain`). */
  readonly colors: ArrayLike<number>;
  readonly rowLabels: readonly string[];
  readonly colorDomain: readonly string[];
}

export interface Bin {
  readonly t: number;
  readonly t2: number;
  /** The row's label. */
  readonly worker: string;
  /** The colour group with the most busy time in the bin. */
  readonly color: string;
  /** Busy share of the bin, 0–1 (overlapping intervals on a row count once at most). */
  readonly busy: number;
  /** Intervals that started in the bin. */
  readonly started: number;
}

/**
 * Bins over [origin, origin + span], one per 2 px of `width`. The work is
 * O(intervals + rows × bins × colours), whatever the number of intervals.
 */
export function binIntervals(intervals: BinnedIntervals, origin: number, span: number, width: number): Bin[] {
  const { starts, ends, rows, colors, rowLabels, colorDomain } = intervals;
  const bins = binCount(width);
  const binWidth = span / bins;
  const colorsCount = colorDomain.length;
  const rowCount = rowLabels.length;
  // busy[(row * bins + bin) * colorsCount + color] = seconds
  const busy = new Float64Array(rowCount * bins * colorsCount);
  const started = new Uint32Array(rowCount * bins);
  const binAt = (t: number): number => Math.min(bins - 1, Math.max(0, Math.floor(t / binWidth)));
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i] - origin;
    const end = ends[i] - origin;
    const color = colors[i];
    const row = rows[i];
    started[row * bins + binAt(start)] += 1;
    for (let bin = binAt(start), last = binAt(end); bin <= last; bin++) {
      const overlap = Math.min(end, (bin + 1) * binWidth) - Math.max(start, bin * binWidth);
      if (overlap > 0) busy[(row * bins + bin) * colorsCount + color] += overlap;
    }
  }
  const values: Bin[] = [];
  for (let row = 0; row < rowCount; row++) {
    for (let bin = 0; bin < bins; bin++) {
      const cell = (row * bins + bin) * colorsCount;
      let total = 0;
      let top = 0;
      for (let c = 0; c < colorsCount; c++) {
        total += busy[cell + c];
        if (busy[cell + c] > busy[cell + top]) top = c;
      }
      if (total <= 0 && started[row * bins + bin] === 0) continue;
      values.push({
        t: seconds(bin * binWidth),
        t2: seconds((bin + 1) * binWidth),
        worker: rowLabels[row],
        color: colorDomain[top],
        busy: Math.min(1, total / binWidth),
        started: started[row * bins + bin],
      });
    }
  }
  return values;
}

/** The shading and hover of binned marks: `rowField`/`rowTitle` name the row, `what` the intervals counted. */
export function binnedEncoding(rowField: string, rowTitle: string, what: string): { opacity: Record<string, unknown>; tooltip: Record<string, unknown>[] } {
  return {
    opacity: { field: "busy", type: "quantitative", scale: { domain: [0, 1], range: [0.15, 1] }, legend: null },
    tooltip: [
      { field: rowField, type: "nominal", title: rowTitle },
      { field: "t", type: "quantitative", title: "From (s)", format: ".3~f" },
      { field: "t2", type: "quantitative", title: "To (s)", format: ".3~f" },
      { field: "color", type: "nominal", title: "Mostly" },
      { field: "busy", type: "quantitative", title: "Busy", format: ".0%" },
      { field: "started", type: "quantitative", title: `${what} started` },
    ],
  };
}
