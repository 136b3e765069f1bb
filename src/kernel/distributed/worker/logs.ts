// A worker's recent log lines (Dask's per-node DequeHandler behind `get_logs`): a bounded ring the
// performance report's Worker Logs tab reads, beside the worker's stderr.

import { formatBytes } from "../../../protocol/format";
import type { WorkerLogLine } from "../../../protocol/records";
import type { PackedError } from "../../execution/wire";
import { keyFromId, keyStr } from "../../graph/keys";
import type { WorkerStartConfig } from "../messages";

/** Dask's `distributed.admin.log-length`: the lines a worker keeps. */
export const WORKER_LOG_LENGTH = 10_000;

export class WorkerLog {
  private readonly ring: WorkerLogLine[] = [];
  /** Where the next line goes once the ring is full (the oldest line's position). */
  private next = 0;

  constructor(readonly capacity: number = WORKER_LOG_LENGTH) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) throw new RangeError(`A worker log keeps a whole number ≥ 1 of lines, got ${capacity}`);
  }

  add(line: WorkerLogLine): void {
    if (this.ring.length < this.capacity) {
      this.ring.push(line);
      return;
    }
    this.ring[this.next] = line;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The lines held, oldest first; with `n`, the last n (Dask's `get_logs(n=…)`). */
  lines(n?: number): WorkerLogLine[] {
    const ordered = [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    return n === undefined ? ordered : ordered.slice(Math.max(0, ordered.length - n));
  }
}

/** What a worker logs as it starts (Dask's "Start worker at: …" block); a Redis worker has no folder. */
export function startLines(config: Pick<WorkerStartConfig, "name" | "nthreads" | "memoryLimit"> & { readonly localDirectory?: string }, address: string): string[] {
  return [
    `Start worker at: ${address}`,
    `Worker name: ${config.name}`,
    `Threads: ${config.nthreads}`,
    `Memory: ${config.memoryLimit > 0 && Number.isFinite(config.memoryLimit) ? formatBytes(config.memoryLimit) : "no limit"}`,
    ...(config.localDirectory === undefined ? [] : [`Local Directory: ${config.localDirectory}`]),
  ];
}

/** Dask's worker log line for a task that failed: its key (as `str(key)`) and its exception. */
export function computeFailedLine(keyIdOfTask: string, error: PackedError): string {
  // The class's name, as Dask's repr of the exception gives it (a subclass of Error may keep name "Error").
  const exception = error.kind === "error" ? `${error.className}: ${error.message}` : String(error.value);
  return `Compute Failed\nKey: ${keyStr(keyFromId(keyIdOfTask))}\nException: ${exception}`;
}

/** A memory event with the reading behind it: "Pausing worker: process memory 1.6 GiB of a 2 GiB limit". */
export function memoryLine(what: string, processBytes: number, limit: number): string {
  return `${what}: process memory ${formatBytes(processBytes)} of a ${formatBytes(limit)} limit`;
}
