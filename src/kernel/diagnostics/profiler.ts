// Profiler: one record per task run (Dask's TaskData), for the task-stream plot.

import type { TaskInfo, WorkerId } from "../callbacks/callback";
import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import type { State } from "../scheduler/state";
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
 * Records when each task started and ended and which worker ran it. Tasks that fail (or are
 * still running when a computation stops) leave no record, as in Dask. Records accumulate over
 * the computations of one withCallbacks block, or over all runs while registered.
 */
export class Profiler extends Recorder<Dispatches> implements Visualizable {
  results: TaskData[] = [];

  protected newRun(): Dispatches {
    return newDispatches();
  }

  override clear(): void {
    super.clear();
    this.results = [];
  }

  override pretask(key: Key, _dsk: Graph, state: State): void {
    noteDispatch(this.run(state), key);
  }

  override posttask(key: Key, _result: unknown, dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void {
    const dispatched = takeDispatch(this.run(state), key);
    // A pool worker's own clock brackets the task itself, not its queueing and transfer.
    const timing = info.timing;
    this.results.push({
      key,
      task: dsk.get(key),
      startTime: timing === undefined ? dispatched : timing.startTime,
      endTime: timing === undefined ? now() : timing.endTime,
      workerId,
    });
  }

  snapshot(): ProfileSnapshot {
    const { results } = this;
    return { kind: "tasks", results: [...results], ...this.spanOf(results, (r) => r.startTime, (r) => r.endTime) };
  }
}
