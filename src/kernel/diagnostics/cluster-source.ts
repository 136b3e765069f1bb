// The cluster the diagnostics read while a Client is open (Dask's default client): getTaskStream,
// MemorySampler and performanceReport take their cluster data from the newest open client's
// source. The Client registers it; the diagnostics never import the cluster code (it imports them),
// so any cluster a Client connects to — LocalCluster, Redis — is diagnosed the same way.

import type { ProfileWindow } from "../../protocol/profile";
import type { MetricRecord, SystemSample, TaskStreamRecord, WorkerLogLine, WorkerRecord } from "../../protocol/records";
import type { TransferLogs } from "./bandwidth";
import type { MemorySource } from "./memory/source";

/** A time range on the scheduler's clock (epoch seconds); an end left out is open. */
export interface TimeRange {
  readonly start?: number;
  readonly stop?: number;
}

export interface ClusterDiagnosticsSource {
  /** For reports and messages: "Client(LocalCluster 'local')". */
  readonly description: string;
  /** The cluster's memory from the workers' heartbeats: MemorySampler's default source. */
  readonly memory: MemorySource;
  /** The task-stream ring's append count (Dask's `index`): pass it to taskStreamSince. */
  taskStreamIndex(): number;
  /** The records appended since `index` that the ring still holds, and how many it dropped meanwhile. */
  taskStreamSince(index: number): { records: TaskStreamRecord[]; dropped: number };
  /** Calls `watcher` with every task-stream record from now on, however many; returns the function that stops it. */
  watchTaskStream(watcher: (record: TaskStreamRecord) => void): () => void;
  /** The workers' statistical profile windows overlapping the range (one per worker and cycle). */
  profile(range: TimeRange, workers?: readonly string[]): Promise<{ readonly windows: ProfileWindow[]; readonly interval: number }>;
  /** Every worker's transfer log (Dask's transfer_incoming_log / transfer_outgoing_log), entries overlapping the range. */
  transferLogs(direction: "incoming" | "outgoing", range?: TimeRange): Promise<TransferLogs>;
  /** Every worker's recent log lines, oldest first, by worker address (Dask's `get_worker_logs`). */
  workerLogs(): Promise<Record<string, WorkerLogLine[]>>;
  /** The cluster's CPU and memory over the range, one sample per heartbeat. */
  system(range: TimeRange): SystemSample[];
  /** Dask's cumulative_worker_metrics: every fine performance metric since the cluster started, no spans. */
  metrics(): MetricRecord[];
  workers(): WorkerRecord[];
  /** Resolves once every worker has heartbeated after `time` (their last metrics are in), or after `timeoutMs`. */
  reportedSince(time: number, timeoutMs: number): Promise<void>;
}

const open: ClusterDiagnosticsSource[] = [];

/** Makes `source` the one diagnostics read, until the returned function is called (the client closed). */
export function registerClusterSource(source: ClusterDiagnosticsSource): () => void {
  open.push(source);
  return () => {
    const at = open.indexOf(source);
    if (at >= 0) open.splice(at, 1);
  };
}

/** The newest open client's cluster, or undefined when no Client is open. */
export function clusterSource(): ClusterDiagnosticsSource | undefined {
  return open[open.length - 1];
}
