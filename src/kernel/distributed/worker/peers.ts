// Peer data: asking other workers for keys (one connection per peer, kept open) and answering
// their get-data requests from the data store. Values travel as frames (../comm/frames), so typed
// arrays and shared memory cross the socket as raw bytes. LocalCluster workers are at unix://
// socket files; Redis workers at tcp:// or tls:// addresses, which want credentials (../comm/handshake).

import { now as machineSeconds } from "../../clock";
import { type ConnectOptions, Connection } from "../comm/connection";
import { parseCommAddress } from "../comm/address";
import { encodeValue } from "../comm/frames";
import type { GatherMessage, GatherReplyMessage, GetDataReply, GetDataRequest, WorkerAddress } from "../messages";
import type { WorkerClock } from "./clock";
import type { Digests } from "./digests";
import type { DataStore, StoreMeter } from "./store";
import { type TransferStats, keySizes } from "./transfers";

export interface FetchResult {
  readonly values: Readonly<Record<string, unknown>>;
  readonly missing: readonly string[];
  /** Bytes of the reply on the wire. */
  readonly wireBytes: number;
  /** Machine clock, epoch seconds: before connecting or sending, and once the reply was decoded. */
  readonly start: number;
  readonly stop: number;
  /** Seconds spent decoding the reply's frames (part of start…stop). */
  readonly deserializeSeconds: number;
}

interface Waiter {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

/** A peer's answer to a request, as it arrived. */
export interface Reply {
  readonly value: unknown;
  /** Bytes of the reply on the wire. */
  readonly bytes: number;
  /** Seconds spent decoding its frames. */
  readonly decodeSeconds: number;
}

/**
 * Connections to workers' data listeners, one per worker, opened on first use and dropped when
 * they break. This side connects, so replies are read straight into memory of their own (see
 * ../comm/connection): peers fetching inputs and the scheduler gathering results both use it.
 */
export class PeerClient {
  /**
   * `options`: the credentials and TLS settings tcp:// and tls:// listeners want; `timeout`, when
   * given, bounds connecting and any stretch with no byte moving while a reply is awaited (a
   * frozen peer fails the request, naming it, rather than holding it forever).
   */
  constructor(private readonly options: ConnectOptions = {}) {}

  private readonly connections = new Map<WorkerAddress, Promise<Connection>>();
  private readonly waiters = new Map<Connection, Waiter[]>();
  private closed = false;

  /** Asks `worker` for `keys` on behalf of `who` (this worker's address). Rejects if the peer cannot be reached or goes away. */
  async getData(worker: WorkerAddress, keys: readonly string[], who: WorkerAddress): Promise<FetchResult> {
    const start = machineSeconds();
    const request: GetDataRequest = { op: "get-data", keys, who };
    const reply = await this.request(worker, request);
    if (!isDataReply(reply.value)) throw new Error(`Worker ${worker} answered get-data with something else (${describe(reply.value)})`);
    const { values, missing } = reply.value;
    return { values, missing, wireBytes: reply.bytes, start, stop: machineSeconds(), deserializeSeconds: reply.decodeSeconds };
  }

  /** Sends `message` to `worker`'s data listener; resolves with its reply (replies come in request order). */
  async request(worker: WorkerAddress, message: unknown): Promise<Reply> {
    const connection = await this.connect(worker);
    return new Promise<Reply>((resolve, reject) => {
      const queue = this.waiters.get(connection);
      if (queue === undefined || connection.closed) {
        reject(new Error(`The connection to worker ${worker} closed`));
        return;
      }
      queue.push({ resolve, reject });
      if (queue.length === 1 && this.options.timeout !== undefined) connection.setIdleTimeout(this.options.timeout);
      try {
        connection.send(message);
      } catch (error) {
        queue.pop();
        reject(error as Error);
      }
    });
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    this.closed = true;
    for (const connection of this.waiters.keys()) connection.destroy();
  }

  private connect(worker: WorkerAddress): Promise<Connection> {
    if (this.closed) return Promise.reject(new Error("The connections to workers are closed"));
    let connecting = this.connections.get(worker);
    if (connecting === undefined) {
      // A malformed address rejects as an unreachable worker does, naming it.
      connecting = Promise.resolve()
        .then(() => Connection.connectTo(parseCommAddress(worker), this.options))
        .then(
          (connection) => this.adopt(worker, connection),
          (error: Error) => {
            this.connections.delete(worker);
            throw new Error(`Cannot reach worker ${worker}: ${error.message}`, { cause: error });
          },
        );
      this.connections.set(worker, connecting);
    }
    return connecting;
  }

  private adopt(worker: WorkerAddress, connection: Connection): Connection {
    const queue: Waiter[] = [];
    this.waiters.set(connection, queue);
    // Peer connections never keep the worker alive: the scheduler's does.
    connection.setKeepsAlive(false);
    connection.on("message", (value, bytes, decodeSeconds) => {
      queue.shift()?.resolve({ value, bytes, decodeSeconds });
      // An idle connection in the pool waits for nothing: it may stay quiet.
      if (queue.length === 0) connection.setIdleTimeout(0);
    });
    connection.on("close", (error) => {
      this.waiters.delete(connection);
      if (this.connections.get(worker) !== undefined) this.connections.delete(worker);
      const reason = new Error(`The connection to worker ${worker} closed${error ? ` (${error.message})` : ""}`);
      for (const waiter of queue.splice(0)) waiter.reject(reason);
    });
    if (this.closed) connection.destroy();
    return connection;
  }
}

function isDataReply(value: unknown): value is GetDataReply {
  const reply = value as Partial<GetDataReply> | null;
  return (
    typeof reply === "object" && reply !== null && reply.op === "data" && typeof reply.values === "object" && reply.values !== null && Array.isArray(reply.missing)
  );
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 80) ?? String(value);
  } catch {
    return String(value);
  }
}

/** What serving get-data reads of the values a worker holds. */
export type HeldValues = Pick<DataStore, "has" | "get" | "nbytesOf" | "typeOf">;

/** What serving a peer needs of the worker. */
export interface DataServerContext {
  readonly store: HeldValues;
  readonly digests: Digests;
  readonly transfers: TransferStats;
  readonly clock: WorkerClock;
}

/**
 * Answers one get-data request on `connection`: the values held (read back from disk if
 * spilled), the rest as missing. Digests under "get-data" as Dask's get_data (memory-read or
 * disk-read, serialize, network seconds) and an outgoing transfer log entry once the reply has left.
 */
export function serveGetData(request: GetDataRequest, connection: Connection, context: DataServerContext): void {
  const { store, digests, transfers, clock } = context;
  const meter: StoreMeter = { add: (activity, value, unit) => digests.add(["get-data", activity, unit], value) };
  const start = clock.now();
  const values: Record<string, unknown> = {};
  const sizes: [keyId: string, bytes: number][] = [];
  const types = new Set<string>();
  const missing: string[] = [];
  for (const key of request.keys) {
    if (!store.has(key)) {
      missing.push(key);
      continue;
    }
    values[key] = store.get(key, meter);
    sizes.push([key, store.nbytesOf(key)!]);
    types.add(store.typeOf(key)!);
  }
  const reply: GetDataReply = { op: "data", values, missing };
  sendMetered(connection, () => encodeValue(reply), meter, (wireBytes) => {
    if (sizes.length === 0) return;
    transfers.sent({ start: clock.toScheduler(start), stop: clock.schedulerNow(), who: request.who, keys: keySizes(sizes), wireBytes, types: [...types] });
  });
}

/**
 * Answers a client's gather on a data connection, metered (`meter`) as Dask meters a client's
 * fetch (its get_data), with no transfer logged; values that cannot be encoded are reported
 * missing, and `warn` says why.
 */
export function serveGather(message: GatherMessage, connection: Connection, store: HeldValues, meter: StoreMeter, warn: (line: string) => void): void {
  const values: Record<string, unknown> = {};
  const missing: string[] = [];
  for (const key of message.keys) {
    if (store.has(key)) values[key] = store.get(key, meter);
    else missing.push(key);
  }
  const reply: GatherReplyMessage = { op: "gather-reply", values, missing };
  sendMetered(connection, () => {
    try {
      return encodeValue(reply);
    } catch (error) {
      warn(`cannot send gathered values: ${(error as Error).message}`);
      return encodeValue({ ...reply, values: {}, missing: [...reply.missing, ...Object.keys(reply.values)] });
    }
  }, meter);
}

/**
 * Encodes a reply (`encode`) and writes it to `connection`, metered as Dask's get_data: the
 * encoding as "serialize", the writing until the socket has taken the last byte as "network"
 * (seconds). `sent` gets the bytes on the wire once they have left; a peer that left before its
 * answer gets nothing.
 */
export function sendMetered(connection: Connection, encode: () => Buffer[], meter: StoreMeter, sent?: (wireBytes: number) => void): void {
  const serializeStart = performance.now();
  const parts = encode();
  const sendStart = performance.now();
  meter.add("serialize", (sendStart - serializeStart) / 1000, "seconds");
  let wireBytes = 0;
  try {
    wireBytes = connection.sendFrames(parts, (error) => {
      meter.add("network", (performance.now() - sendStart) / 1000, "seconds");
      if (error === undefined) sent?.(wireBytes);
    });
  } catch {
    // The peer left before its answer: nothing to log.
  }
}
