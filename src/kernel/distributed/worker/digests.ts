// Fine performance metrics as a worker keeps them (Dask's `digests_total`): values summed under
// Dask's tuple keys, and what was digested since the last heartbeat, taken when one is sent.

import type { MetricContext, MetricRecord } from "../../../protocol/records";
import type { Metric } from "../../metrics/context-meter";

/**
 * Dask's key of a worker metric: ("execute", spanId, prefix, activity, unit) for tasks, or
 * (context, activity, unit) for fetching inputs ("gather-dep"), serving peers ("get-data") and
 * spilling on memory pressure ("memory-monitor").
 */
export type DigestKey =
  | readonly [context: "execute", spanId: string, prefix: string, activity: string, unit: string]
  | readonly [context: Exclude<MetricContext, "execute">, activity: string, unit: string];


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
 * The (activity, unit) pairs nearly every task digests, in the order they are first digested.
 * Tasks add them to their (span, prefix)'s PrefixSums as plain numbers; the tallies are folded
 * into the entries only when digests are read or sent with a heartbeat.
 */
const TASK_ACTIVITIES: readonly (readonly [activity: string, unit: string])[] = [
  ["memory-read", "count"],
  ["memory-read", "bytes"],
  ["thread-cpu", "seconds"],
  ["thread-noncpu", "seconds"],
  ["executor", "seconds"],
  ["other", "seconds"],
];
const [MEMORY_READ_COUNT, MEMORY_READ_BYTES, THREAD_CPU, THREAD_NONCPU, EXECUTOR, OTHER] = TASK_ACTIVITIES.keys();

/** A TASK_ACTIVITIES slot, or -1 for any other metric. */
function taskSlot(activity: string, unit: string): number {
  if (unit !== "seconds") return -1;
  switch (activity) {
    case "thread-cpu":
      return THREAD_CPU;
    case "thread-noncpu":
      return THREAD_NONCPU;
    case "executor":
      return EXECUTOR;
    default:
      return -1;
  }
}

/** The TASK_ACTIVITIES sums of one (span, prefix) since they were last folded. */
class PrefixSums {
  readonly sums = new Float64Array(TASK_ACTIVITIES.length);
  /** Whether anything was added to a slot (a digest of 0 still makes its entry). */
  readonly touched = new Uint8Array(TASK_ACTIVITIES.length);
  /** Whether any slot is touched. */
  dirty = false;

  constructor(
    readonly span: string,
    readonly prefix: string,
  ) {}

  add(slot: number, value: number): void {
    this.sums[slot] += value;
    this.touched[slot] = 1;
    this.dirty = true;
  }
}

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
  /** Span id → task prefix → tally; and the tallies with something to fold. */
  private readonly tallies = new Map<string, Map<string, PrefixSums>>();
  private dirtyTallies: PrefixSums[] = [];

  add(key: DigestKey, value: number): void {
    if (key[0] === "execute") this.addTo(this.executeScope(key[1], key[2]), ["execute", key[1], key[2]], key[3], value, key[4]);
    else this.addTo(this.contextScope(key[0]), [key[0]], key[1], value, key[2]);
  }

  /** Digests `metrics` under `prefix`: ("execute", span, taskPrefix) or (context). */
  addAll(prefix: readonly ["execute", string, string] | readonly [Exclude<MetricContext, "execute">], metrics: readonly Metric[]): void {
    const scope = prefix[0] === "execute" ? this.executeScope(prefix[1], prefix[2]) : this.contextScope(prefix[0]);
    for (const [activity, value, unit] of metrics) this.addTo(scope, prefix, activity, value, unit);
  }

  /**
   * Digests a finished task of `span` and `prefix`: what `account` noted while it ran, the
   * metrics of its run, and as "other" the part of its `elapsed` seconds no seconds metric
   * explains; or, for a task that failed or was cancelled, all its seconds under `coarse`
   * (see InstructionLedger.finalize).
   */
  addTask(span: string, prefix: string, account: ExecuteLedger, run: readonly Metric[], elapsed: number, coarse?: string): void {
    if (coarse !== undefined || account.extra !== null) {
      this.addAll(["execute", span, prefix], finalizeMetrics([...account.metrics(), ...run], elapsed, coarse));
      return;
    }
    const tally = this.tally(span, prefix);
    if (account.memoryReads > 0) {
      tally.add(MEMORY_READ_COUNT, account.memoryReads);
      tally.add(MEMORY_READ_BYTES, account.memoryBytes);
    }
    let seconds = 0;
    for (const [activity, value, unit] of run) {
      const slot = taskSlot(activity, unit);
      if (slot >= 0) tally.add(slot, value);
      else this.add(["execute", span, prefix, activity, unit], value);
      if (unit === "seconds") seconds += value;
    }
    tally.add(OTHER, Math.max(0, elapsed - seconds));
  }

  /** The value summed under `key` since the worker started (0 if none). */
  get(key: DigestKey): number {
    this.fold();
    const scope = key[0] === "execute" ? this.execute.get(key[1])?.get(key[2]) : this.contexts.get(key[0]);
    const [activity, unit] = key[0] === "execute" ? [key[3], key[4]] : [key[1], key[2]];
    return scope?.get(activity)?.get(unit)?.total ?? 0;
  }

  /** Everything since the worker started, as Dask's (tuple key, value) pairs. */
  tuples(): [DigestKey, number][] {
    this.fold();
    return this.entries.map((entry) => [entry.key, entry.total]);
  }

  /** Everything since the worker started, as records. */
  records(): MetricRecord[] {
    this.fold();
    return this.entries.map((entry) => toRecord(entry.key, entry.total));
  }

  /**
   * What was digested since the previous call, as records; taken whole before anything else
   * can run, so nothing digested while a heartbeat is on its way is lost or sent twice.
   */
  takeSinceHeartbeat(): MetricRecord[] {
    this.fold();
    const taken = this.pending;
    this.pending = [];
    return taken.map((entry) => {
      entry.reported = true;
      return toRecord(entry.key, entry.sinceHeartbeat);
    });
  }

  private tally(span: string, prefix: string): PrefixSums {
    let bySpan = this.tallies.get(span);
    if (bySpan === undefined) this.tallies.set(span, (bySpan = new Map()));
    let tally = bySpan.get(prefix);
    if (tally === undefined) bySpan.set(prefix, (tally = new PrefixSums(span, prefix)));
    if (!tally.dirty) this.dirtyTallies.push(tally);
    return tally;
  }

  /** Adds the tallies' sums to their entries and clears them. */
  private fold(): void {
    for (const tally of this.dirtyTallies) {
      const scope = this.executeScope(tally.span, tally.prefix);
      for (let slot = 0; slot < TASK_ACTIVITIES.length; slot++) {
        if (tally.touched[slot] === 0) continue;
        const [activity, unit] = TASK_ACTIVITIES[slot];
        this.addTo(scope, ["execute", tally.span, tally.prefix], activity, tally.sums[slot], unit);
      }
      tally.sums.fill(0);
      tally.touched.fill(0);
      tally.dirty = false;
    }
    this.dirtyTallies = [];
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
export class InstructionLedger {
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
    return finalizeMetrics(this.metrics, this.elapsed(), coarse);
  }
}

/**
 * The final list of an instruction's `metrics` over `elapsed` seconds: with "other" for the
 * seconds no measurement explains, or, with `coarse`, all its seconds under that label and only
 * the measurements in other units kept.
 */
function finalizeMetrics(metrics: readonly Metric[], elapsed: number, coarse?: string): Metric[] {
  if (coarse !== undefined) return [...metrics.filter(([, , unit]) => unit !== "seconds"), [coarse, elapsed, "seconds"]];
  let seconds = 0;
  for (const [, value, unit] of metrics) if (unit === "seconds") seconds += value;
  return [...metrics, ["other", Math.max(0, elapsed - seconds), "seconds"]];
}

/**
 * The InstructionLedger of running a task, on the LocalCluster worker's hot path: what the worker
 * notes about the task besides its run (its inputs read from memory, anything the store reports
 * while reading spilled inputs or spilling the result), for `Digests.addTask`: reads from memory
 * as two numbers, the rare rest as a list. Given to the store as its meter.
 */
export class ExecuteLedger {
  memoryReads = 0;
  memoryBytes = 0;
  /** Metrics other than memory reads, in the order reported; null while there are none. */
  extra: Metric[] | null = null;

  add(activity: string, value: number, unit: string): void {
    if (activity === "memory-read" && unit === "count") this.memoryReads += value;
    else if (activity === "memory-read" && unit === "bytes") this.memoryBytes += value;
    else (this.extra ??= []).push([activity, value, unit]);
  }

  /** All of it as a list. */
  metrics(): Metric[] {
    const reads: Metric[] = this.memoryReads > 0 ? [["memory-read", this.memoryReads, "count"], ["memory-read", this.memoryBytes, "bytes"]] : [];
    return this.extra === null ? reads : [...reads, ...this.extra];
  }
}

