// The task stream: every task's phases on its worker thread (records.ts TaskStreamRecord), from
// the local schedulers and the cluster's ring, with Dask's get_task_stream and the plot.
import type { TaskStreamRecord } from "../../../protocol/records";
import { withCallbacks } from "../../callbacks/callback";
import { clusterSource } from "../cluster-source";
import type { ProfilePlot } from "../visualize";
import type { VisualizeOptions } from "../visualize/options";
import { TaskStreamCollector } from "./collector";
import type { DisplayHandle } from "../../display";
import { presentArriving } from "../../display/figure";
import { taskStreamFigure, taskStreamPlotOptions } from "./plot";
import type { TaskStreamTable } from "./table";

export { TaskStreamCollector, type TaskStreamCollectorOptions, localWorker, typeName } from "./collector";
export { TaskStreamTable, ACTIONS } from "./table";
export { taskStreamFigure, taskStreamPlot } from "./plot";
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

/** A TaskStream with its plot: what `getTaskStream(block, { plot: true })` gives. */
export type TaskStreamWithFigure<T> = TaskStream<T> & { readonly figure: ProfilePlot };

/**
 * Dask's `with get_task_stream(plot=…) as ts:` — runs `fn` and records every task the
 * computations it starts run: `const ts = await getTaskStream(() => x.compute())`, then `ts.data`.
 * With a Client open, the cluster's tasks (Futures included) come from the scheduler's task
 * stream: every record appended while the block ran, whatever the workers' clocks (Dask #9253).
 * With `plot`, the plot shows in the calling cell (awaited or not): a line while the block runs,
 * the plot once it has ended.
 */
export function getTaskStream<T>(fn: () => T | Promise<T>, options?: GetTaskStreamOptions & { readonly plot?: false }): Promise<TaskStream<Awaited<T>>>;
export function getTaskStream<T>(fn: () => T | Promise<T>, options: GetTaskStreamOptions & { readonly plot: true | "save" }): DisplayHandle<TaskStreamWithFigure<Awaited<T>>, undefined>;
export function getTaskStream<T>(fn: () => T | Promise<T>, options?: GetTaskStreamOptions): Promise<TaskStream<Awaited<T>>> | DisplayHandle<TaskStreamWithFigure<Awaited<T>>, undefined>;
export function getTaskStream<T>(fn: () => T | Promise<T>, options: GetTaskStreamOptions = {}): Promise<TaskStream<Awaited<T>>> | DisplayHandle<TaskStreamWithFigure<Awaited<T>>, undefined> {
  const { plot, ...plotOptions } = options ?? {};
  if (plot !== true && plot !== "save") return recordTaskStream(fn, options);
  // Checked before the block runs, and thrown at the call (as visualize() does): a typo must
  // not cost the user a computation, nor hide in an output nobody awaited.
  checkBlock(fn);
  const figureOptions = { ...plotOptions, ...(plot === "save" ? { save: true } : {}) };
  const opts = taskStreamPlotOptions(figureOptions);
  const arriving = recordTaskStream(fn, {}).then((ts) => ({ ...ts, figure: taskStreamFigure(ts.table, figureOptions).figure }));
  const text = { pending: "Task stream: recording the block's tasks…", summary: "Task stream of the block" };
  return presentArriving(text, arriving, opts, "Task stream");
}

function checkBlock(fn: unknown): void {
  if (typeof fn !== "function") throw new TypeError(`getTaskStream takes the block to run as a function, got ${typeof fn}`);
}

async function recordTaskStream<T>(fn: () => T | Promise<T>, options: GetTaskStreamOptions): Promise<TaskStream<Awaited<T>>> {
  checkBlock(fn);
  if (options === null || typeof options !== "object") throw new TypeError(`getTaskStream options must be an object, got ${String(options)}`);
  const { plot, ...plotOptions } = options;
  if (plot !== undefined && plot !== false) throw new TypeError(`Option plot must be true, false or "save", got ${JSON.stringify(plot)}`);
  const unknown = Object.keys(plotOptions);
  if (unknown.length > 0) throw new TypeError(`Unknown getTaskStream option "${unknown[0]}" (plot options need plot: true); known: plot`);
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
  return { data: collector.data, table: collector.table, result: result as Awaited<T>, figure: undefined, dropped };
}
