// Seed 003's diagnostics for a cluster, behind the Client so every transport's cluster is
// diagnosed alike: the scheduler's task-stream ring, the workers' statistical profiles and
// transfer logs, heartbeat memory and system samples, cumulative metrics. While a client is open
// its ClusterDiagnostics is what getTaskStream, MemorySampler and performanceReport read
// (diagnostics/cluster-source.ts); the Client's getTaskStream, profile and bandwidth call here.

import type { ProfileWindow } from "../../../protocol/profile";
import { administrativeProfile, computeProfile } from "../../../protocol/profile";
import type { MetricRecord, ProfileNode, SystemSample, TaskStreamRecord, TransferLogEntry, WorkerLogLine, WorkerRecord } from "../../../protocol/records";
import { MEASURE_TITLES, type MemoryMeasure, type MemoryPoint } from "../../../protocol/memory";
import { now } from "../../clock";
import { type BandwidthDetail, type BandwidthOptions, type TransferLogs, bandwidthFigure, bandwidthPlotOptions, bandwidthSummary, nameTransferLogs } from "../../diagnostics/bandwidth";
import type { ClusterDiagnosticsSource, TimeRange } from "../../diagnostics/cluster-source";
import type { MemoryRecording, MemorySource } from "../../diagnostics/memory/source";
import { type ProfileFigureOptions, ProfileFigure } from "../../diagnostics/statprof/figure";
import { prefixesOfKey } from "../../diagnostics/statprof/profiler";
import { TaskStreamTable, taskStreamFigure } from "../../diagnostics/taskstream";
import type { DisplayHandle } from "../../display";
import { presentArriving, present, saveAsAsked } from "../../display/figure";
import type { VisualizeOptions } from "../../diagnostics/visualize/options";
import type { ProfilePlot } from "../../diagnostics/visualize/visualize";
import type { Key } from "../../graph/keys";
import type { WorkerAddress } from "../messages";
import type { Scheduler } from "../scheduler/scheduler";
import type { CollectOptions } from "../scheduler/task-stream";
import type { WorkerView } from "../worker/view";

// Exported, so they travel to the workers as module exports (client.run's rules): a Redis worker
// started without --allow-source runs those, not source text.
export const incomingLog = (worker: WorkerView): readonly TransferLogEntry[] => worker.incomingTransferLog;
export const outgoingLog = (worker: WorkerView): readonly TransferLogEntry[] => worker.outgoingTransferLog;
export const workerLogLines = (worker: WorkerView): readonly WorkerLogLine[] => worker.logs;

/** How often reportedSince looks at the workers' heartbeats. */
const POLL_MS = 25;

export class ClusterDiagnostics implements ClusterDiagnosticsSource {
  readonly memory: MemorySource;

  constructor(
    private readonly scheduler: Scheduler,
    readonly description: string,
  ) {
    this.memory = heartbeatMemory(scheduler, description);
  }

  taskStreamIndex(): number {
    return this.scheduler.taskStream.index;
  }

  taskStreamSince(index: number): { records: TaskStreamRecord[]; dropped: number } {
    const ring = this.scheduler.taskStream;
    const oldestHeld = ring.index - ring.length;
    return { records: ring.collect({ startIndex: index }), dropped: Math.max(0, oldestHeld - index) };
  }

  watchTaskStream(watcher: (record: TaskStreamRecord) => void): () => void {
    return this.scheduler.taskStream.watch(watcher);
  }

  profile(range: TimeRange, workers?: readonly string[]): Promise<{ windows: ProfileWindow[]; interval: number }> {
    return this.scheduler.profileWindows(range, workers === undefined ? undefined : this.addressesOf(workers));
  }

  async transferLogs(direction: "incoming" | "outgoing", range: TimeRange = {}): Promise<TransferLogs> {
    const spec = this.scheduler.functions.specFor(direction === "incoming" ? incomingLog : outgoingLog, "client.run");
    const logs = (await this.scheduler.runOnWorkers(spec)) as Record<WorkerAddress, TransferLogEntry[]>;
    const { start = -Infinity, stop = Infinity } = range;
    for (const [worker, log] of Object.entries(logs)) logs[worker] = log.filter((entry) => entry.stop >= start && entry.start <= stop);
    return logs;
  }

  async workerLogs(): Promise<Record<WorkerAddress, WorkerLogLine[]>> {
    const spec = this.scheduler.functions.specFor(workerLogLines, "client.run");
    return (await this.scheduler.runOnWorkers(spec)) as Record<WorkerAddress, WorkerLogLine[]>;
  }

  system(range: TimeRange): SystemSample[] {
    return this.scheduler.systemHistory(range.start, range.stop);
  }

  metrics(): MetricRecord[] {
    return this.scheduler.cumulativeWorkerMetrics();
  }

  workers(): WorkerRecord[] {
    return this.scheduler.workerRecords();
  }

  reportedSince(time: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    return new Promise((resolve) => {
      const check = (): void => {
        const waiting = [...this.scheduler.workers.values()].some((ws) => ws.lastHeartbeat < time);
        if (!waiting || Date.now() >= deadline || this.scheduler.isClosed) resolve();
        else setTimeout(check, POLL_MS);
      };
      check();
    });
  }

  /** Worker addresses from addresses or names; an unknown one is an error naming it. */
  addressesOf(workers: readonly string[]): WorkerAddress[] {
    const known = this.scheduler.workers;
    return workers.map((worker) => {
      if (known.has(worker)) return worker;
      for (const ws of known.values()) if (ws.name === worker) return ws.address;
      throw new Error(`No worker ${JSON.stringify(worker)} in ${this.description}; workers: ${[...known.values()].map((ws) => `${ws.name} (${ws.address})`).join(", ")}`);
    });
  }
}

/**
 * The cluster's memory as its workers' heartbeats report it (Dask's scheduler MemoryState, every
 * measure): a sample every `interval` seconds, the first at once. It stops with the cluster.
 */
function heartbeatMemory(scheduler: Scheduler, description: string): MemorySource {
  return {
    description: `the workers of ${description} (heartbeats)`,
    record(measure: MemoryMeasure, interval: number): MemoryRecording {
      if (!(measure in MEASURE_TITLES)) throw new TypeError(`MemorySampler: unknown measure ${JSON.stringify(measure)}`);
      const points: MemoryPoint[] = [];
      const sample = (): void => void points.push([now(), scheduler.memory()[measure]]);
      sample();
      const timer = setInterval(sample, interval * 1000);
      // The sampled block keeps the process alive; the sampler must not keep it after.
      timer.unref();
      const stopWatching = scheduler.onClose(() => clearInterval(timer));
      return {
        run: (block) => block(),
        async stop() {
          clearInterval(timer);
          stopWatching();
          return points;
        },
      };
    },
  };
}

// ---- What the Client's methods do --------------------------------------------------------------

export interface ClientTaskStreamOptions extends CollectOptions, VisualizeOptions {
  /** Also plot the records: true shows them (notebook) or writes `filename` (elsewhere); "save" always writes. */
  readonly plot?: boolean | "save";
}

/** Records and their plot (Dask's `(records, figure)` for `plot=True`). */
export interface PlottedTaskStream {
  readonly data: TaskStreamRecord[];
  readonly table: TaskStreamTable;
  readonly figure: ProfilePlot;
}

const COLLECT_NAMES = ["start", "stop", "count", "startIndex"];

/** Whether the options ask for a plot (the call then shows it, and returns a DisplayHandle). */
export function asksForPlot(options: { readonly plot?: boolean | "save" } | null | undefined): boolean {
  return options?.plot === true || options?.plot === "save";
}

/** `client.getTaskStream` without a plot: the records. */
export async function clientTaskStream(scheduler: Scheduler, options: ClientTaskStreamOptions): Promise<TaskStreamRecord[]> {
  return checkTaskStreamOptions(scheduler, options).data;
}

/** `client.getTaskStream` with a plot: shown in the calling cell at once (the records are here). */
export function plotClientTaskStream(scheduler: Scheduler, diagnostics: ClusterDiagnostics, options: ClientTaskStreamOptions): DisplayHandle<PlottedTaskStream> {
  const { data, plotOptions } = checkTaskStreamOptions(scheduler, options);
  const table = TaskStreamTable.fromRecords(data);
  table.nameWorkers(diagnostics.workers());
  const { figure, opts } = taskStreamFigure(table, { ...plotOptions, ...(options.plot === "save" ? { save: true } : {}) });
  return present(figure, opts, "Task stream").giving({ data, table, figure });
}

function checkTaskStreamOptions(scheduler: Scheduler, options: ClientTaskStreamOptions): { data: TaskStreamRecord[]; plotOptions: VisualizeOptions } {
  if (options === null || typeof options !== "object") throw new TypeError(`client.getTaskStream takes an options object, got ${String(options)}`);
  const { plot, start, stop, count, startIndex, ...plotOptions } = options;
  if (plot !== undefined && plot !== true && plot !== false && plot !== "save") throw new TypeError(`Option plot must be true, false or "save", got ${JSON.stringify(plot)}`);
  if (!asksForPlot(options)) {
    const unknown = Object.keys(plotOptions).filter((name) => !COLLECT_NAMES.includes(name));
    if (unknown.length > 0) throw new TypeError(`Unknown client.getTaskStream option "${unknown[0]}" (plot options need plot: true); known: plot, ${COLLECT_NAMES.join(", ")}`);
  }
  // The ring checks start, stop, count and startIndex (Dask's collect rules live there).
  return { data: scheduler.getTaskStream({ start, stop, count, startIndex }), plotOptions };
}

export interface ClientProfileOptions {
  /** A task prefix ("inc"), a key whose prefix is meant, or several prefixes. Default: all. */
  readonly key?: Key | readonly string[];
  /** Epoch seconds on the scheduler's clock. */
  readonly start?: number;
  readonly stop?: number;
  /** Worker addresses or names. Default: all. */
  readonly workers?: readonly string[];
  /** "compute" (default): samples taken in tasks; "administrative": the workers' other work. */
  readonly kind?: "compute" | "administrative";
  /** Write the interactive profile (icicle over a timeline) to this HTML file. */
  readonly filename?: string;
  /** Show the interactive profile in the notebook (or write `filename`, default dask-profile.html, elsewhere). */
  readonly plot?: boolean;
}

/** The profile tree and its figure (Dask's `(data, figure)` for `profile(plot=True)`). */
export interface PlottedProfile {
  /** Dask's profile tree, merged over the workers and threads asked. */
  readonly data: ProfileNode;
  /** The interactive icicle over the activity timeline. */
  readonly figure: ProfileFigure;
}

const PROFILE_OPTIONS = ["key", "start", "stop", "workers", "kind", "filename", "plot"];

/** `client.profile` without a plot: the tree (and the page written to `filename`, if given). */
export async function clientProfile(diagnostics: ClusterDiagnostics, options: ClientProfileOptions): Promise<ProfileNode> {
  const checked = checkProfileOptions(options);
  const { windows, interval } = await diagnostics.profile(checked.range, checked.workers);
  if (options.filename !== undefined) saveAsAsked(ProfileFigure.of(windows, interval, checked.figureOptions), { filename: options.filename, save: true }, "Profile");
  return profileTree(windows, checked);
}

/**
 * `client.profile({ plot: true })`: the figure, shown in the calling cell at once as a line saying
 * what is coming and filled in once the workers have answered; awaiting gives `{ data, figure }`.
 */
export function plotClientProfile(diagnostics: ClusterDiagnostics, options: ClientProfileOptions): DisplayHandle<PlottedProfile, undefined> {
  const checked = checkProfileOptions(options);
  // Asked now: an unknown worker is thrown at the call, not when the others answer.
  const arriving = diagnostics.profile(checked.range, checked.workers).then(({ windows, interval }) => ({
    data: profileTree(windows, checked),
    figure: ProfileFigure.of(windows, interval, checked.figureOptions),
  }));
  const { title } = checked.figureOptions;
  const saving = { filename: options.filename ?? "dask-profile.html", save: options.filename === undefined ? undefined : true };
  return presentArriving({ pending: `${title}: asking the workers for their samples…`, summary: `${title} of ${diagnostics.description}` }, arriving, saving, "Profile");
}

interface CheckedProfileOptions {
  readonly range: TimeRange;
  readonly query: { start?: number; stop?: number; prefix?: string[] };
  readonly workers?: readonly string[];
  readonly kind: "compute" | "administrative";
  readonly figureOptions: ProfileFigureOptions & { title: string };
}

function checkProfileOptions(options: ClientProfileOptions): CheckedProfileOptions {
  if (options === null || typeof options !== "object") throw new TypeError(`client.profile takes an options object, got ${String(options)}`);
  for (const name of Object.keys(options)) {
    if (!PROFILE_OPTIONS.includes(name)) throw new TypeError(`Unknown client.profile option "${name}"; known: ${PROFILE_OPTIONS.join(", ")}`);
  }
  const { key, start, stop, workers, kind = "compute", filename, plot = false } = options;
  for (const [name, value] of [["start", start], ["stop", stop]] as const) {
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value))) throw new TypeError(`client.profile option ${name} must be epoch seconds, got ${JSON.stringify(value)}`);
  }
  if (kind !== "compute" && kind !== "administrative") throw new TypeError(`client.profile option kind must be "compute" or "administrative", got ${JSON.stringify(kind)}`);
  if (workers !== undefined && !(Array.isArray(workers) && workers.every((w) => typeof w === "string"))) {
    throw new TypeError(`client.profile option workers must be a list of worker addresses or names`);
  }
  if (filename !== undefined && (typeof filename !== "string" || filename === "")) throw new TypeError(`client.profile option filename must be a file name, got ${JSON.stringify(filename)}`);
  if (typeof plot !== "boolean") throw new TypeError(`client.profile option plot must be true or false, got ${JSON.stringify(plot)}`);
  const prefix = key === undefined ? undefined : prefixesOfKey(key);
  return {
    range: { start, stop },
    query: { start, stop, prefix },
    workers,
    kind,
    figureOptions: {
      kind,
      title: kind === "compute" ? "Worker profile (compute)" : "Worker profile (administrative)",
      ...(prefix?.length === 1 ? { key: prefix[0] } : {}),
    },
  };
}

/** Dask's tree of the windows, for the checked options' kind and query. */
function profileTree(windows: ProfileWindow[], { kind, query }: CheckedProfileOptions): ProfileNode {
  return kind === "compute" ? computeProfile(windows, query) : administrativeProfile(windows, query);
}

export interface ClientBandwidthOptions extends BandwidthOptions, TimeRange {
  /** Also plot it: bars by type over a source × destination heatmap (shown, or written to `filename`). */
  readonly plot?: boolean | "save";
  readonly filename?: string;
}

/** The bandwidth and its plot. */
export interface PlottedBandwidth {
  readonly data: BandwidthDetail;
  readonly figure: ProfilePlot;
}

/** Bandwidth by type and by worker pair from the workers' real transfer logs. */
export async function clientBandwidth(diagnostics: ClusterDiagnostics, options: ClientBandwidthOptions): Promise<BandwidthDetail> {
  const { direction, start, stop } = checkBandwidthOptions(options);
  return bandwidthSummary(await diagnostics.transferLogs(direction, { start, stop }), { direction });
}

/**
 * `client.bandwidth({ plot })`: the plot, shown in the calling cell at once as a line saying what
 * is coming and filled in once the workers' logs are in; awaiting gives `{ data, figure }`.
 */
export function plotClientBandwidth(diagnostics: ClusterDiagnostics, options: ClientBandwidthOptions): DisplayHandle<PlottedBandwidth, undefined> {
  const { direction, start, stop, plot, filename } = checkBandwidthOptions(options);
  const opts = bandwidthPlotOptions({ ...(filename === undefined ? {} : { filename }), ...(plot === "save" ? { save: true } : {}) });
  const arriving = diagnostics.transferLogs(direction, { start, stop }).then((logs) => ({
    data: bandwidthSummary(logs, { direction }),
    // The plot names the workers; the data keeps their addresses, as the logs have them.
    figure: bandwidthFigure(bandwidthSummary(nameTransferLogs(logs, diagnostics.workers()), { direction }), opts),
  }));
  const what = `Bandwidth (${direction} transfers)`;
  return presentArriving({ pending: `${what}: reading the workers' transfer logs…`, summary: `${what} of ${diagnostics.description}` }, arriving, opts, "Bandwidth plot");
}

function checkBandwidthOptions(options: ClientBandwidthOptions): Required<Pick<ClientBandwidthOptions, "direction" | "plot">> & ClientBandwidthOptions {
  if (options === null || typeof options !== "object") throw new TypeError(`client.bandwidth takes an options object, got ${String(options)}`);
  const known = ["direction", "start", "stop", "plot", "filename"];
  for (const name of Object.keys(options)) if (!known.includes(name)) throw new TypeError(`Unknown client.bandwidth option "${name}"; known: ${known.join(", ")}`);
  const { direction = "incoming", plot = false } = options;
  if (direction !== "incoming" && direction !== "outgoing") throw new TypeError(`Option direction must be "incoming" or "outgoing", got ${JSON.stringify(direction)}`);
  if (plot !== true && plot !== false && plot !== "save") throw new TypeError(`client.bandwidth option plot must be true, false or "save", got ${JSON.stringify(plot)}`);
  return { ...options, direction, plot };
}
