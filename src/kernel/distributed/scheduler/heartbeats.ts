// What the scheduler learns from workers' heartbeats, kept as Dask's scheduler keeps it: the
// cluster's memory measures (MemoryState), running bandwidth estimates, and the cumulative
// fine performance metrics of every worker (span ids squashed). Pure: times come in as arguments.

import type { BandwidthSummary, ClusterMemory, MetricRecord, SystemSample } from "../../../protocol/records";
import type { WorkerAddress, WorkerMetrics } from "../messages";

/** Dask's `distributed.worker.memory.recent-to-old-time`. */
export const RECENT_TO_OLD_SECONDS = 30;
/** Dask's `distributed.scheduler.bandwidth`: the estimate before any transfer was measured. */
export const DEFAULT_BANDWIDTH = 100_000_000;

/**
 * One worker's memory, as its heartbeats report it, with its recent unmanaged memory. Managed
 * memory is kept current between heartbeats as Dask's scheduler keeps it (`WorkerState.memory`
 * reads `ws.nbytes`, updated the moment a result lands or is released): the bytes of the results
 * the scheduler counts now, plus what the latest heartbeat held beyond the results the worker had
 * reported then. At rest that is the heartbeat's figure, so what only the worker knows (a Redis
 * worker's inputs held by a running task) still counts; and a heartbeat written before a release
 * and read after it does not bring the released bytes back (it did for a heartbeat's interval).
 */
export class WorkerMemory {
  process = 0;
  spilled = 0;
  /** Managed bytes the latest heartbeat reported, and of those the results the worker had reported to the scheduler. */
  private reportedManaged = 0;
  private reportedResults = 0;
  /** (time, unmanaged bytes) of the heartbeats of the last RECENT_TO_OLD_SECONDS, oldest first. */
  private readonly history: { time: number; unmanaged: number }[] = [];

  /** `heldBytes`: the bytes of the results the scheduler knows the worker holds (Dask's `ws.nbytes`). */
  constructor(private readonly heldBytes: () => number) {}

  /** Never more than the process holds (Dask's MemoryState: the parts add up to the whole). */
  get managed(): number {
    return Math.min(this.process, Math.max(0, this.heldBytes() + this.reportedManaged - this.reportedResults));
  }

  update(metrics: WorkerMetrics, time: number): void {
    this.process = metrics.memory;
    this.reportedManaged = metrics.managedBytes;
    this.reportedResults = metrics.reportedResultBytes;
    this.spilled = metrics.spilledBytes.disk;
    this.history.push({ time, unmanaged: this.unmanaged });
    while (this.history.length > 1 && this.history[0].time < time - RECENT_TO_OLD_SECONDS) this.history.shift();
  }

  get unmanaged(): number {
    return Math.max(0, this.process - this.managed);
  }

  /** The least unmanaged memory seen over the last 30 s: what is likely to stay. */
  get unmanagedOld(): number {
    let least = this.unmanaged;
    for (const entry of this.history) if (entry.unmanaged < least) least = entry.unmanaged;
    return least;
  }
}

/** Dask's MemoryState over a set of workers. */
export function clusterMemory(workers: Iterable<WorkerMemory>): ClusterMemory {
  let process = 0;
  let managed = 0;
  let spilled = 0;
  let unmanagedOld = 0;
  for (const memory of workers) {
    process += memory.process;
    managed += memory.managed;
    spilled += memory.spilled;
    unmanagedOld += memory.unmanagedOld;
  }
  const unmanaged = Math.max(0, process - managed);
  unmanagedOld = Math.min(unmanagedOld, unmanaged);
  return {
    process,
    managed,
    unmanaged,
    unmanagedOld,
    unmanagedRecent: unmanaged - unmanagedOld,
    spilled,
    managedTotal: managed + spilled,
    optimistic: managed + unmanagedOld,
  };
}

/**
 * The scheduler's bandwidth estimates (bytes/s), as Dask's `heartbeat_worker` updates them: each
 * report moves the cluster-wide figure by 1/nworkers of the way; pairs and types likewise.
 */
export class BandwidthEstimate {
  total = DEFAULT_BANDWIDTH;
  /** "source\u0000destination" → bytes/s. */
  private readonly pairs = new Map<string, number>();
  private readonly types = new Map<string, number>();

  /** `worker` reported `bandwidth` (its incoming transfers since its previous heartbeat). */
  update(worker: WorkerAddress, bandwidth: WorkerMetrics["bandwidth"], nworkers: number): void {
    const keep = 1 - 1 / Math.max(1, nworkers);
    if (bandwidth.total > 0) this.total = this.total * keep + bandwidth.total * (1 - keep);
    for (const [source, value] of Object.entries(bandwidth.workers)) {
      blend(this.pairs, `${source}\u0000${worker}`, value, keep);
    }
    for (const [type, value] of Object.entries(bandwidth.types)) blend(this.types, type, value, keep);
  }

  /** Forgets the pairs a departed worker was part of. */
  removeWorker(worker: WorkerAddress): void {
    for (const pair of [...this.pairs.keys()]) {
      const [source, destination] = pair.split("\u0000");
      if (source === worker || destination === worker) this.pairs.delete(pair);
    }
  }

  summary(): BandwidthSummary {
    return {
      total: this.total,
      byType: [...this.types].map(([type, bandwidth]) => ({ type, bandwidth })),
      byWorkers: [...this.pairs].map(([pair, bandwidth]) => {
        const [source, destination] = pair.split("\u0000");
        return { source, destination, bandwidth };
      }),
    };
  }
}

function blend(estimates: Map<string, number>, key: string, value: number, keep: number): void {
  if (!(value > 0)) return;
  const old = estimates.get(key);
  estimates.set(key, old === undefined ? value : old * keep + value * (1 - keep));
}

/**
 * Dask's `cumulative_worker_metrics`: every digest workers sent, summed since the scheduler
 * started, keyed without the span (execute: context, prefix, activity, unit; else context,
 * activity, unit). Integers stay integers as long as every addend is one.
 */
export class CumulativeMetrics {
  private readonly totals = new Map<string, MetricRecord>();

  add(digests: readonly MetricRecord[]): void {
    for (const digest of digests) {
      const prefix = digest.context === "execute" ? (digest.prefix ?? "") : undefined;
      const id = `${digest.context}\u0000${prefix ?? ""}\u0000${digest.activity}\u0000${digest.unit}`;
      const known = this.totals.get(id);
      const value = (known?.value ?? 0) + digest.value;
      this.totals.set(
        id,
        prefix === undefined
          ? { context: digest.context, activity: digest.activity, unit: digest.unit, value }
          : { context: digest.context, prefix, activity: digest.activity, unit: digest.unit, value },
      );
    }
  }

  records(): MetricRecord[] {
    return [...this.totals.values()];
  }

  clear(): void {
    this.totals.clear();
  }
}

/** Heartbeats kept for the system history: an hour of two workers at 0.5 s (Dask keeps 7200 samples). */
export const SYSTEM_HISTORY_LENGTH = 14_400;

/**
 * CPU and memory of the cluster over time, from the workers' heartbeats: one sample per
 * heartbeat, each the sum over workers of their latest reports. Bounded; oldest dropped first.
 */
export class SystemHistory {
  private readonly samples: SystemSample[] = [];
  private readonly latest = new Map<WorkerAddress, { cpu: number; memory: number }>();
  private first = 0;

  constructor(private readonly capacity = SYSTEM_HISTORY_LENGTH) {}

  add(time: number, worker: WorkerAddress, cpu: number, memory: number): void {
    this.latest.set(worker, { cpu, memory });
    let cpuSum = 0;
    let memorySum = 0;
    for (const report of this.latest.values()) {
      cpuSum += report.cpu;
      memorySum += report.memory;
    }
    this.samples.push({ time, cpu: cpuSum, memory: memorySum, workers: this.latest.size });
    // Drop in chunks, so a full history costs O(1) per heartbeat on average.
    if (this.samples.length - this.first > this.capacity) this.first++;
    if (this.first > this.capacity) {
      this.samples.splice(0, this.first);
      this.first = 0;
    }
  }

  removeWorker(worker: WorkerAddress): void {
    this.latest.delete(worker);
  }

  /** The samples taken in [start, stop], oldest first. */
  between(start = -Infinity, stop = Infinity): SystemSample[] {
    const out: SystemSample[] = [];
    for (let i = this.first; i < this.samples.length; i++) {
      const sample = this.samples[i];
      if (sample.time >= start && sample.time <= stop) out.push(sample);
    }
    return out;
  }
}
