// The task stream: every task's phases on its worker thread (records.ts TaskStreamRecord), from
// the local schedulers and the cluster's ring, with Dask's get_task_stream and the plot.
import type { TaskStreamRecord } from "../../../protocol/records";
import { withCallbacks } from "../../callbacks/callback";
import { clusterSource } from "../cluster-source";
import type { ProfilePlot } from "../visualize";
import type { VisualizeOptions } from "../visualize/options";
import { TaskStreamCollector } from "./collector";
import { taskStreamPlot } from "./plot";
import type { TaskStreamTable } from "./table";

export { TaskStreamCollector, type TaskStreamCollectorOptions, localWorker, typeName } from "./collector";
export { TaskStreamTable, ACTIONS } from "./table";
export { taskStreamPlot } from "./plot";
export { taskStreamSpec, streamRows, PREFIX_PALETTE, PHASE_COLORS, type TaskStreamSpecOptions } from "../../../protocol/plot/taskstream";

export interface GetTaskStreamOptions extends VisualizeOptions {
  /** Also plot the stream: true shows it (notebook) or writes `filename` (elsewhere); "save" always writes it. */
  readonly plot?: boolean | "save";
}

/** What `getTaskStream` gives back: Dask's `ts.data` and `ts.figure`, and the block's own result. */
export interface TaskStream<T> {
  /** One record per task the block ran (Dask's task-stream messages). */
  readonly data: TaskStreamRecord[];
  /** The same in columns, for plots and reports. */
  readonly table: TaskStreamTable;
  readonly result: T;
  /** The plot, when `plot` was asked for. */
  readonly figure: ProfilePlot | undefined;
  /**
   * Cluster tasks of the block the scheduler's task stream no longer held when it ended (more
   * tasks ran than its taskStreamLength): the oldest are left out, as in Dask.
   */
  readonly dropped: number;
}

/**
 * Dask's `with get_task_stream(plot=…) as ts:` — runs `fn` and records every task the
 * computations it starts run: `const ts = await getTaskStream(() => x.compute())`, then `ts.data`.
 * With a Client open, the cluster's tasks (Futures included) come from the scheduler's task
 * stream: every record appended while the block ran, whatever the workers' clocks (Dask #9253).
 */
export async function getTaskStream<T>(fn: () => T | Promise<T>, options: GetTaskStreamOptions = {}): Promise<TaskStream<Awaited<T>>> {
  if (typeof fn !== "function") throw new TypeError(`getTaskStream takes the block to run as a function, got ${typeof fn}`);
  const { plot, ...plotOptions } = options;
  if (plot !== undefined && plot !== true && plot !== false && plot !== "save") {
    throw new TypeError(`Option plot must be true, false or "save", got ${JSON.stringify(plot)}`);
  }
  const cluster = clusterSource();
  const startIndex = cluster?.taskStreamIndex();
  // The cluster's tasks are read from its own stream (which also has those no callback hears of).
  const collector = new TaskStreamCollector({ clusterTasks: cluster === undefined });
  const result = await withCallbacks(collector, async () => fn());
  let dropped = 0;
  if (cluster !== undefined) {
    const since = cluster.taskStreamSince(startIndex!);
    for (const record of since.records) collector.table.addRecord(record);
    collector.table.nameWorkers(cluster.workers());
    dropped = since.dropped;
    if (dropped > 0) console.warn(`getTaskStream: the scheduler's task stream no longer held the first ${dropped} tasks of the block (raise taskStreamLength to keep more)`);
  }
  const figure = plot === true || plot === "save" ? await taskStreamPlot(collector.table, { ...plotOptions, ...(plot === "save" ? { save: true } : {}) }) : undefined;
  return { data: collector.data, table: collector.table, result: result as Awaited<T>, figure, dropped };
}
