// performanceReport (Dask's `with performance_report(filename=…)`): records a block of code and
// writes one self-contained offline HTML file — summary, task stream, compute and administrative
// profiles, bandwidth, system CPU and memory, fine performance metrics, MemorySampler series —
// of a cluster while a Client is open (./cluster), else what the local schedulers can measure.

import { writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { inspect } from "node:util";
import type { ReportData } from "../../../protocol/report";
import { withCallbacks } from "../../callbacks/callback";
import { formatTime } from "../../../protocol/format";
import { type MemorySeries, collectMemorySeries } from "../memory";
import { ResourceProfiler } from "../resource";
import { StatisticalProfiler } from "../statprof";
import { TaskStreamCollector } from "../taskstream";
import { now } from "../types";
import { MAIN_SOURCE } from "../../profiling/main-thread";
import { runningCellSource } from "../../display/tslab";
import { clusterSource } from "../cluster-source";
import { NO_LOGS, type ReportInputs, buildReport, reportPage } from "./build";
import { ClusterRecording } from "./cluster";

export interface PerformanceReportOptions {
  /** Where the report goes. Default "dask-report.html". */
  readonly filename?: string;
  /** The page's title. */
  readonly title?: string;
}

/** What performanceReport gives back: where the report is, the block's result, and the summary. */
export class PerformanceReport<T> {
  constructor(
    readonly filename: string,
    readonly result: T,
    readonly data: ReportData,
  ) {}

  [inspect.custom](): string {
    const { summary } = this.data;
    const shown = relative(process.cwd(), this.filename);
    return `PerformanceReport { ${summary.tasks} tasks in ${formatTime(summary.duration)}, written to ${shown.startsWith("..") ? this.filename : shown} }`;
  }
}

const OPTION_NAMES = ["filename", "title"];

/** Seconds between the System tab's samples. */
const SYSTEM_DT = 0.25;

/**
 * Runs `block` and writes its performance report to `filename` — also when the block throws (the
 * error is raised after the report is written, as Dask's context manager does). With a Client
 * open, the report is the cluster's: its task stream, its workers' profiles, transfers, memory,
 * CPU and metrics; computations on the local schedulers in the block are in it too.
 */
export async function performanceReport<T>(options: PerformanceReportOptions, block: () => T | Promise<T>): Promise<PerformanceReport<Awaited<T>>> {
  if (options === null || typeof options !== "object") throw new TypeError(`performanceReport takes an options object first, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) throw new TypeError(`Unknown performanceReport option "${name}"; known: ${OPTION_NAMES.join(", ")}`);
  }
  const filename = resolve(options.filename ?? "dask-report.html");
  if (typeof block !== "function") throw new TypeError(`performanceReport: the block to record must be a function, got ${typeof block}`);
  // In a notebook, the cell as typed (as Dask shows the calling cell), read now: the report may
  // finish while a later cell runs. Elsewhere, the block's own source.
  const code = runningCellSource() ?? block.toString();
  const cluster = clusterSource();
  const stream = new TaskStreamCollector({ clusterTasks: cluster === undefined });
  const recording = cluster === undefined ? undefined : new ClusterRecording(cluster, () => stream.table);
  // This process's threads: local tasks, and (for a cluster) the scheduler's work on the main thread.
  const profiler = new StatisticalProfiler();
  // The local schedulers' measures; a cluster's come from its heartbeats and workers.
  const system = cluster === undefined ? new ResourceProfiler({ dt: SYSTEM_DT }) : undefined;
  const series: MemorySeries[] = [];
  const started = now();
  let result: Awaited<T> | undefined;
  let failure: { error: unknown } | undefined;
  try {
    result = await collectMemorySeries(
      (s) => series.push(s),
      () => withCallbacks([stream, profiler, ...(system === undefined ? [] : [system])], async () => (await block()) as Awaited<T>),
    );
  } catch (error) {
    failure = { error };
  }
  const stopped = now();
  let inputs: ReportInputs;
  if (recording !== undefined) {
    const { heartbeatMemory, ...clusterInputs } = await recording.finish(started, stopped, stream.table);
    const windows = [...profiler.windows, ...(clusterInputs.profile?.windows ?? [])];
    inputs = {
      title: options.title,
      started,
      stopped,
      code,
      taskStream: stream.table,
      ...clusterInputs,
      profile: { windows, interval: clusterInputs.profile?.interval ?? profiler.samplingInterval },
      schedulerSources: [MAIN_SOURCE],
      memorySeries: series.length > 0 ? series : heartbeatMemory,
      memoryNote: series.length > 0 ? undefined : "No MemorySampler sampled inside this block: this is the cluster's process memory from the workers' heartbeats (the System tab's).",
    };
  } else {
    const samples = system!.results;
    inputs = {
      title: options.title,
      started,
      stopped,
      code,
      scheduler: "local schedulers of this process (sync on the calling thread, threads and processes in pools)",
      taskStream: stream.table,
      profile: { windows: profiler.windows, interval: profiler.samplingInterval },
      transfersNote:
        "No transfers: the local schedulers move no data between workers (a pool worker gets its task's inputs with the task and sends its result back). Bandwidth between workers is measured on a cluster.",
      system: samples,
      memorySeries: series.length > 0 ? series : processSeries(samples),
      memoryNote: series.length > 0 ? undefined : "No MemorySampler sampled inside this block: this is the process memory the System tab also shows.",
      workerLogsNote: `${NO_LOGS}: the local schedulers' workers keep no logs (a cluster's workers do).`,
    };
  }
  const data = buildReport(inputs);
  writeFileSync(filename, reportPage(data));
  if (failure !== undefined) throw failure.error;
  return new PerformanceReport(filename, result as Awaited<T>, data);
}

/** The ResourceProfiler's memory samples as a MemorySampler series. */
function processSeries(samples: ResourceProfiler["results"]): MemorySeries[] {
  if (samples.length === 0) return [];
  return [{ label: "process", measure: "process", points: samples.map((s) => [s.time, Math.round(s.mem * 1e6)] as const) }];
}
