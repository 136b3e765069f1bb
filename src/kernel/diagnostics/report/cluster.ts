// What a performance report records of a cluster while its block runs, and gathers when it ends:
// every task-stream record (watched as they arrive, so however many tasks ran, none is dropped),
// the workers' compute and administrative profiles, their transfer logs, the cluster's CPU and
// memory from heartbeats, the fine performance metrics the workers digested in the block, and
// each worker's recent log lines.

import type { FpmData } from "../../../protocol/fpm";
import type { MetricRecord, SystemSample } from "../../../protocol/records";
import type { ReportWorker } from "../../../protocol/report";
import { nameTransferLogs } from "../bandwidth";
import type { ClusterDiagnosticsSource } from "../cluster-source";
import type { MemorySeries } from "../memory";
import type { TaskStreamTable } from "../taskstream";
import type { ResourceData } from "../types";
import type { ReportInputs } from "./build";

/** The last log lines of each worker a report shows (a worker keeps 10 000: a report of several workers stays small). */
const REPORT_LOG_LINES = 1000;
/** How long the report waits for every worker's heartbeat after the block (its last metrics and memory). */
const LAST_HEARTBEAT_MS = 3000;

export type ClusterReportInputs = Pick<
  ReportInputs,
  "scheduler" | "workers" | "threads" | "memory" | "workerList" | "profile" | "profileNote" | "transfers" | "transfersNote" | "system" | "systemTitle" | "fineMetrics" | "workerLogs" | "workerLogsNote"
> & { readonly heartbeatMemory: MemorySeries[] };

export class ClusterRecording {
  private readonly stopWatching: () => void;
  private readonly metricsBefore: MetricRecord[];

  /** Starts recording: from now on every record the cluster's task stream gets goes to `table()`. */
  constructor(
    private readonly cluster: ClusterDiagnosticsSource,
    table: () => TaskStreamTable,
  ) {
    this.metricsBefore = cluster.metrics();
    this.stopWatching = cluster.watchTaskStream((record) => table().addRecord(record));
  }

  /** Stops recording and gathers the rest for the block [started, stopped] (scheduler clock). */
  async finish(started: number, stopped: number, table: TaskStreamTable): Promise<ClusterReportInputs> {
    this.stopWatching();
    const { cluster } = this;
    const range = { start: started, stop: stopped };
    // A cluster that closed (or lost workers) in the block still gets its report, saying what is missing.
    const [profile, logs, workerLogs] = await Promise.all([
      settled(cluster.profile(range)),
      settled(cluster.transferLogs("incoming", range)),
      settled(cluster.workerLogs()),
      cluster.reportedSince(stopped, LAST_HEARTBEAT_MS),
    ]);
    const workers = cluster.workers();
    table.nameWorkers(workers);
    // The heartbeat just before the block too: it says where the block started from.
    const system = cluster.system({ start: started - 1, stop: stopped + LAST_HEARTBEAT_MS / 1000 });
    const workerList: ReportWorker[] = workers.map((w) => ({ name: w.name, address: w.address, threads: w.nthreads, memoryLimit: w.memoryLimit, clockOffset: w.clockOffset }));
    const metrics = metricsSince(this.metricsBefore, cluster.metrics());
    const fineMetrics: FpmData = { metrics, spans: [], time: stopped, source: { description: cluster.description, transfers: true } };
    const memoryLimits = workers.reduce((sum, w) => sum + w.memoryLimit, 0);
    return {
      scheduler: cluster.description,
      workers: workers.length,
      threads: workers.reduce((sum, w) => sum + w.nthreads, 0),
      ...(memoryLimits > 0 ? { memory: memoryLimits } : {}),
      workerList,
      ...(profile instanceof Error
        ? { profileNote: `The workers' profiles could not be read: ${profile.message}` }
        : profile.windows.length === 0
          ? { profile, profileNote: "The workers took no samples in this block (a cluster started with profile: false does not profile)." }
          : { profile }),
      ...(logs instanceof Error
        ? { transfersNote: `The workers' transfer logs could not be read: ${logs.message}` }
        : { transfers: { logs: nameTransferLogs(logs, workers), direction: "incoming" as const } }),
      ...(workerLogs instanceof Error
        ? { workerLogsNote: `The workers' logs could not be read: ${workerLogs.message}` }
        : { workerLogs: workers.map((w) => ({ name: w.name, address: w.address, lines: (workerLogs[w.address] ?? []).slice(-REPORT_LOG_LINES) })) }),
      system: system.map(toResourceData),
      systemTitle: `CPU and memory of the cluster's ${workers.length} worker${workers.length === 1 ? "" : "s"} (summed, from heartbeats)`,
      ...(metrics.length > 0 ? { fineMetrics } : {}),
      heartbeatMemory: system.length === 0 ? [] : [{ label: "cluster process memory", measure: "process", points: system.map((s) => [s.time, s.memory] as const) }],
    };
  }

}

/** The value, or the error it failed with. */
function settled<T>(promise: Promise<T>): Promise<T | Error> {
  return promise.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
}

/** The metrics digested between two readings of the cumulative ones (zeros left out). */
export function metricsSince(before: readonly MetricRecord[], after: readonly MetricRecord[]): MetricRecord[] {
  const id = (r: MetricRecord): string => `${r.context}\u0000${r.prefix ?? ""}\u0000${r.activity}\u0000${r.unit}`;
  const earlier = new Map(before.map((r) => [id(r), r.value]));
  const out: MetricRecord[] = [];
  for (const record of after) {
    const value = record.value - (earlier.get(id(record)) ?? 0);
    if (value !== 0) out.push({ ...record, value });
  }
  return out;
}

function toResourceData(sample: SystemSample): ResourceData {
  return { time: sample.time, cpu: sample.cpu, mem: sample.memory / 1e6 };
}
