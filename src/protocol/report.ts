// What a performance report page holds (Dask's performance_report, seed 003): the summary and, per
// tab, a Vega-Lite spec or a profile view's data, or a note saying why the tab has nothing. The
// kernel builds it (kernel/diagnostics/report); the browser draws it (views/report).

import type { FpmData } from "./fpm";
import type { WorkerLogLine } from "./records";
import type { ProfileViewData } from "./index";

export type VegaLiteSpecData = Readonly<Record<string, unknown>>;

/** A tab's content: drawn data, or a sentence saying why there is none. */
export type ReportPart<T> = { readonly data: T; readonly note?: string } | { readonly data?: undefined; readonly note: string };

export interface ReportSummary {
  /** Epoch seconds when the block started, and how long it ran. */
  readonly started: number;
  readonly duration: number;
  readonly tasks: number;
  /** Seconds spent in each task phase (compute, transfer, …), largest first. */
  readonly phases: readonly { readonly action: string; readonly seconds: number }[];
  /** Where the tasks ran: "local schedulers (sync, threads, processes)" or a cluster's address. */
  readonly scheduler: string;
  readonly workers: number;
  readonly threads: number;
  /** Memory of the machine(s) the workers run on, bytes (a cluster: its workers' memory limits). */
  readonly memory: number;
  /** A cluster's workers as the scheduler knew them when the block ended. */
  readonly workerList?: readonly ReportWorker[];
  readonly versions: readonly { readonly name: string; readonly version: string }[];
  /** The source of the block the report wraps. */
  readonly code: string;
}

export interface ReportWorker {
  readonly name: string;
  readonly address: string;
  readonly threads: number;
  /** Bytes; 0: no limit. */
  readonly memoryLimit: number;
  /** Estimated worker clock − scheduler clock, seconds: what was taken off every time it reported. */
  readonly clockOffset: number;
}

/** One worker's recent log lines, for the Worker Logs tab. */
export interface ReportWorkerLog {
  /** The worker's name ("worker-0"), and its address. */
  readonly name: string;
  readonly address: string;
  /** Oldest first; empty: the tab says "No logs to report" for it. */
  readonly lines: readonly WorkerLogLine[];
}

export interface ReportData {
  readonly title: string;
  readonly summary: ReportSummary;
  readonly taskStream: ReportPart<VegaLiteSpecData>;
  readonly computeProfile: ReportPart<ProfileViewData>;
  readonly administrativeProfile: ReportPart<ProfileViewData>;
  /** The scheduler's own thread outside tasks (a cluster's scheduler runs in the client's process). */
  readonly schedulerProfile?: ReportPart<ProfileViewData>;
  readonly bandwidth: ReportPart<{ readonly types: VegaLiteSpecData; readonly workers: VegaLiteSpecData }>;
  readonly system: ReportPart<VegaLiteSpecData>;
  /** Fine performance metrics with spans: the FPM view's data, when that was recorded. */
  readonly fineMetrics?: ReportPart<FpmData>;
  readonly memory: ReportPart<VegaLiteSpecData>;
  /** Each worker's recent log lines (Dask's Worker Logs tab); a note when there are none. */
  readonly workerLogs: ReportPart<readonly ReportWorkerLog[]>;
}
