// Profiler: one record per task run (Dask's TaskData), for the task-stream plot.

import { type TaskInfo, withCallbacks } from "../callbacks/callback";
import type { WorkerId } from "../callbacks/state";
import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import { type GetFunction, get as tsdaskGet } from "../scheduler/get";
import type { State } from "../callbacks/state";
import { Recorder } from "./recorder";
import { type ProfileSnapshot, type TaskData, type Visualizable, now } from "./types";

/**
 * Dispatch times of the tasks running in one computation. The last dispatch is kept apart from
 * the map: one task at a time (the sync scheduler) then costs no map operations at all.
 */
export interface Dispatches {
  key: Key | undefined;
  time: number;
  /** Key → dispatch time; the key instances come from the plan, so tuple keys match by identity. */
  readonly earlier: Map<Key, number>;
}

export function newDispatches(): Dispatches {
  return { key: undefined, time: 0, earlier: new Map() };
}

/** Notes that `key` was dispatched now. */
export function noteDispatch(run: Dispatches, key: Key): void {
  if (run.key !== undefined) run.earlier.set(run.key, run.time);
  run.key = key;
  run.time = now();
}

/** When `key` was dispatched; forgets it. */
export function takeDispatch(run: Dispatches, key: Key): number {
  if (key === run.key) {
    run.key = undefined;
    return run.time;
  }
  const time = run.earlier.get(key)!;
  run.earlier.delete(key);
  return time;
}

/**
 * `Profiler.results` in its two forms: Dask's list of records, and, on a profiler built around a
 * scheduler's get (seed 001's `Profiler(get)`), the method `results()` that returns them. The
 * first form is marked "records" rather than `undefined`: notebook cells compile without
 * strictNullChecks, where `undefined` would pass for a get function.
 */
export type ProfilerResults<G extends GetFunction | "records"> = [G] extends [GetFunction] ? () => TaskData[] : TaskData[];

/**
 * Records when each task started and ended and which worker ran it. Tasks that fail (or are
 * still running when a computation stops) leave no record, as in Dask. Records accumulate over
 * the computations of one withCallbacks block, or over all runs while registered.
 *
 * Seed 001's form: `new Profiler(get)` wraps a scheduler's get; `prof.get(dsk, keys, opts)` then
 * computes with it and records that computation, and `prof.results()` returns the records.
 */
export class Profiler<G extends GetFunction | "records" = "records"> extends Recorder<Dispatches> implements Visualizable {
  /** The task records; a method returning them on a profiler built around a get. */
  results: ProfilerResults<G>;
  /**
   * Computes like a scheduler's get (the one given, else tsdask's `get`) and records that
   * computation alone. Usable as a scheduler: `x.compute({ scheduler: threadProf.get })`.
   */
  readonly get: GetFunction;
  private records: TaskData[] = [];
  private readonly resultsIsMethod: boolean;

  // `G | GetFunction`: an inline function (`new Profiler((dsk, keys) => …)`) still types G as a get.
  constructor(get?: G | GetFunction) {
    super();
    if (get !== undefined && typeof get !== "function") {
      throw new TypeError(`Profiler takes nothing, or a scheduler's get function (seed 001's Profiler(get)), got ${get === null ? "null" : typeof get}`);
    }
    const run: GetFunction = get ?? tsdaskGet;
    this.get = (dsk, keys, options) => withCallbacks(this, () => run(dsk, keys, options));
    this.resultsIsMethod = get !== undefined;
    this.results = this.resultsView();
  }

  protected newRun(): Dispatches {
    return newDispatches();
  }

  override clear(): void {
    super.clear();
    this.records = [];
    this.results = this.resultsView();
  }

  private resultsView(): ProfilerResults<G> {
    return (this.resultsIsMethod ? () => this.records : this.records) as ProfilerResults<G>;
  }

  override pretask(key: Key, _dsk: Graph, state: State): void {
    noteDispatch(this.run(state), key);
  }

  override posttask(key: Key, _result: unknown, dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void {
    const dispatched = takeDispatch(this.run(state), key);
    // A pool worker's own clock brackets the task itself, not its queueing and transfer.
    const timing = info.timing;
    this.records.push({
      key,
      task: dsk.get(key),
      startTime: timing === undefined ? dispatched : timing.startTime,
      endTime: timing === undefined ? now() : timing.endTime,
      workerId,
    });
  }

  snapshot(): ProfileSnapshot {
    const { records } = this;
    return { kind: "tasks", results: [...records], ...this.spanOf(records, (r) => r.startTime, (r) => r.endTime) };
  }
}

/** Seed 001's ready-made profilers around the threaded and the multiprocessing get. */
export const threadProf = new Profiler((dsk, keys, options) => tsdaskGet(dsk, keys, { ...options, scheduler: "threads" }));
export const processProf = new Profiler((dsk, keys, options) => tsdaskGet(dsk, keys, { ...options, scheduler: "processes" }));
