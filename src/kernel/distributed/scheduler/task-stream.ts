// The task-stream ring: the last N task records (Dask's TaskStreamPlugin buffer), with an
// append counter so a reader can ask for exactly what arrived since it last looked.

import type { TaskStreamRecord } from "../../../protocol/records";

/** Dask's `distributed.scheduler.dashboard.tasks.task-stream-length`. */
export const DEFAULT_TASK_STREAM_LENGTH = 100_000;

export interface CollectOptions {
  /** Epoch seconds: records whose last stop is at or after it. */
  readonly start?: number;
  /** Epoch seconds: records whose last stop is before it. */
  readonly stop?: number;
  /** At most this many, the newest. */
  readonly count?: number;
  /**
   * An earlier `index`: the records appended since then (still in the ring), whatever their
   * times, so clock skew or late reports never hide a task (Dask #9253). Overrides start/stop.
   */
  readonly startIndex?: number;
}

/** The time a record sorts by: its last stop (Dask bisects on `max(startstop.stop)`). */
function lastStop(record: TaskStreamRecord): number {
  let stop = 0;
  for (const startstop of record.startstops) if (startstop.stop > stop) stop = startstop.stop;
  return stop;
}

export class TaskStreamRing {
  private readonly records: (TaskStreamRecord | undefined)[];
  /** Records appended since the ring was made (Dask's `index`): the next record's position. */
  private appended = 0;
  /** Told of every record as it is appended (a performance report recording every task, however many). */
  private watchers: Set<(record: TaskStreamRecord) => void> | undefined;

  constructor(readonly capacity: number = DEFAULT_TASK_STREAM_LENGTH) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) {
      throw new RangeError(`The task stream length must be a whole number ≥ 1, got ${capacity}`);
    }
    this.records = new Array(capacity);
  }

  /** How many records were ever appended; pass it back as `startIndex` to get only newer ones. */
  get index(): number {
    return this.appended;
  }

  /** Records held now (at most `capacity`). */
  get length(): number {
    return Math.min(this.appended, this.capacity);
  }

  push(record: TaskStreamRecord): void {
    this.records[this.appended % this.capacity] = record;
    this.appended++;
    if (this.watchers !== undefined) for (const watcher of this.watchers) watcher(record);
  }

  /** Calls `watcher` with every record appended from now on, however many; returns the function that stops it. */
  watch(watcher: (record: TaskStreamRecord) => void): () => void {
    (this.watchers ??= new Set()).add(watcher);
    return () => {
      this.watchers?.delete(watcher);
      if (this.watchers?.size === 0) this.watchers = undefined;
    };
  }

  /** Oldest first. */
  collect(options: CollectOptions = {}): TaskStreamRecord[] {
    const first = this.appended - this.length;
    let from = first;
    let to = this.appended;
    if (options.startIndex !== undefined) {
      from = Math.max(first, Math.min(to, options.startIndex));
    } else {
      if (options.start !== undefined) from = this.bisect(first, to, options.start);
      if (options.stop !== undefined) to = Math.max(from, this.bisect(from, to, options.stop));
    }
    if (options.count !== undefined) from = Math.max(from, to - Math.max(0, options.count));
    const out: TaskStreamRecord[] = [];
    for (let i = from; i < to; i++) out.push(this.records[i % this.capacity]!);
    return out;
  }

  clear(): void {
    this.records.fill(undefined);
    this.appended = 0;
  }

  /** The first position in [lo, hi) whose record stops at or after `time` (records arrive nearly in stop order). */
  private bisect(lo: number, hi: number, time: number): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (lastStop(this.records[mid % this.capacity]!) < time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
