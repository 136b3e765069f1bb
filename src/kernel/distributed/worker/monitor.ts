// A worker's memory monitor (Dask's WorkerMemoryManager): every tick, and at once when a big value
// lands, it compares the process's memory with the thresholds of ./memory, spills the least
// recently used values of the data store (./store) and pauses or resumes the worker. Both worker
// kinds run one: a LocalCluster worker over its results, a Redis worker over the big results it
// keeps for its peers.

import type { WorkerStatus } from "../../../protocol/records";
import { formatBytes } from "../../../protocol/format";
import type { Digests } from "./digests";
import { memoryLine } from "./logs";
import { collectGarbage } from "../../execution/buffers";
import { LANDING_CHECK_FRACTION, type MemoryThresholds, decideMemory } from "./memory";
import type { DataStore } from "./store";

/** A collection to find out whether garbage is what holds the process over a threshold, at most this often. */
const GC_PROBE_MS = 1000;

/** What the monitor needs of its worker. */
export interface MonitoredWorker {
  readonly store: DataStore;
  /** Bytes (0 or Infinity: no limit, nothing is monitored). */
  readonly memoryLimit: number;
  readonly thresholds: MemoryThresholds;
  /** Where the monitor's disk work is digested ("memory-monitor"). */
  readonly digests: Digests;
  /** The worker's status now; the monitor acts only on a running or paused worker. */
  status(): WorkerStatus;
  /** Pauses (no new tasks) or resumes the worker. */
  setStatus(status: "running" | "paused"): void;
  /** Keeps an INFO line in the worker's log. */
  note(line: string): void;
}

export class MemoryMonitor {
  private lastCollection = 0;

  constructor(private readonly worker: MonitoredWorker) {}

  private get limited(): boolean {
    const limit = this.worker.memoryLimit;
    return limit > 0 && Number.isFinite(limit);
  }

  private get watching(): boolean {
    const status = this.worker.status();
    return this.limited && (status === "running" || status === "paused");
  }

  /**
   * `tell` (the worker takes note) that `nbytes` of values were just stored. Big ones (see
   * LANDING_CHECK_FRACTION) have the monitor look at the process now rather than at its next
   * tick: past `pause`, the worker pauses before it can start another task; the spilling comes
   * after that, so the disk work overlaps the next task.
   */
  landed(nbytes: number, tell: () => void): void {
    const big = nbytes > 0 && nbytes >= LANDING_CHECK_FRACTION * this.worker.memoryLimit;
    if (big) this.pauseIfOver();
    tell();
    if (big) this.check();
  }

  /** Pauses the worker if its process memory is past `pause` (a later check resumes it). */
  pauseIfOver(): void {
    if (!this.watching || this.worker.status() !== "running") return;
    if (decideMemory(process.memoryUsage.rss(), this.worker.memoryLimit, this.worker.thresholds).paused) this.setStatus("paused");
  }

  /** One tick of Dask's memory monitor: spill on process memory, pause and resume. */
  check(): void {
    if (!this.watching) return;
    const { store, memoryLimit: limit, thresholds } = this.worker;
    const paused = this.worker.status() === "paused";
    let rss = process.memoryUsage.rss();
    let decision = decideMemory(rss, limit, thresholds);
    if ((decision.spillBytes > 0 || decision.paused) && performance.now() - this.lastCollection > GC_PROBE_MS) {
      // Garbage may be all that holds the process up there (a paused worker allocates nothing that would collect it).
      this.collect();
      rss = process.memoryUsage.rss();
      decision = decideMemory(rss, limit, thresholds);
    }
    if (decision.spillBytes > 0) {
      const meter = { add: (activity: string, value: number, unit: string) => this.worker.digests.add(["memory-monitor", activity, unit], value) };
      let spilled = 0;
      while (spilled < decision.spillBytes) {
        const bytes = store.spillOldest(meter);
        if (bytes === 0) break;
        spilled += bytes;
      }
      if (spilled > 0) {
        this.worker.note(memoryLine(`Spilled ${formatBytes(spilled)} to disk`, rss, limit));
        // Spilled values give their memory back at once, unless they had been lent out: the store
        // then asks for a collection.
        if (store.awaitsCollection) this.collect();
        decision = decideMemory(process.memoryUsage.rss(), limit, thresholds);
      }
    }
    if (decision.paused !== paused) this.setStatus(decision.paused ? "paused" : "running");
  }

  private setStatus(status: "running" | "paused"): void {
    this.worker.note(memoryLine(status === "paused" ? "Pausing worker" : "Resuming worker", process.memoryUsage.rss(), this.worker.memoryLimit));
    this.worker.setStatus(status);
  }

  private collect(): void {
    collectGarbage();
    this.worker.store.awaitsCollection = false;
    this.lastCollection = performance.now();
  }
}
