// Fine performance metrics as a worker keeps them (Dask's `digests_total`): values summed under
// Dask's tuple keys, and what was digested since the last heartbeat, taken when one is sent.

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
  total: number;
  /** Digested since the previous heartbeat (meaningful while `reported` is false). */
  sinceHeartbeat: number;
  /** Nothing digested under it since the previous heartbeat. */
  reported: boolean;
}

/** The entries of one (context, span, prefix) or (context), by activity then unit. */
type Scope = Map<string, Map<string, Entry>>;

/**
 * Digests are looked up by their parts (context and span and prefix, then activity, then unit)
 * in nested maps: no key string is built per task, so a task's half-dozen digests cost a few
 * map reads.
 */
export class Digests {
  /** Context "execute": span id → task prefix → scope. Other contexts: context → scope. */
  private readonly execute = new Map<string, Map<string, Scope>>();
  private readonly contexts = new Map<string, Scope>();
  /** Entries in the order first digested. */
  private readonly entries: Entry[] = [];
  /** Entries digested since the previous heartbeat, in the order first digested since. */
  private pending: Entry[] = [];

  add(key: DigestKey, value: number): void {
    if (key[0] === "execute") this.addTo(this.executeScope(key[1], key[2]), ["execute", key[1], key[2]], key[3], value, key[4]);
    else this.addTo(this.contextScope(key[0]), [key[0]], key[1], value, key[2]);
  }

  /** Digests `metrics` under `prefix`: ("execute", span, taskPrefix) or (context). */
  addAll(prefix: readonly ["execute", string, string] | readonly [Exclude<MetricContext, "execute">], metrics: readonly Metric[]): void {
    const scope = prefix[0] === "execute" ? this.executeScope(prefix[1], prefix[2]) : this.contextScope(prefix[0]);
    for (const [activity, value, unit] of metrics) this.addTo(scope, prefix, activity, value, unit);
  }

  /** The value summed under `key` since the worker started (0 if none). */
  get(key: DigestKey): number {
    const scope = key[0] === "execute" ? this.execute.get(key[1])?.get(key[2]) : this.contexts.get(key[0]);
    const [activity, unit] = key[0] === "execute" ? [key[3], key[4]] : [key[1], key[2]];
    return scope?.get(activity)?.get(unit)?.total ?? 0;
  }

  /** Everything since the worker started, as Dask's (tuple key, value) pairs. */
  tuples(): [DigestKey, number][] {
    return this.entries.map((entry) => [entry.key, entry.total]);
  }

  /** Everything since the worker started, as records. */
  records(): MetricRecord[] {
    return this.entries.map((entry) => toRecord(entry.key, entry.total));
  }

  /**
   * What was digested since the previous call, as records; taken whole before anything else
   * can run, so nothing digested while a heartbeat is on its way is lost or sent twice.
   */
  takeSinceHeartbeat(): MetricRecord[] {
    const taken = this.pending;
    this.pending = [];
    return taken.map((entry) => {
      entry.reported = true;
      return toRecord(entry.key, entry.sinceHeartbeat);
    });
  }

  private executeScope(span: string, prefix: string): Scope {
    let bySpan = this.execute.get(span);
    if (bySpan === undefined) this.execute.set(span, (bySpan = new Map()));
    let scope = bySpan.get(prefix);
    if (scope === undefined) bySpan.set(prefix, (scope = new Map()));
    return scope;
  }

  private contextScope(context: string): Scope {
    let scope = this.contexts.get(context);
    if (scope === undefined) this.contexts.set(context, (scope = new Map()));
    return scope;
  }

  private addTo(scope: Scope, prefix: readonly string[], activity: string, value: number, unit: string): void {
    let units = scope.get(activity);
    if (units === undefined) scope.set(activity, (units = new Map()));
    let entry = units.get(unit);
    if (entry === undefined) {
      entry = { key: [...prefix, activity, unit] as unknown as DigestKey, total: 0, sinceHeartbeat: 0, reported: true };
      units.set(unit, entry);
      this.entries.push(entry);
    }
    entry.total += value;
    if (entry.reported) {
      entry.reported = false;
      entry.sinceHeartbeat = value;
      this.pending.push(entry);
    } else {
      entry.sinceHeartbeat += value;
    }
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
  private started = performance.now();
  readonly metrics: Metric[] = [];

  add(activity: string, value: number, unit: string): void {
    this.metrics.push([activity, value, unit]);
  }

  /** Leaves `seconds` out of the instruction's time (spent on another instruction's account). */
  skip(seconds: number): void {
    this.started += seconds * 1000;
  }

  /** Seconds spent since the ledger was opened. */
  elapsed(): number {
    return (performance.now() - this.started) / 1000;
  }

  /**
   * The final list. `coarse`: a label ("failed", "cancelled", "missing") under which all the
   * instruction's time goes, keeping only the measurements in other units.
   */
  finalize(coarse?: string): Metric[] {
    const elapsed = this.elapsed();
    if (coarse !== undefined) return [...this.metrics.filter(([, , unit]) => unit !== "seconds"), [coarse, elapsed, "seconds"]];
    let seconds = 0;
    for (const [, value, unit] of this.metrics) if (unit === "seconds") seconds += value;
    return [...this.metrics, ["other", Math.max(0, elapsed - seconds), "seconds"]];
  }
}

/** A ledger that keeps nothing: the worker's when metrics are off (TSDASK_METRICS=off, to measure their cost). */
class IgnoringLedger extends MetricsLedger {
  override add(): void {}
  override skip(): void {}
  override finalize(): Metric[] {
    return [];
  }
}
export const IGNORING_LEDGER: MetricsLedger = new IgnoringLedger();
