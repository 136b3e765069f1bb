// A performance report's page data from what a block recorded: a pure function of the inputs, so
// the local form (performanceReport) and the cluster form (the scheduler's task-stream ring,
// the workers' profiles and transfer logs, heartbeat memory) share it.

import { readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { dirname, join } from "node:path";
import type { ProfileViewData } from "../../../protocol";
import type { FpmData } from "../../../protocol/fpm";
import type { ProfileWindow } from "../../../protocol/profile";
import type { ReportData, ReportPart, ReportSummary, ReportWorker, ReportWorkerLog, VegaLiteSpecData } from "../../../protocol/report";
import { escapeHTML, standalonePage } from "../../display/page";
import { type BandwidthOptions, type TransferLogs, bandwidthSummary, bandwidthTypesSpec, bandwidthWorkersSpec } from "../bandwidth";
import { type MemorySeries, memorySpec } from "../memory";
import { ProfileFigure } from "../statprof/figure";
import { ACTIONS, PREFIX_PALETTE, type TaskStreamTable, streamRows, taskStreamSpec } from "../taskstream";
import type { ResourceData } from "../types";
import { buildSpec } from "../visualize/spec";

/** Everything a report shows; what a source cannot measure is left out and the tab says so. */
export interface ReportInputs {
  readonly title?: string;
  /** The block's span, epoch seconds. */
  readonly started: number;
  readonly stopped: number;
  /** The source of the block. */
  readonly code: string;
  /** Where the tasks ran, for the summary ("local schedulers", a cluster's address). */
  readonly scheduler: string;
  readonly taskStream: TaskStreamTable;
  /** Workers and threads: default, counted from the task stream. */
  readonly workers?: number;
  readonly threads?: number;
  /** Memory of the machines the workers run on (bytes); default: this machine's. */
  readonly memory?: number;
  /** A cluster's workers (names, addresses, threads, memory limits, clock offsets). */
  readonly workerList?: readonly ReportWorker[];
  /** Profile windows of the block (compute and administrative sides) and the sampling interval. */
  readonly profile?: { readonly windows: readonly ProfileWindow[]; readonly interval: number };
  /**
   * The windows' sources that are the scheduler's thread (a cluster's, in this process): their
   * administrative side gets the Scheduler Profile tab instead of the workers'.
   */
  readonly schedulerSources?: readonly string[];
  /** Why there is no profile (when `profile` is absent). */
  readonly profileNote?: string;
  /** Workers' transfer logs; absent: `transfersNote` says why. */
  readonly transfers?: { readonly logs: TransferLogs } & BandwidthOptions;
  readonly transfersNote?: string;
  /** CPU (% of one core) and memory (MB) over time, ResourceProfiler's samples. */
  readonly system?: readonly ResourceData[];
  /** What the system samples measure (the plot's title). */
  readonly systemTitle?: string;
  /** MemorySampler series recorded in the block. */
  readonly memorySeries?: readonly MemorySeries[];
  readonly memoryNote?: string;
  /** The FPM view's data (fine performance metrics with spans), when recorded. */
  readonly fineMetrics?: FpmData;
  /** The workers' recent log lines; absent: `workerLogsNote` says why. */
  readonly workerLogs?: readonly ReportWorkerLog[];
  readonly workerLogsNote?: string;
}

/** Dask's words for a Worker Logs tab with nothing in it. */
export const NO_LOGS = "No logs to report";

const WIDTH = 1000;

export function buildReport(inputs: ReportInputs): ReportData {
  const table = inputs.taskStream;
  const rows = streamRows(table).labels;
  const summary: ReportSummary = {
    started: inputs.started,
    duration: inputs.stopped - inputs.started,
    tasks: table.taskCount,
    phases: phaseTimes(table),
    scheduler: inputs.scheduler,
    workers: inputs.workers ?? table.workers.list.length,
    threads: inputs.threads ?? rows.length,
    memory: inputs.memory ?? totalmem(),
    ...(inputs.workerList === undefined ? {} : { workerList: inputs.workerList }),
    versions: versions(),
    code: inputs.code,
  };
  const none = (note: string): { note: string } => ({ note });
  const scheduler = new Set(inputs.schedulerSources ?? []);
  const profilePart = (kind: "compute" | "administrative", title: string, sources: (source: string) => boolean): ReportPart<ProfileViewData> => {
    if (inputs.profile === undefined) return none(inputs.profileNote ?? "No profile was recorded.");
    const { windows, interval } = inputs.profile;
    return { data: ProfileFigure.of(windows.filter((w) => sources(w.source)), interval, { kind, title }).data };
  };
  return {
    title: inputs.title ?? "tsdask performance report",
    summary,
    taskStream:
      table.taskCount === 0
        ? none("No task ran in this block.")
        : { data: taskStreamSpec(table, { width: WIDTH, title: "Task stream", palette: PREFIX_PALETTE }) },
    computeProfile: profilePart("compute", "Worker profile (compute)", () => true),
    administrativeProfile: profilePart("administrative", "Worker profile (administrative)", (source) => !scheduler.has(source)),
    ...(scheduler.size === 0 ? {} : { schedulerProfile: profilePart("administrative", "Scheduler profile (administrative)", (source) => scheduler.has(source)) }),
    bandwidth: bandwidthPart(inputs),
    system:
      inputs.system === undefined || inputs.system.length === 0
        ? none("No system samples were recorded.")
        : { data: systemSpec(inputs.system, inputs.started, inputs.stopped, inputs.systemTitle ?? "CPU and memory of this process and its workers") },
    ...(inputs.fineMetrics === undefined ? {} : { fineMetrics: { data: inputs.fineMetrics } }),
    memory:
      inputs.memorySeries === undefined || inputs.memorySeries.length === 0
        ? none(inputs.memoryNote ?? "No MemorySampler sampled inside this block.")
        : {
            data: memorySpec(inputs.memorySeries, { align: false, width: WIDTH, height: 320, title: "Memory" }),
            ...(inputs.memoryNote === undefined ? {} : { note: inputs.memoryNote }),
          },
    workerLogs:
      inputs.workerLogs === undefined || inputs.workerLogs.every((worker) => worker.lines.length === 0)
        ? none(inputs.workerLogsNote ?? NO_LOGS)
        : { data: inputs.workerLogs },
  };
}

function phaseTimes(table: TaskStreamTable): ReportSummary["phases"] {
  const seconds = new Map<string, number>();
  for (let phase = 0; phase < table.phaseCount; phase++) {
    const action = ACTIONS[table.phaseAction[phase]];
    seconds.set(action, (seconds.get(action) ?? 0) + Math.max(0, table.phaseStop[phase] - table.phaseStart[phase]));
  }
  return [...seconds].map(([action, s]) => ({ action, seconds: s })).sort((a, b) => b.seconds - a.seconds);
}

function bandwidthPart(inputs: ReportInputs): ReportData["bandwidth"] {
  if (inputs.transfers === undefined) return { note: inputs.transfersNote ?? "No transfer logs were recorded." };
  const summary = bandwidthSummary(inputs.transfers.logs, inputs.transfers);
  if (summary.transfers === 0) return { note: "No data moved between workers in this block." };
  return { data: { types: bandwidthTypesSpec(summary, { width: WIDTH - 200 }), workers: bandwidthWorkersSpec(summary, { width: WIDTH - 200 }) } };
}

function systemSpec(samples: readonly ResourceData[], started: number, stopped: number, title: string): VegaLiteSpecData {
  return buildSpec([{ kind: "resources", results: samples, startTime: started, endTime: Math.max(stopped, samples.at(-1)?.time ?? stopped) }], {
    width: WIDTH,
    height: 300,
    title,
    palette: "tableau20",
  });
}

let ownVersion: string | undefined;

/** tsdask's version, from the package.json above this file (dist/ or the tests' build/). */
function tsdaskVersion(): string {
  if (ownVersion !== undefined) return ownVersion;
  for (let dir = __dirname; dirname(dir) !== dir; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "tsdask") return (ownVersion = pkg.version ?? "unknown");
    } catch {
      // no package.json here: look further up
    }
  }
  return (ownVersion = "unknown");
}

function versions(): ReportSummary["versions"] {
  return [
    { name: "tsdask", version: tsdaskVersion() },
    { name: "Node.js", version: process.versions.node },
    { name: "V8", version: process.versions.v8 },
    { name: "Platform", version: `${process.platform} ${process.arch}` },
  ];
}

/** The page script; the handles stay on window for people (and tests) poking at the report. */
const REPORT_SCRIPT = `
window.__tsdaskReport = tsdaskViews.mountReport(document.getElementById("tsdask-report"), JSON.parse(document.getElementById("tsdask-report-data").textContent));
`;

/** The report as one offline HTML page (no request, opens from file://). */
export function reportPage(data: ReportData): string {
  return standalonePage({
    title: data.title,
    body: `<noscript>${escapeHTML(data.title)}: this report needs JavaScript.</noscript><div id="tsdask-report"></div>`,
    data: { "tsdask-report-data": data },
    script: REPORT_SCRIPT,
  });
}
