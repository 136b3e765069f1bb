// The big results a Redis worker keeps instead of storing them in Redis (Redis records where
// they live, see ./store): one data store for every client it serves (LocalCluster's, ../worker/
// store), so they share the worker's memory limit, spill to its folder least recently used first
// and pause the worker past Dask's thresholds (../worker/monitor). Peers read them through the
// data listener (./data-listener); a client's free-keys, or the client leaving, drops them.

import { rmSync } from "node:fs";
import type { WorkerStatus } from "../../../protocol/records";
import type { HeldBytes } from "../worker/core";
import type { Digests } from "../worker/digests";
import { makeOwnedFolder, sweepStaleFolders } from "../worker/folders";
import { DEFAULT_THRESHOLDS, MONITOR_INTERVAL_MS, spillTarget } from "../worker/memory";
import { MemoryMonitor } from "../worker/monitor";
import type { HeldValues } from "../worker/peers";
import { DataStore, type StoreMeter } from "../worker/store";
import type { RedisStore } from "./store";

/**
 * Results above this many bytes stay with their worker by default: below it a value costs Redis
 * little and a round trip to Redis less than a connection to a peer.
 */
export const DEFAULT_HOLD_ABOVE = 64 * 1024;

/** A value a worker keeps: whose, which, the job that computed it and its size in memory. */
export interface KeptEntry {
  readonly clientId: string;
  readonly key: string;
  readonly job: number;
  readonly nbytes: number;
}

/** What the kept values need of their worker. */
export interface KeepingWorker {
  /** Bytes: the data store spills above Dask's target share of it, the worker pauses above its pause share. */
  readonly memoryLimit: number;
  readonly digests: Digests;
  status(): WorkerStatus;
  setStatus(status: "running" | "paused"): void;
  /** Keeps an INFO line in the worker's log. */
  note(line: string): void;
}

/** A client's key in the shared store: client ids hold no ":" (see ../redis/keys Namespace). */
function storeKey(clientId: string, key: string): string {
  return `${clientId}:${key}`;
}

/** A new folder of the worker's own, readable by this user only, for spill files (those of dead workers are swept first). */
export function workerFolder(): string {
  sweepStaleFolders("tsdask-worker-");
  return makeOwnedFolder("tsdask-worker-");
}

export class KeptValues {
  private readonly store: DataStore;
  /** The job that computed each kept value, by store key: the job publish-held writes it as (./store). */
  private readonly jobs = new Map<string, number>();
  private readonly monitor: MemoryMonitor;
  private readonly timer: NodeJS.Timeout;

  /** `directory`: the worker's own folder (see workerFolder). */
  constructor(
    readonly directory: string,
    worker: KeepingWorker,
  ) {
    this.store = new DataStore(this.directory, spillTarget(worker.memoryLimit, DEFAULT_THRESHOLDS));
    this.monitor = new MemoryMonitor({ ...worker, store: this.store, thresholds: DEFAULT_THRESHOLDS, note: (line) => worker.note(line) });
    this.timer = setInterval(() => this.monitor.check(), MONITOR_INTERVAL_MS);
    this.timer.unref();
  }

  /** What the data listener serves to `clientId`'s peers: that client's values only. */
  of(clientId: string): HeldValues {
    return {
      has: (key) => this.store.has(storeKey(clientId, key)),
      get: (key, meter?: StoreMeter) => this.store.get(storeKey(clientId, key), meter),
      nbytesOf: (key) => this.store.nbytesOf(storeKey(clientId, key)),
      typeOf: (key) => this.store.typeOf(storeKey(clientId, key)),
    };
  }

  /** Keeps job number `job`'s `value` of `clientId`'s `key` (a big one has the monitor look at memory at once). */
  keep(clientId: string, key: string, job: number, value: unknown, nbytes: number, type: string, meter: StoreMeter): void {
    const at = storeKey(clientId, key);
    this.monitor.landed(nbytes, () => {
      this.store.put(at, value, nbytes, type, meter);
      this.jobs.set(at, job);
    });
  }

  isSpilled(clientId: string, key: string): boolean {
    return this.store.isSpilled(storeKey(clientId, key));
  }

  /**
   * Writes the values of `keys` it keeps for `store`'s client into Redis, each as the job that
   * computed it (replacing its location, see ./store), and drops them; a key it does not have
   * loses its location (`holder` is this worker's name), so that a reader finds it missing
   * rather than waiting. Resolves with how many were published.
   */
  async publish(store: RedisStore, keys: readonly string[], holder: string): Promise<number> {
    const clientId = store.namespace.clientId;
    const published = await Promise.all(
      keys.map(async (key) => {
        const at = storeKey(clientId, key);
        const job = this.jobs.get(at);
        if (job === undefined || !this.store.has(at)) {
          await store.dropLocation(key, holder);
          return false;
        }
        if ((await store.publish(key, this.store.get(at), job, holder).result) !== "published") return false;
        this.drop(clientId, [key]);
        return true;
      }),
    );
    return published.filter(Boolean).length;
  }

  /** Every value it keeps, for every client: what a leaving worker hands over (./handoff). */
  entries(): KeptEntry[] {
    const entries: KeptEntry[] = [];
    for (const [at, job] of this.jobs) {
      const split = at.indexOf(":");
      if (this.store.has(at)) entries.push({ clientId: at.slice(0, split), key: at.slice(split + 1), job, nbytes: this.store.nbytesOf(at)! });
    }
    return entries;
  }

  drop(clientId: string, keys: readonly string[]): void {
    for (const key of keys) {
      const at = storeKey(clientId, key);
      this.store.delete(at);
      this.jobs.delete(at);
    }
  }

  /** Drops everything kept for `clientId` (it left). */
  dropClient(clientId: string): void {
    const prefix = storeKey(clientId, "");
    for (const at of this.store.keys()) {
      if (!at.startsWith(prefix)) continue;
      this.store.delete(at);
      this.jobs.delete(at);
    }
  }

  /** Keys in memory (least recently used first) and on disk, as `client.run` sees them: without the client id. */
  layout(): { memory: string[]; disk: string[] } {
    const { memory, disk } = this.store.layout();
    const bare = (at: string): string => at.slice(at.indexOf(":") + 1);
    return { memory: memory.map(bare), disk: disk.map(bare) };
  }

  /** A kept value by its bare key (the first client's that has it), for `client.run`. */
  find(key: string): { found: boolean; value?: unknown; nbytes?: number } {
    for (const at of this.store.keys()) {
      if (at.slice(at.indexOf(":") + 1) === key) return { found: true, value: this.store.get(at), nbytes: this.store.nbytesOf(at) };
    }
    return { found: false };
  }

  held(): HeldBytes {
    return { managed: this.store.managedBytes, spilled: this.store.spilledBytes, spilledFileBytes: this.store.spilledDiskBytes };
  }

  close(): void {
    clearInterval(this.timer);
    this.store.close();
    rmSync(this.directory, { recursive: true, force: true });
  }
}
