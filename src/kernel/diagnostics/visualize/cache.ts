// The CacheProfiler's plot: per colour group, the summed metric of its results held in the
// scheduler's cache over time, as a step line. Many changes are thinned to each time bin's peak.

import type { CacheData } from "../types";
import { DETAIL_LIMIT, binCount, seconds } from "../../../protocol/plot/bins";
import { timeAxis } from "./frame";
import type { PlotContext, VegaLiteSpec } from "./plot";

interface Change {
  readonly t: number;
  readonly group: number;
  readonly delta: number;
}

export function cachePlot(entries: readonly CacheData[], groups: readonly string[], metricName: string, context: PlotContext): VegaLiteSpec {
  const { domain } = context.colors;
  const indexOf = new Map(domain.map((group, i) => [group, i]));
  const changes: Change[] = [];
  for (const [i, entry] of entries.entries()) {
    const group = indexOf.get(context.colors.colorGroup(groups[i])) as number;
    // Rounded first, so that changes at one instant (a free and the result replacing it) merge.
    changes.push({ t: seconds(entry.cacheTime - context.frame.origin), group, delta: entry.metric });
    changes.push({ t: seconds(entry.freeTime - context.frame.origin), group, delta: -entry.metric });
  }
  // At equal times frees go first, so a result replaced at once does not count twice.
  changes.sort((a, b) => a.t - b.t || a.delta - b.delta);
  const values = changes.length <= DETAIL_LIMIT ? steps(changes, domain, context) : binnedPeaks(changes, domain, context);
  return {
    width: context.width,
    height: context.height,
    data: { values },
    encoding: {
      x: timeAxis(context.frame, context.bottom),
      y: { field: "value", type: "quantitative", title: `Cache Size (${metricName})`, axis: { grid: false } },
      color: {
        field: "group",
        type: "nominal",
        title: "Task group",
        scale: context.colors.scale,
        legend: context.groupLegendShown ? null : { symbolLimit: domain.length },
      },
    },
    layer: [
      { mark: { type: "line", interpolate: "step-after", strokeWidth: 2 } },
      {
        mark: { type: "point", filled: true, size: 16 },
        encoding: {
          tooltip: [
            { field: "group", type: "nominal", title: "Group" },
            { field: "t", type: "quantitative", title: "Time (s)", format: ".3~f" },
            { field: "value", type: "quantitative", title: metricName, format: ",.6~g" },
          ],
        },
      },
    ],
  };
}

/** Every change as a point; each group starts at 0 at time 0 and holds its last value to the end. */
function steps(changes: readonly Change[], domain: readonly string[], context: PlotContext): object[] {
  const current = new Float64Array(domain.length);
  const seen = new Set<number>(changes.map((c) => c.group));
  const values: object[] = [...seen].map((group) => ({ t: 0, group: domain[group], value: 0 }));
  let i = 0;
  while (i < changes.length) {
    // Changes at the same instant give one point per group, with the value after all of them.
    const t = changes[i].t;
    const touched = new Set<number>();
    for (; i < changes.length && changes[i].t === t; i++) {
      current[changes[i].group] += changes[i].delta;
      touched.add(changes[i].group);
    }
    for (const group of touched) values.push({ t, group: domain[group], value: current[group] });
  }
  const end = seconds(context.frame.span);
  if (changes.length > 0 && changes[changes.length - 1].t < end) {
    for (const group of seen) values.push({ t: end, group: domain[group], value: current[group] });
  }
  return values;
}

/** Per group and time bin, the highest amount held during the bin. */
function binnedPeaks(changes: readonly Change[], domain: readonly string[], context: PlotContext): object[] {
  const bins = binCount(context.width);
  const binWidth = context.frame.span / bins;
  const groups = domain.length;
  const current = new Float64Array(groups);
  const peak = new Float64Array(groups * bins).fill(-Infinity);
  const binAt = (t: number): number => Math.min(bins - 1, Math.max(0, Math.floor(t / binWidth)));
  const seen = new Set<number>();
  let bin = 0;
  const carry = (upTo: number): void => {
    // Bins without changes hold the running value.
    for (; bin < upTo; bin++) for (const g of seen) peak[g * bins + bin] = Math.max(peak[g * bins + bin], current[g]);
  };
  for (const change of changes) {
    const at = binAt(change.t);
    // The value held when the bin began counts towards its peak too.
    carry(at + 1);
    seen.add(change.group);
    current[change.group] += change.delta;
    peak[change.group * bins + at] = Math.max(peak[change.group * bins + at], current[change.group]);
  }
  carry(bins);
  const values: object[] = [];
  for (const g of seen) {
    if (peak[g * bins] === -Infinity) values.push({ t: 0, group: domain[g], value: 0 });
    for (let b = 0; b < bins; b++) {
      if (peak[g * bins + b] > -Infinity) values.push({ t: seconds(b * binWidth), group: domain[g], value: peak[g * bins + b] });
    }
  }
  return values;
}
