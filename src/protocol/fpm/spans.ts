// Span arithmetic on SpanRecords, shared by the kernel's SpansState and the panel in the browser:
// which spans a tag filter selects, and the merge of several spans (Dask's `Span.merge`), whose
// idle time comes from the union of their active intervals so overlaps are not counted twice.

import type { MetricRecord, SpanRecord } from "../records";

export type Interval = readonly [start: number, stop: number, threads: number];

/** Dask's synthetic idle activity of a span: its thread budget minus the time its tasks took. */
export const IDLE_PREFIX = "N/A";
export const IDLE_OR_OTHER_SPANS = "idle or other spans";

export function isIdleRow(record: MetricRecord): boolean {
  return record.prefix === IDLE_PREFIX && record.activity === IDLE_OR_OTHER_SPANS;
}

/**
 * Σ (stop − start) × threads over the union of interval lists that come from one history of the
 * cluster's thread count: where two lists overlap they agree on the count, so each stretch of
 * time is counted once, and gaps between them not at all.
 */
export function unionCpuSeconds(lists: readonly (readonly Interval[])[]): number {
  const all = lists.flat().filter(([start, stop]) => stop > start);
  if (all.length === 0) return 0;
  all.sort((a, b) => a[0] - b[0]);
  let total = 0;
  // Sweep left to right: `covered` is how far time has been counted.
  let covered = Number.NEGATIVE_INFINITY;
  for (const [start, stop, threads] of all) {
    const from = Math.max(start, covered);
    if (stop > from) {
      total += (stop - from) * threads;
      covered = stop;
    }
  }
  return total;
}

/** Dask's `find_by_tags`: spans whose name holds any of `tags`, the top-most only (a match inside a match is dropped). */
export function findByTags(spans: readonly SpanRecord[], tags: readonly string[]): SpanRecord[] {
  const wanted = new Set(tags);
  const matches = new Set(spans.filter((span) => span.name.some((tag) => wanted.has(tag))).map((span) => span.id));
  const byId = new Map(spans.map((span) => [span.id, span]));
  const hasMatchingAncestor = (span: SpanRecord): boolean => {
    for (let parent = span.parent; parent !== null; parent = byId.get(parent)?.parent ?? null) {
      if (matches.has(parent)) return true;
    }
    return false;
  };
  return spans.filter((span) => matches.has(span.id) && !hasMatchingAncestor(span));
}

/** Every tag (span name element) in creation order, once: the span filter's options. */
export function spanTags(spans: readonly SpanRecord[]): string[] {
  return [...new Set(spans.flatMap((span) => span.name))];
}

/**
 * The merge of several spans (Dask's `Span.merge`: name `["(merged)"]`, the inputs as children):
 * their metrics summed, and idle recomputed against the union of their active intervals. The
 * spans should not be nested in one another (use `findByTags`, or root spans).
 */
export function mergeSpans(spans: readonly SpanRecord[], now: number): SpanRecord {
  if (spans.length === 0) throw new RangeError("Cannot merge an empty list of spans");
  const metrics = new Map<string, MetricRecord>();
  let executeSeconds = 0;
  for (const span of spans) {
    for (const record of span.metrics) {
      if (isIdleRow(record)) continue;
      if (record.unit === "seconds") executeSeconds += record.value;
      const key = `${record.prefix}\u0000${record.activity}\u0000${record.unit}`;
      const seen = metrics.get(key);
      metrics.set(key, seen === undefined ? { ...record } : { ...seen, value: seen.value + record.value });
    }
  }
  const intervals = spans.flatMap((span) => span.intervals ?? []);
  const activeCpuSeconds = spans.every((span) => span.intervals !== undefined)
    ? unionCpuSeconds(spans.map((span) => span.intervals!))
    : spans.reduce((sum, span) => sum + span.activeCpuSeconds, 0);
  const states: Record<string, number> = {};
  for (const span of spans) for (const [state, count] of Object.entries(span.states)) states[state] = (states[state] ?? 0) + (count ?? 0);
  const started = spans.map((span) => span.start).filter((start) => start > 0);
  const done = spans.every((span) => span.done);
  return {
    id: "(merged)",
    name: ["(merged)"],
    parent: null,
    children: spans.map((span) => span.id),
    enqueued: Math.min(...spans.map((span) => span.enqueued)),
    start: started.length > 0 ? Math.min(...started) : 0,
    stop: done ? Math.max(...spans.map((span) => span.stop)) : now,
    done,
    states,
    activeCpuSeconds,
    intervals,
    nbytesTotal: spans.reduce((sum, span) => sum + span.nbytesTotal, 0),
    metrics: withIdle([...metrics.values()], activeCpuSeconds, executeSeconds),
  };
}

/** `metrics` plus Dask's idle row: the budget not spent on execute seconds (never below 0). */
export function withIdle(metrics: MetricRecord[], activeCpuSeconds: number, executeSeconds: number): MetricRecord[] {
  const idle = Math.max(0, activeCpuSeconds - executeSeconds);
  metrics.push({ context: "execute", prefix: IDLE_PREFIX, activity: IDLE_OR_OTHER_SPANS, unit: "seconds", value: idle });
  return metrics;
}
