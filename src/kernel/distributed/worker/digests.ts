// Fine performance metrics as a worker keeps them (Dask's `digests_total`): values summed under
// Dask's tuple keys, with what was digested since the last heartbeat counted apart. A task's
// metrics find their entries through its (span, prefix) group, without building key strings.

import type { MetricContext, MetricRecord } from "../../../protocol/records";

/**
 * Dask's key of a worker metric: ("execute", spanId, prefix, activity, unit) for tasks, or
 * (context, activity, unit) for fetching inputs ("gather-dep"), serving peers ("get-data") and
 * spilling on memory pressure ("memory-monitor").
 */
export type DigestKey =
  | readonly [context: "execute", spanId: string, prefix: string, activity: string, unit: string]
  | readonly [context: Exclude<MetricContext, "execute">, activity: string, unit: string];

/** One measurement before it is given a context: (activity, value, unit). */
export type Metric = readonly [activity: string, value: number, unit: string];

interface Entry {
  readonly key: DigestKey;
  /** Since the worker started. */
  total: number;
  /** Since the last heartbeat. */
  recent: number;
  /** In `touched`: digested since the last heartbeat. */
  touched: boolean;
}

/** The entries of one key prefix (("execute", span, task prefix) or (context)), by activity, one per unit. */
type Group = Map<string, Entry[]>;

export class Digests {
  /** Every entry by its joined key, in the order they first appeared. */
  private readonly entries = new Map<string, Entry>();
  /** Groups of ("execute", span, task prefix) by span, then task prefix; a task digests into one without building strings. */
  private readonly executeGroups = new Map<string, Map<string, Group>>();
  /** Groups of the other contexts. */
  private readonly contextGroups = new Map<string, Group>();
  /** Entries digested since the last heartbeat, in that order. */
  private touched: Entry[] = [];

  add(key: DigestKey, value: number): void {
    const id = key.join("\u0000");
    let entry = this.entries.get(id);
    if (entry === undefined) {
      entry = { key, total: 0, recent: 0, touched: false };
      this.entries.set(id, entry);
    }
    this.bump(entry, value);
  }

  /** Digests `metrics` under `prefix`: ("execute", span, taskPrefix) or (context). */
  addAll(prefix: readonly ["execute", string, string] | readonly [Exclude<MetricContext, "execute">], metrics: readonly Metric[]): void {
    const group = this.groupOf(prefix);
    for (let i = 0; i < metrics.length; i++) {
      const [activity, value, unit] = metrics[i];
      this.bump(this.entryIn(group, prefix, activity, unit), value);
    }
  }

  /** The value summed under `key` since the worker started (0 if none). */
  get(key: DigestKey): number {
    return this.entries.get(key.join("\u0000"))?.total ?? 0;
  }

  /** Everything since the worker started, as Dask's (tuple key, value) pairs. */
  tuples(): [DigestKey, number][] {
    return [...this.entries.values()].map((entry) => [entry.key, entry.total]);
  }

  /** Everything since the worker started, as records. */
  records(): MetricRecord[] {
    return [...this.entries.values()].map((entry) => toRecord(entry.key, entry.total));
  }

  /** What was digested since the previous call, as records (and the count starts again). */
  takeSinceHeartbeat(): MetricRecord[] {
    const taken = this.touched;
    this.touched = [];
    return taken.map((entry) => {
      const record = toRecord(entry.key, entry.recent);
      entry.recent = 0;
      entry.touched = false;
      return record;
    });
  }

  private bump(entry: Entry, value: number): void {
    entry.total += value;
    entry.recent += value;
    if (!entry.touched) {
      entry.touched = true;
      this.touched.push(entry);
    }
  }

  private groupOf(prefix: readonly ["execute", string, string] | readonly [Exclude<MetricContext, "execute">]): Group {
    if (prefix[0] !== "execute") {
      let group = this.contextGroups.get(prefix[0]);
      if (group === undefined) this.contextGroups.set(prefix[0], (group = new Map()));
      return group;
    }
    const [, span, taskPrefix] = prefix as readonly ["execute", string, string];
    let bySpan = this.executeGroups.get(span);
    if (bySpan === undefined) this.executeGroups.set(span, (bySpan = new Map()));
    let group = bySpan.get(taskPrefix);
    if (group === undefined) bySpan.set(taskPrefix, (group = new Map()));
    return group;
  }

  private entryIn(group: Group, prefix: readonly string[], activity: string, unit: string): Entry {
    let units = group.get(activity);
    if (units === undefined) group.set(activity, (units = []));
    for (let i = 0; i < units.length; i++) if (units[i].key[units[i].key.length - 1] === unit) return units[i];
    const key = [...prefix, activity, unit] as unknown as DigestKey;
    const id = key.join("\u0000");
    let entry = this.entries.get(id);
    if (entry === undefined) {
      entry = { key, total: 0, recent: 0, touched: false };
      this.entries.set(id, entry);
    }
    units.push(entry);
    return entry;
  }
}

function toRecord(key: DigestKey, value: number): MetricRecord {
  if (key[0] === "execute") {
    const [context, span, prefix, activity, unit] = key;
    return { context, span, prefix, activity, unit, value };
  }
  const [context, activity, unit] = key;
  return { context, activity, unit, value };
}

/**
 * The metrics of one instruction (running a task, fetching inputs), Dask's DelayedMetricsLedger:
 * measurements collected while it runs; at the end, the wall time no measurement explains
 * becomes "other", or all seconds are lumped under one label when the instruction failed or
 * was cancelled.
 */
export class MetricsLedger {
  private readonly started = performance.now();
  readonly metrics: Metric[] = [];

  add(activity: string, value: number, unit: string): void {
    this.metrics.push([activity, value, unit]);
  }

  /** Adds measurements as they are (each an (activity, value, unit) tuple). */
  addMetrics(metrics: readonly Metric[]): void {
    for (let i = 0; i < metrics.length; i++) this.metrics.push(metrics[i]);
  }

  /** Seconds spent since the ledger was opened. */
  elapsed(): number {
    return (performance.now() - this.started) / 1000;
  }

  /**
   * The final list; the ledger is done with. `coarse`: a label ("failed", "cancelled", "missing")
   * under which all the instruction's time goes, keeping only the measurements in other units.
   */
  finalize(coarse?: string): Metric[] {
    const elapsed = this.elapsed();
    if (coarse !== undefined) return [...this.metrics.filter(([, , unit]) => unit !== "seconds"), [coarse, elapsed, "seconds"]];
    let seconds = 0;
    for (const [, value, unit] of this.metrics) if (unit === "seconds") seconds += value;
    this.metrics.push(["other", Math.max(0, elapsed - seconds), "seconds"]);
    return this.metrics;
  }
}
