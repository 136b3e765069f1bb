// performanceReport (Dask's `with performance_report(filename=…)`): records a block of code and
// writes one self-contained offline HTML file — summary, task stream, compute and administrative
// profiles, bandwidth, system CPU and memory, fine performance metrics, MemorySampler series.
// This is the local form: what the local schedulers can measure.

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
import { buildReport, reportPage } from "./build";

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
 * error is raised after the report is written, as Dask's context manager does).
 */
export async function performanceReport<T>(options: PerformanceReportOptions, block: () => T | Promise<T>): Promise<PerformanceReport<Awaited<T>>> {
  if (options === null || typeof options !== "object") throw new TypeError(`performanceReport takes an options object first, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) throw new TypeError(`Unknown performanceReport option "${name}"; known: ${OPTION_NAMES.join(", ")}`);
  }
  const filename = resolve(options.filename ?? "dask-report.html");
  if (typeof block !== "function") throw new TypeError(`performanceReport: the block to record must be a function, got ${typeof block}`);
  const stream = new TaskStreamCollector();
  const profiler = new StatisticalProfiler();
  const system = new ResourceProfiler({ dt: SYSTEM_DT });
  const series: MemorySeries[] = [];
  const started = now();
  let result: Awaited<T> | undefined;
  let failure: { error: unknown } | undefined;
  try {
    result = await collectMemorySeries(
      (s) => series.push(s),
      () => withCallbacks([stream, profiler, system], async () => (await block()) as Awaited<T>),
    );
  } catch (error) {
    failure = { error };
  }
  const stopped = now();
  const data = buildReport({
    title: options.title,
    started,
    stopped,
    code: block.toString(),
    scheduler: "local schedulers of this process (sync on the calling thread, threads and processes in pools)",
    taskStream: stream.table,
    profile: { windows: profiler.windows, interval: profiler.samplingInterval },
    transfersNote:
      "No transfers: the local schedulers move no data between workers (a pool worker gets its task's inputs with the task and sends its result back). Bandwidth between workers is measured on a cluster.",
    system: system.results,
    memorySeries: series.length > 0 ? series : processSeries(system.results),
    memoryNote: series.length > 0 ? undefined : "No MemorySampler sampled inside this block: this is the process memory the System tab also shows.",
  });
  writeFileSync(filename, reportPage(data));
  if (failure !== undefined) throw failure.error;
  return new PerformanceReport(filename, result as Awaited<T>, data);
}

/** The ResourceProfiler's memory samples as a MemorySampler series. */
function processSeries(samples: ResourceProfiler["results"]): MemorySeries[] {
  if (samples.length === 0) return [];
  return [{ label: "process", measure: "process", points: samples.map((s) => [s.time, Math.round(s.mem * 1e6)] as const) }];
}
