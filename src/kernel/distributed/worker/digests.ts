// Fine performance metrics as a worker keeps them (Dask's `digests_total`): values summed under
// Dask's tuple keys, with a copy since the last heartbeat that is swapped out when one is sent.

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
  value: number;
}

class DigestMap {
  readonly entries = new Map<string, Entry>();

  add(key: DigestKey, value: number): void {
    const id = key.join("\u0000");
    const entry = this.entries.get(id);
    if (entry === undefined) this.entries.set(id, { key, value });
    else entry.value += value;
  }
}

export class Digests {
  private total = new DigestMap();
  private sinceHeartbeat = new DigestMap();

  add(key: DigestKey, value: number): void {
    this.total.add(key, value);
    this.sinceHeartbeat.add(key, value);
  }

  /** Digests `metrics` under `prefix`: ("execute", span, taskPrefix) or (context). */
  addAll(prefix: readonly ["execute", string, string] | readonly [Exclude<MetricContext, "execute">], metrics: readonly Metric[]): void {
    for (const [activity, value, unit] of metrics) this.add([...prefix, activity, unit] as unknown as DigestKey, value);
  }

  /** The value summed under `key` since the worker started (0 if none). */
  get(key: DigestKey): number {
    return this.total.entries.get(key.join("\u0000"))?.value ?? 0;
  }

  /** Everything since the worker started, as Dask's (tuple key, value) pairs. */
  tuples(): [DigestKey, number][] {
    return [...this.total.entries.values()].map((entry) => [entry.key, entry.value]);
  }

  /** Everything since the worker started, as records. */
  records(): MetricRecord[] {
    return [...this.total.entries.values()].map(toRecord);
  }

  /**
   * What was digested since the previous call, as records; the map is swapped for an empty
   * one first, so nothing digested while a heartbeat is on its way is lost.
   */
  takeSinceHeartbeat(): MetricRecord[] {
    const taken = this.sinceHeartbeat;
    this.sinceHeartbeat = new DigestMap();
    return [...taken.entries.values()].map(toRecord);
  }
}

function toRecord({ key, value }: Entry): MetricRecord {
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
