// What the Fine Performance Metrics panel shows, as a pure function of the metrics, the spans and
// the selector state — Dask's `FinePerformanceMetrics._build_data_sources`, with readable values,
// percentages, functions sorted by time and colours that stay put when filters change.

import type { MetricRecord, SpanRecord } from "../records";
import { formatMetric, formatShare } from "./format";
import { IDLE_OR_OTHER_SPANS, IDLE_PREFIX, findByTags, mergeSpans, spanTags } from "./spans";

/** Where the tasks ran, for the panel's summary line and the Send-data chart's empty state. */
export interface FpmSource {
  /** E.g. "threads scheduler, 2 threads" or "cluster of 4 workers, 8 threads". */
  readonly description: string;
  /** Whether workers send each other data (a cluster); local schedulers do not. */
  readonly transfers: boolean;
}

/** Everything the panel draws from: a bounded snapshot, the same for the notebook, a file, or the dashboard. */
export interface FpmData {
  /**
   * Metrics without span ids (Dask's scheduler-side `cumulative_worker_metrics` as records):
   * execute (per task prefix), and for a cluster get-data, gather-dep, memory-monitor.
   */
  readonly metrics: readonly MetricRecord[];
  /** Every span, each with its subtree's execute metrics (idle included) and intervals. */
  readonly spans: readonly SpanRecord[];
  /** Epoch seconds the snapshot was taken: the "now" of spans still running. */
  readonly time: number;
  readonly source?: FpmSource;
}

/** The three selectors: span tags and functions (empty: no filter) and the unit. */
export interface FpmSelection {
  readonly spans: readonly string[];
  readonly functions: readonly string[];
  readonly unit: string;
}

export const DEFAULT_SELECTION: FpmSelection = { spans: [], functions: [], unit: "seconds" };

/** The selectors' options. They only ever grow while a panel is shown (Dask's rule). */
export interface FpmOptions {
  readonly spans: readonly string[];
  readonly functions: readonly string[];
  readonly units: readonly string[];
}

/** One slice of a pie: an activity's total. */
export interface FpmSlice {
  readonly activity: string;
  readonly value: number;
  /** "1.2 s", "340 MiB". */
  readonly text: string;
  /** Of the chart's total: "34.5 %". */
  readonly share: string;
}

/** One segment of a bar: an activity within a function. */
export interface FpmSegment extends FpmSlice {
  readonly function: string;
  /** The bar's total, as text. */
  readonly functionTotal: string;
  /** Stacking order within the bar (the activities' order in the legend). */
  readonly order: number;
}

export interface FpmModel {
  readonly unit: string;
  /** The bars, top to bottom: by total, largest first; "N/A" (no task: idle) last. */
  readonly functions: readonly string[];
  /** Each bar's total, as a number and as text, in the same order. */
  readonly functionTotals: readonly { readonly function: string; readonly value: number; readonly text: string }[];
  readonly segments: readonly FpmSegment[];
  /** Task execution by activity, in the legend's order. */
  readonly activities: readonly FpmSlice[];
  /** Send data by activity; null while a filter is active (hidden, as in Dask). */
  readonly send: readonly FpmSlice[] | null;
  /** Every activity drawn, in legend order, with its colour (the same in all charts). */
  readonly legend: readonly { readonly activity: string; readonly color: string }[];
  /** Σ of the execute values shown. */
  readonly total: number;
  /** The thread-seconds budget (wall × threads) of the spans shown, when spans exist (seconds). */
  readonly budget: number | undefined;
  readonly filtered: boolean;
  /** Functions beyond the most the bar chart draws, lumped into one bar. */
  readonly hiddenFunctions: number;
}

/** More bars than this are unreadable; the rest share one "(n more)" bar. */
export const MAX_FUNCTIONS = 40;

/** Colours that mean the same in every panel: time on the CPU green, waiting warm, overheads purple, idle grey. */
const ACTIVITY_COLORS: Readonly<Record<string, string>> = {
  "thread-cpu": "#59a14f",
  "thread-noncpu": "#f28e2b",
  thread: "#8cd17d",
  idle: "#bab0ac",
  [IDLE_OR_OTHER_SPANS]: "#bab0ac",
  executor: "#b07aa1",
  other: "#d4a6c8",
  serialize: "#4e79a7",
  deserialize: "#a0cbe8",
  network: "#17becf",
  compress: "#76b7b2",
  decompress: "#499894",
  offload: "#9c755f",
  "disk-read": "#e15759",
  "disk-write": "#ff9d9a",
  "memory-read": "#edc948",
  failed: "#d62728",
  cancelled: "#7f7f7f",
  missing: "#c7c7c7",
  busy: "#8c564b",
};
/**
 * The order activities stack in and are listed in, the same in every chart whatever their sizes:
 * the task's own time first, the user's labels next, overheads after, idle last.
 */
const BUILT_IN_ORDER: readonly string[] = [
  "thread-cpu", "thread-noncpu", "thread", "deserialize", "serialize", "compress", "decompress", "network", "offload",
  "disk-read", "disk-write", "memory-read", "executor", "other", "failed", "cancelled", "missing", "busy", "idle", IDLE_OR_OTHER_SPANS,
];
/** Where the user's own activities go in that order (after the task's own time). */
const CUSTOM_RANK = 2.5;

function compareActivities(a: string, b: string): number {
  const rank = (activity: string): number => {
    const at = BUILT_IN_ORDER.indexOf(activity);
    return at < 0 ? CUSTOM_RANK : at;
  };
  return rank(a) - rank(b) || byName(a, b);
}

/** Colours for the user's own activities, none of them used above. */
const CUSTOM_COLORS: readonly string[] = [
  "#e377c2", "#bcbd22", "#9467bd", "#843c39", "#637939", "#3182bd", "#a55194", "#e7ba52",
  "#393b79", "#ad494a", "#b5cf6b", "#de9ed6", "#6b6ecf", "#8c6d31", "#31a354", "#7f7f7f",
];

/**
 * The colour of each activity. Built-in activities have fixed colours; the user's own take the
 * custom colours in the sorted order of every custom activity in the data, so a filter never
 * recolours anything.
 */
export function activityColors(activities: Iterable<string>): (activity: string) => string {
  const custom = [...new Set(activities)].filter((activity) => ACTIVITY_COLORS[activity] === undefined).sort(byName);
  const colors = new Map(custom.map((activity, i) => [activity, CUSTOM_COLORS[i % CUSTOM_COLORS.length]]));
  return (activity) => ACTIVITY_COLORS[activity] ?? colors.get(activity) ?? "#7f7f7f";
}

/** The selectors' options from the data, added to those already shown (they never shrink). */
export function fpmOptions(data: FpmData, known: FpmOptions = { spans: [], functions: [], units: [] }): FpmOptions {
  const functions = new Set(known.functions);
  const units = new Set(["seconds", ...known.units]);
  for (const record of allMetrics(data)) {
    units.add(record.unit);
    if (record.context === "execute" && record.prefix !== undefined && record.prefix !== IDLE_PREFIX) functions.add(record.prefix);
  }
  // "N/A" (idle, no task) is an option once any function is.
  if (functions.size > 0) functions.add(IDLE_PREFIX);
  return {
    spans: [...new Set([...known.spans, ...spanTags(data.spans)])],
    functions: [...functions].sort(byName),
    units: [...units].sort(byName),
  };
}

function* allMetrics(data: FpmData): Iterable<MetricRecord> {
  yield* data.metrics;
  for (const span of data.spans) yield* span.metrics;
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The execute rows the selection looks at, and the budget they are measured against. */
function executeSource(data: FpmData, selection: FpmSelection): { rows: readonly MetricRecord[]; budget: number | undefined } {
  if (selection.spans.length > 0) {
    const matched = findByTags(data.spans, selection.spans);
    if (matched.length === 0) return { rows: [], budget: 0 };
    const merged = mergeSpans(matched, data.time);
    return { rows: merged.metrics, budget: merged.activeCpuSeconds };
  }
  const roots = data.spans.filter((span) => span.parent === null);
  if (roots.length > 0) {
    const merged = mergeSpans(roots, data.time);
    // With no span filter, time not spent on any span's tasks is plain idle.
    return { rows: merged.metrics.map((row) => (row.activity === IDLE_OR_OTHER_SPANS ? { ...row, activity: "idle" } : row)), budget: merged.activeCpuSeconds };
  }
  return { rows: data.metrics.filter((row) => row.context === "execute"), budget: undefined };
}

export function fpmModel(data: FpmData, selection: FpmSelection): FpmModel {
  const unit = selection.unit;
  const functionFilter = selection.functions.length > 0 ? new Set(selection.functions) : undefined;
  const filtered = functionFilter !== undefined || selection.spans.length > 0;
  const { rows, budget } = executeSource(data, selection);

  // (function, activity) → value, and the totals per function and per activity.
  const cells = new Map<string, Map<string, number>>();
  const byActivity = new Map<string, number>();
  for (const row of rows) {
    const fn = row.prefix ?? IDLE_PREFIX;
    if (row.unit !== unit || (functionFilter !== undefined && !functionFilter.has(fn)) || row.value === 0) continue;
    let activities = cells.get(fn);
    if (activities === undefined) cells.set(fn, (activities = new Map()));
    activities.set(row.activity, (activities.get(row.activity) ?? 0) + row.value);
    byActivity.set(row.activity, (byActivity.get(row.activity) ?? 0) + row.value);
  }
  const send = filtered ? null : sumByActivity(data.metrics.filter((row) => row.context === "get-data" && row.unit === unit && row.value !== 0));

  const activityOrder = [...byActivity.keys()].sort(compareActivities);
  const total = [...byActivity.values()].reduce((sum, value) => sum + value, 0);
  const functionTotals = [...cells.entries()].map(([fn, activities]) => [fn, [...activities.values()].reduce((sum, v) => sum + v, 0)] as const);
  functionTotals.sort((a, b) => Number(a[0] === IDLE_PREFIX) - Number(b[0] === IDLE_PREFIX) || b[1] - a[1] || byName(a[0], b[0]));

  // Past MAX_FUNCTIONS bars, the smallest functions share one bar.
  let shown = functionTotals;
  let hiddenFunctions = 0;
  if (functionTotals.length > MAX_FUNCTIONS) {
    const idle = functionTotals.filter(([fn]) => fn === IDLE_PREFIX);
    const tasks = functionTotals.filter(([fn]) => fn !== IDLE_PREFIX);
    const kept = tasks.slice(0, MAX_FUNCTIONS - 1 - idle.length);
    const rest = tasks.slice(kept.length);
    hiddenFunctions = rest.length;
    const restName = `(${rest.length} more)`;
    const restCells = new Map<string, number>();
    for (const [fn] of rest) for (const [activity, value] of cells.get(fn)!) restCells.set(activity, (restCells.get(activity) ?? 0) + value);
    cells.set(restName, restCells);
    shown = [...kept, [restName, rest.reduce((sum, [, value]) => sum + value, 0)], ...idle];
  }

  const segments: FpmSegment[] = [];
  for (const [fn, fnTotal] of shown) {
    const activities = cells.get(fn)!;
    for (const [order, activity] of activityOrder.entries()) {
      const value = activities.get(activity);
      if (value === undefined) continue;
      segments.push({
        function: fn,
        activity,
        value,
        text: formatMetric(value, unit),
        share: formatShare(value, fnTotal),
        functionTotal: formatMetric(fnTotal, unit),
        order,
      });
    }
  }

  const sendSlices = send === null ? null : slices(send, unit);
  const colorOf = activityColors([...allMetrics(data)].map((row) => row.activity));
  const legendActivities = [...new Set([...activityOrder, ...(sendSlices ?? []).map((slice) => slice.activity)])].sort(compareActivities);
  return {
    unit,
    functions: shown.map(([fn]) => fn),
    functionTotals: shown.map(([fn, value]) => ({ function: fn, value, text: formatMetric(value, unit) })),
    segments,
    activities: slices(byActivity, unit),
    send: sendSlices,
    legend: legendActivities.map((activity) => ({ activity, color: colorOf(activity) })),
    total,
    budget: unit === "seconds" ? budget : undefined,
    filtered,
    hiddenFunctions,
  };
}

function sumByActivity(rows: readonly MetricRecord[]): Map<string, number> {
  const sums = new Map<string, number>();
  for (const row of rows) sums.set(row.activity, (sums.get(row.activity) ?? 0) + row.value);
  return sums;
}

function slices(values: ReadonlyMap<string, number>, unit: string): FpmSlice[] {
  const total = [...values.values()].reduce((sum, value) => sum + value, 0);
  return [...values.entries()]
    .sort((a, b) => compareActivities(a[0], b[0]))
    .map(([activity, value]) => ({ activity, value, text: formatMetric(value, unit), share: formatShare(value, total) }));
}

/** One line saying what the charts show: "14.2 s of thread time in 12 functions; idle 8.1 %". */
export function fpmSummary(model: FpmModel): string {
  const functions = model.functions.filter((fn) => fn !== IDLE_PREFIX).length + Math.max(0, model.hiddenFunctions - 1);
  const idle = model.activities.find((slice) => slice.activity === "idle" || slice.activity === IDLE_OR_OTHER_SPANS);
  const parts = [`${formatMetric(model.total, model.unit)}${model.unit === "seconds" ? " of thread time" : ""} in ${functions} function${functions === 1 ? "" : "s"}`];
  if (idle !== undefined) parts.push(`${idle.activity} ${idle.share}`);
  if (model.filtered) parts.push("filtered");
  return parts.join("; ");
}
