// The task-stream ring: the last N task records (Dask's TaskStreamPlugin buffer), with an
// append counter so a reader can ask for exactly what arrived since it last looked.
//
// Records are kept in columns (typed arrays, and arrays of strings shared between records), not
// as objects: a ring of 100 000 records would otherwise hold half a million small objects for
// the garbage collector to copy and mark on every computation. A record is rebuilt when read.

import type { StartStop, TaskStreamRecord } from "../../../protocol/records";
import { now as clockNow } from "../../clock";
import { checkNames } from "../../names";
import { parseTimedelta } from "../../timedelta";
import { type NumberColumn, grownColumn } from "./columns";

/** Dask's `distributed.scheduler.dashboard.tasks.task-stream-length`. */
export const DEFAULT_TASK_STREAM_LENGTH = 100_000;

export interface CollectOptions {
  /**
   * Records whose last stop is at or after it: epoch seconds, or a duration back from now
   * (`"20 s"`, `"2 minutes"`: Dask's relative times).
   */
  readonly start?: number | string;
  /** Records whose last stop is before it: epoch seconds, or a duration back from now. */
  readonly stop?: number | string;
  /**
   * At most this many (Dask's rule): alone, the newest; with `start`, the first after it; with
   * `stop`, the last before it; with both, ignored.
   */
  readonly count?: number;
  /**
   * An earlier `index`: the records appended since then (still in the ring), whatever their
   * times, so clock skew or late reports never hide a task (Dask #9253). Overrides start/stop.
   */
  readonly startIndex?: number;
}

/** Columns grow by doubling up to the capacity, so a small ring costs little. */
const FIRST_COLUMN_LENGTH = 1024;

export class TaskStreamRing {
  /** Records appended since the ring was made (Dask's `index`): the next record's position. */
  private appended = 0;
  /** Told of every record as it is appended (a performance report recording every task, however many). */
  private watchers: Set<(record: TaskStreamRecord) => void> | undefined;
  /** Rows allocated in every column. */
  private rows = 0;
  private keys: string[] = [];
  private prefixes: string[] = [];
  private workers: string[] = [];
  private types: string[] = [];
  private spans: (string | undefined)[] = [];
  private threads = new Float64Array(0);
  private failed = new Uint8Array(0);
  private nbytes = new Float64Array(0);
  /** The common record has one phase, "compute": its times; others keep their own list in `phases`. */
  private computeStart = new Float64Array(0);
  private computeStop = new Float64Array(0);
  private phases: (readonly StartStop[] | undefined)[] = [];
  /** The latest stop of a record's phases, which records sort by (Dask bisects on `max(startstop.stop)`). */
  private lastStop = new Float64Array(0);
  /** Type names seen, so records share one string per type. */
  private readonly typeNames = new Map<string, string>();

  constructor(readonly capacity: number = DEFAULT_TASK_STREAM_LENGTH) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) {
      throw new RangeError(`The task stream length must be a whole number ≥ 1, got ${capacity}`);
    }
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
    const row = this.appended % this.capacity;
    if (row >= this.rows) this.grow();
    this.keys[row] = record.key;
    this.prefixes[row] = record.prefix;
    this.workers[row] = record.worker;
    let type = this.typeNames.get(record.type);
    if (type === undefined) this.typeNames.set(record.type, (type = record.type));
    this.types[row] = type;
    this.spans[row] = record.span;
    this.threads[row] = record.thread;
    this.failed[row] = record.status === "OK" ? 0 : 1;
    this.nbytes[row] = record.nbytes;
    const { startstops } = record;
    let stop = 0;
    for (const startstop of startstops) if (startstop.stop > stop) stop = startstop.stop;
    this.lastStop[row] = stop;
    const only = startstops.length === 1 ? startstops[0] : undefined;
    if (only !== undefined && only.action === "compute" && only.source === undefined) {
      this.computeStart[row] = only.start;
      this.computeStop[row] = only.stop;
      this.phases[row] = undefined;
    } else {
      this.phases[row] = startstops;
    }
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

  /** Oldest first, chosen as Dask's `TaskStreamPlugin.collect` does; `now` resolves relative times. */
  collect(options: CollectOptions = {}, now: number = clockNow()): TaskStreamRecord[] {
    const { start, stop, count, startIndex } = checkCollectOptions(options);
    const first = this.appended - this.length;
    let from = first;
    let to = this.appended;
    if (startIndex !== undefined) {
      from = this.heldFrom(startIndex);
    } else {
      const position = (time: number | string, option: string): number =>
        this.bisect(first, this.appended, typeof time === "string" ? now - parseTimedelta(time, `${option} of the task stream`) : time);
      if (start !== undefined) from = position(start, "start");
      if (stop !== undefined) to = position(stop, "stop");
      if (count !== undefined && start === undefined) from = Math.max(first, to - count);
      else if (count !== undefined && stop === undefined) to = Math.min(this.appended, from + count);
    }
    const out: TaskStreamRecord[] = [];
    for (let i = from; i < to; i++) out.push(this.record(i % this.capacity));
    return out;
  }

  /**
   * The prefixes of the records from position `startIndex` on (those still held), oldest first,
   * with the position of the first: what the dashboard counts finished tasks by, read straight
   * from the column (rebuilding a million records per snapshot cost 50 ms).
   */
  prefixesSince(startIndex: number): { readonly first: number; readonly prefixes: string[] } {
    const first = this.heldFrom(startIndex);
    const prefixes: string[] = [];
    for (let i = first; i < this.appended; i++) prefixes.push(this.prefixes[i % this.capacity]);
    return { first, prefixes };
  }

  /** The position `startIndex` clamped to the records held now. */
  private heldFrom(startIndex: number): number {
    return Math.max(this.appended - this.length, Math.min(this.appended, startIndex));
  }

  clear(): void {
    this.appended = 0;
    this.rows = 0;
    this.keys = [];
    this.prefixes = [];
    this.workers = [];
    this.types = [];
    this.spans = [];
    this.phases = [];
    // The number columns start over too: grow() copies the old column into one of the new length.
    this.threads = new Float64Array(0);
    this.failed = new Uint8Array(0);
    this.nbytes = new Float64Array(0);
    this.computeStart = new Float64Array(0);
    this.computeStop = new Float64Array(0);
    this.lastStop = new Float64Array(0);
    this.typeNames.clear();
  }

  private record(row: number): TaskStreamRecord {
    const span = this.spans[row];
    const record = {
      key: this.keys[row],
      prefix: this.prefixes[row],
      worker: this.workers[row],
      thread: this.threads[row],
      status: this.failed[row] === 0 ? ("OK" as const) : ("error" as const),
      nbytes: this.nbytes[row],
      type: this.types[row],
      startstops: this.phases[row] ?? [{ action: "compute" as const, start: this.computeStart[row], stop: this.computeStop[row] }],
    };
    return span === undefined ? record : { ...record, span };
  }

  private grow(): void {
    const rows = Math.min(this.capacity, Math.max(FIRST_COLUMN_LENGTH, 2 * this.rows));
    const grown = <T extends NumberColumn>(old: T, make: new (length: number) => T): T => grownColumn(old, make, rows);
    this.threads = grown(this.threads, Float64Array);
    this.failed = grown(this.failed, Uint8Array);
    this.nbytes = grown(this.nbytes, Float64Array);
    this.computeStart = grown(this.computeStart, Float64Array);
    this.computeStop = grown(this.computeStop, Float64Array);
    this.lastStop = grown(this.lastStop, Float64Array);
    this.rows = rows;
  }

  /** The first position in [lo, hi) whose record stops at or after `time` (records arrive nearly in stop order). */
  private bisect(lo: number, hi: number, time: number): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.lastStop[mid % this.capacity] < time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const COLLECT_OPTIONS = ["start", "stop", "count", "startIndex"];

/** `options`, refused with a TypeError naming the option that is not what it should be. */
function checkCollectOptions(options: CollectOptions): CollectOptions {
  checkNames(options, COLLECT_OPTIONS, "task stream option");
  const { start, stop, count, startIndex } = options;
  for (const [name, time] of [["start", start], ["stop", stop]] as const) {
    if (time !== undefined && typeof time !== "string" && !(typeof time === "number" && Number.isFinite(time))) {
      throw new TypeError(`Task stream option ${name} must be epoch seconds or a duration back from now such as "20 s", got ${JSON.stringify(time)}`);
    }
  }
  for (const [name, number] of [["count", count], ["startIndex", startIndex]] as const) {
    if (number !== undefined && !(Number.isInteger(number) && number >= 0)) {
      throw new TypeError(`Task stream option ${name} must be a whole number ≥ 0, got ${JSON.stringify(number)}`);
    }
  }
  return options;
}
