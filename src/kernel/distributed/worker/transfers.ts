// What a worker remembers of the data it moved: the incoming and outgoing transfer logs (Dask's
// `transfer_incoming_log` / `transfer_outgoing_log`), byte and count totals, and its bandwidth
// estimates (overall, per peer, per type) for heartbeats.

import type { TransferLogEntry } from "../../../protocol/records";
import { keyFromId, keyStr } from "../../graph/keys";
import type { WorkerAddress, WorkerMetrics } from "../messages";

/** Entries each log keeps (Dask's `admin.low-level-log-length`). */
export const TRANSFER_LOG_LENGTH = 1000;
/** Dask's starting estimate (`distributed.scheduler.bandwidth`, 100 MB/s). */
const INITIAL_BANDWIDTH = 100e6;
/** Smaller transfers say more about latency than bandwidth; Dask leaves them out of the estimates. */
const BANDWIDTH_MIN_BYTES = 1_000_000;

export interface TransferRecord {
  /** Worker-clock bounds already converted to the scheduler's clock. */
  readonly start: number;
  readonly stop: number;
  readonly who: string;
  /** Key repr → bytes (nbytes estimate of the value). */
  readonly keys: Readonly<Record<string, number>>;
  /** Bytes on the wire. */
  readonly wireBytes: number;
  readonly types: readonly string[];
}

/**
 * A transfer log entry's `keys` from key ids and their bytes: each key as Dask's log holds it,
 * the key itself — Python's `str(key)` here (`x`, `('x', 0)`), as the task stream names it — so
 * `keys[future.key]` finds a string key. A dictionary object: an object literal with a computed
 * key, or Object.fromEntries, would make V8 a new hidden class for every key ever logged (one per
 * task on a Redis worker, each costing microseconds to make).
 */
export function keySizes(entries: Iterable<readonly [keyId: string, bytes: number]>): Record<string, number> {
  const sizes = Object.create(null) as Record<string, number>;
  for (const [id, bytes] of entries) sizes[keyStr(keyFromId(id))] = bytes;
  return sizes;
}

export class TransferLog {
  private readonly items: TransferLogEntry[] = [];

  add(record: TransferRecord): TransferLogEntry {
    let total = 0;
    for (const bytes of Object.values(record.keys)) total += bytes;
    const duration = Math.max(0.001, record.stop - record.start);
    const entry: TransferLogEntry = {
      start: record.start,
      stop: record.stop,
      middle: (record.start + record.stop) / 2,
      duration,
      who: record.who,
      keys: record.keys,
      total,
      compressed: record.wireBytes,
      bandwidth: total / duration,
      types: record.types,
    };
    this.items.push(entry);
    if (this.items.length > TRANSFER_LOG_LENGTH) this.items.shift();
    return entry;
  }

  entries(): TransferLogEntry[] {
    return [...this.items];
  }
}

type Sums = Map<string, { sum: number; count: number }>;

function addTo(sums: Sums, name: string, value: number): void {
  const current = sums.get(name);
  if (current === undefined) sums.set(name, { sum: value, count: 1 });
  else {
    current.sum += value;
    current.count++;
  }
}

function means(sums: Sums): Record<string, number> {
  const result: Record<string, number> = {};
  for (const [name, { sum, count }] of sums) result[name] = sum / count;
  return result;
}

/** Both logs, the totals and the bandwidth estimates. */
export class TransferStats {
  readonly incoming = new TransferLog();
  readonly outgoing = new TransferLog();
  /** Bytes on the wire and batches since the worker started. */
  incomingBytes = 0;
  incomingCount = 0;
  outgoingBytes = 0;
  outgoingCount = 0;
  /** The same at the previous heartbeat. */
  private reported = { incomingBytes: 0, incomingCount: 0, outgoingBytes: 0, outgoingCount: 0 };
  /** Bytes per second, a moving average over incoming transfers of more than 1 MB. */
  bandwidth = INITIAL_BANDWIDTH;
  private byWorker: Sums = new Map();
  private byType: Sums = new Map();

  received(record: TransferRecord): TransferLogEntry {
    const entry = this.incoming.add(record);
    this.incomingBytes += record.wireBytes;
    this.incomingCount++;
    if (entry.total > BANDWIDTH_MIN_BYTES) {
      this.bandwidth = 0.95 * this.bandwidth + 0.05 * entry.bandwidth;
      addTo(this.byWorker, record.who, entry.bandwidth);
      const types = new Set(record.types);
      if (types.size === 1) addTo(this.byType, [...types][0], entry.bandwidth);
    }
    return entry;
  }

  sent(record: TransferRecord): TransferLogEntry {
    this.outgoingBytes += record.wireBytes;
    this.outgoingCount++;
    return this.outgoing.add(record);
  }

  /** For a heartbeat: what moved since the previous one, and the estimates (per peer and per type: since the previous one too). */
  takeHeartbeat(): Pick<WorkerMetrics, "transfer" | "bandwidth"> {
    const workers: Record<WorkerAddress, number> = means(this.byWorker);
    const types = means(this.byType);
    this.byWorker = new Map();
    this.byType = new Map();
    const { incomingBytes, incomingCount, outgoingBytes, outgoingCount } = this;
    const previous = this.reported;
    this.reported = { incomingBytes, incomingCount, outgoingBytes, outgoingCount };
    return {
      transfer: {
        incomingBytes: incomingBytes - previous.incomingBytes,
        outgoingBytes: outgoingBytes - previous.outgoingBytes,
        incomingCount: incomingCount - previous.incomingCount,
        outgoingCount: outgoingCount - previous.outgoingCount,
      },
      bandwidth: { total: this.bandwidth, workers, types },
    };
  }
}
