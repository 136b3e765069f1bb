// The local schedulers' task stream: a callback that turns each finished or failed task into a
// task-stream row (records.ts TaskStreamRecord) — the worker's own start and end when a pool ran
// it (TaskTiming), the dispatch and arrival times on the calling thread for "sync".

import { threadId } from "node:worker_threads";
import type { TaskInfo } from "../../callbacks/callback";
import type { WorkerId } from "../../callbacks/state";
import type { Graph } from "../../graph/graph";
import type { Key } from "../../graph/keys";
import type { State } from "../../callbacks/state";
import { nbytes } from "../../metrics/nbytes";
import { type Dispatches, newDispatches, noteDispatch, takeDispatch } from "../profiler";
import { Recorder } from "../recorder";
import { type ProfileSnapshot, type TaskData, type Visualizable, now } from "../types";
import type { DisplayHandle } from "../../display";
import type { ProfilePlot } from "../visualize";
import type { VisualizeOptions } from "../visualize/options";
import { TaskStreamTable } from "./table";
import { taskStreamPlot } from "./plot";

/** The row label of a local worker: the calling thread is "main"; pool workers are their thread id or pid. */
export function localWorker(workerId: WorkerId): { worker: string; thread: number } {
  if (workerId === null) return { worker: "main", thread: threadId };
  return { worker: String(workerId), thread: typeof workerId === "number" ? workerId : 0 };
}

/** The type name of a result, as Dask's task stream records it. */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" ? name : "Object";
}

export interface TaskStreamCollectorOptions {
  /**
   * Record the tasks a cluster ran (their full records: transfer, disk and compute phases).
   * Default true; false when the cluster's own task stream is read instead (getTaskStream does).
   */
  readonly clusterTasks?: boolean;
}

/**
 * Records every task of the computations it sees (Dask's TaskStreamPlugin, as a callback): the
 * local schedulers' tasks, and a cluster's with their phases. Use it in a withCallbacks block,
 * registered, or through getTaskStream().
 */
export class TaskStreamCollector extends Recorder<Dispatches> implements Visualizable {
  table = new TaskStreamTable();
  private readonly clusterTasks: boolean;

  constructor(options: TaskStreamCollectorOptions = {}) {
    super();
    this.clusterTasks = options.clusterTasks ?? true;
  }

  protected newRun(): Dispatches {
    return newDispatches();
  }

  override clear(): void {
    super.clear();
    this.table = new TaskStreamTable();
  }

  override pretask(key: Key, _dsk: Graph, state: State): void {
    noteDispatch(this.run(state), key);
  }

  override posttask(key: Key, result: unknown, _dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void {
    if (info.record !== undefined) {
      takeDispatch(this.run(state), key);
      if (this.clusterTasks) this.table.addRecord(info.record);
      return;
    }
    this.add(key, state, workerId, info, true, nbytes(result), typeName(result));
  }

  override taskError(key: Key, error: unknown, _dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void {
    this.add(key, state, workerId, info, false, 0, typeName(error));
  }

  /** The records so far (records.ts TaskStreamRecord, Dask's task-stream messages). */
  get data(): ReturnType<TaskStreamTable["records"]> {
    return this.table.records();
  }

  /** The task-stream plot (one row per worker thread, phases coloured), shown or saved as visualize() does. */
  override visualize(options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
    return taskStreamPlot(this.table, options);
  }

  /** The compute phases as Profiler records, so the stream can be stacked with the other profilers' plots. */
  snapshot(): ProfileSnapshot {
    const { table } = this;
    const results: TaskData[] = [];
    for (let phase = 0; phase < table.phaseCount; phase++) {
      const task = table.phaseTask[phase];
      if (table.phaseAction[phase] !== 0) continue;
      results.push({ key: table.keyOf(task), task: undefined, startTime: table.phaseStart[phase], endTime: table.phaseStop[phase], workerId: table.workers.list[table.worker[task]] });
    }
    return { kind: "tasks", results, ...this.spanOf(results, (r) => r.startTime, (r) => r.endTime) };
  }

  private add(key: Key, state: State, workerId: WorkerId, info: TaskInfo, ok: boolean, bytes: number, type: string): void {
    const dispatched = takeDispatch(this.run(state), key);
    const timing = info.timing;
    const { worker, thread } = localWorker(workerId);
    this.table.addTask(key, worker, thread, ok, bytes, type, timing?.startTime ?? dispatched, timing?.endTime ?? now());
  }
}
