// The object `client.run((worker) => …)` hands its function on each worker: a read-only, live
// view of the worker under Dask's names (Worker.address, .data, .transfer_incoming_log…) in
// TypeScript idiom.

import type { Key } from "../../graph/keys";
import { keyFromId, keyId } from "../../graph/keys";
import type { MetricRecord, TransferLogEntry, WorkerLogLine, WorkerStatus } from "../../../protocol/records";
import type { DigestKey } from "./digests";

export interface WorkerDataView {
  /** Keys of the results held, in memory or spilled. */
  readonly keys: readonly Key[];
  readonly size: number;
  /** Keys held in memory (least recently used first) and on disk. */
  readonly inMemory: readonly Key[];
  readonly onDisk: readonly Key[];
  has(key: Key): boolean;
  /** The value (read back from disk if it was spilled); throws if the worker does not hold it. */
  get(key: Key): unknown;
  /** The size estimate the worker keeps for it (tsdask's `nbytes`). */
  nbytes(key: Key): number | undefined;
}

export interface WorkerMemoryView {
  /** Resident set size of the worker process. */
  readonly process: number;
  /** Bytes of results in memory. */
  readonly managed: number;
  /** Bytes of results on disk (their in-memory size), and of their spill files. */
  readonly spilled: number;
  readonly spilledFileBytes: number;
}

/** What a `client.run` function sees of a worker. Every property is read when accessed. */
export interface WorkerView {
  /** Where peers reach it: `unix://<socket path>`. */
  readonly address: string;
  readonly name: string;
  readonly pid: number;
  readonly nthreads: number;
  readonly memoryLimit: number;
  /** The worker's own folder (spill files); removed when it closes. */
  readonly localDirectory: string;
  readonly status: WorkerStatus;
  readonly data: WorkerDataView;
  readonly memory: WorkerMemoryView;
  /** Task counts by state on the worker (waiting, ready, executing, fetch, flight, memory…). */
  readonly tasks: Readonly<Record<string, number>>;
  /** Tasks this worker ran to an outcome since it started (Dask's `WorkerState.executed_count`). */
  readonly executedCount: number;
  /** One entry per batch of keys fetched from a peer (Dask's `transfer_incoming_log`), scheduler clock, last 1000. */
  readonly incomingTransferLog: readonly TransferLogEntry[];
  /** One entry per batch of keys sent to a peer (Dask's `transfer_outgoing_log`). */
  readonly outgoingTransferLog: readonly TransferLogEntry[];
  /** Bytes per second, the worker's running estimate over transfers of more than 1 MB. */
  readonly bandwidth: number;
  /** Fine performance metrics since the worker started (Dask's `digests_total`), as records. */
  readonly digestsTotal: readonly MetricRecord[];
  /** The same as Dask's (tuple key, value) pairs: `[["execute", spanId, "inc", "thread-cpu", "seconds"], 0.012]`. */
  readonly digestsTotalTuples: readonly (readonly [DigestKey, number])[];
  /** Estimated worker clock − scheduler clock, seconds (what the worker takes off every time it reports). */
  readonly clockOffset: number;
  /** Seconds added to this worker's clock on purpose (WorkerStartConfig.clockOffset or TSDASK_CLOCK_OFFSET). */
  readonly simulatedClockOffset: number;
  /** Its recent log lines, oldest first (Dask's `get_logs`), the last 10 000. */
  readonly logs: readonly WorkerLogLine[];
}

/** The worker's parts the view reads. */
export interface ViewSource {
  readonly address: string;
  readonly name: string;
  readonly nthreads: number;
  readonly memoryLimit: number;
  readonly localDirectory: string;
  status(): WorkerStatus;
  layout(): { memory: string[]; disk: string[] };
  has(key: string): boolean;
  get(key: string): unknown;
  nbytes(key: string): number | undefined;
  memory(): WorkerMemoryView;
  tasks(): Record<string, number>;
  executedCount(): number;
  incoming(): TransferLogEntry[];
  outgoing(): TransferLogEntry[];
  bandwidth(): number;
  digests(): MetricRecord[];
  digestTuples(): [DigestKey, number][];
  clockOffset(): number;
  simulatedClockOffset: number;
  logs(): WorkerLogLine[];
}

export function workerView(source: ViewSource): WorkerView {
  const data: WorkerDataView = {
    get keys() {
      const { memory, disk } = source.layout();
      return [...memory, ...disk].map(keyFromId);
    },
    get size() {
      const { memory, disk } = source.layout();
      return memory.length + disk.length;
    },
    get inMemory() {
      return source.layout().memory.map(keyFromId);
    },
    get onDisk() {
      return source.layout().disk.map(keyFromId);
    },
    has: (key) => source.has(keyId(key)),
    get: (key) => {
      if (!source.has(keyId(key))) throw new Error(`Worker ${source.address} holds no data for key ${JSON.stringify(key)}`);
      return source.get(keyId(key));
    },
    nbytes: (key) => source.nbytes(keyId(key)),
  };
  return Object.freeze({
    address: source.address,
    name: source.name,
    pid: process.pid,
    nthreads: source.nthreads,
    memoryLimit: source.memoryLimit,
    localDirectory: source.localDirectory,
    get status() {
      return source.status();
    },
    data: Object.freeze(data),
    get memory() {
      return source.memory();
    },
    get tasks() {
      return source.tasks();
    },
    get executedCount() {
      return source.executedCount();
    },
    get incomingTransferLog() {
      return source.incoming();
    },
    get outgoingTransferLog() {
      return source.outgoing();
    },
    get bandwidth() {
      return source.bandwidth();
    },
    get digestsTotal() {
      return source.digests();
    },
    get digestsTotalTuples() {
      return source.digestTuples();
    },
    get clockOffset() {
      return source.clockOffset();
    },
    simulatedClockOffset: source.simulatedClockOffset,
    get logs() {
      return source.logs();
    },
  });
}
