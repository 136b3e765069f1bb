// How a Redis worker gets a task's inputs: small values from Redis (or carried inside the job),
// big ones from the worker that keeps them (./held) — itself, or a peer, over the data plane
// LocalCluster's workers use (../worker/peers: several keys per request, typed arrays as raw
// bytes), with the client's secret (./peer-secret) and, for tls:// peers, the worker's CA. Each
// read is logged as LocalCluster logs a fetch: a transfer log entry naming its source (the peer
// worker, or "redis"), the bandwidth estimate, "gather-dep" metrics and the task stream's
// transfer phase. A peer that cannot be reached is said so in the log, and its values come
// through Redis (./fallback) until it answers again (./unreachable); values nobody has any more
// are missing.

import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { Redis } from "ioredis";
import type { MetricRecord, StartStop, TransferLogEntry } from "../../../protocol/records";
import type { Metric } from "../../metrics/context-meter";
import { nbytes as sizeOf } from "../../metrics/nbytes";
import { decodeValue } from "../comm/frames";
import type { WorkerClock } from "../worker/clock";
import { InstructionLedger } from "../worker/digests";
import { typeName } from "../worker/names";
import { type FetchResult, PeerClient } from "../worker/peers";
import { type TransferStats, keySizes } from "../worker/transfers";
import { throughRedis } from "./fallback";
import type { KeptValues } from "./held";
import { decodeCarried } from "./jobs";
import { PeerSecrets } from "./peer-secret";
import type { RedisStore, StoredFrames, ValueLocation } from "./store";
import { UnreachableAddresses } from "./unreachable";

/** What getting inputs needs of the worker. */
export interface InputWorker {
  readonly name: string;
  readonly clock: WorkerClock;
  readonly transfers: TransferStats;
  readonly kept: KeptValues;
  /** Digests "gather-dep" metrics on the worker and returns them as records for the task's outcome. */
  digest(metrics: readonly Metric[]): MetricRecord[];
  warn(line: string): void;
}

/** A task's inputs, filled in as they arrive. */
export interface TaskInputs {
  readonly inputs: Map<string, unknown>;
  /** Inputs nobody has any more (the task cannot run; the scheduler recomputes them). */
  readonly missing: string[];
  /** Σ in-memory sizes of the inputs. */
  bytes: number;
  /** Inputs fetched from a peer for this task alone: nothing else here holds their memory (see TaskRequest.givenInputs). */
  readonly given: Set<string>;
  /** The task stream's transfer phases, on the Redis clock. */
  readonly startstops: StartStop[];
  /** "gather-dep" metrics. */
  readonly metrics: MetricRecord[];
  /** The read from Redis, when there was one. */
  transfer: TransferLogEntry | undefined;
}

const NOTHING_STORED: StoredFrames = { frames: new Map(), types: new Map(), missing: [], bytes: 0, sizes: new Map(), located: new Map() };

export class InputGatherer {
  /** A connection pool per client: each shows its own client's secret. */
  private readonly peers = new Map<string, Promise<PeerClient>>();
  private readonly secrets: PeerSecrets;
  /** Data addresses that could not be reached: their values come through Redis. */
  private readonly unreachable: UnreachableAddresses;

  constructor(
    private readonly worker: InputWorker,
    private readonly redis: Redis,
    /** For tls:// peers: the CA their certificates are checked against (--tls-ca). */
    private readonly peerTls: TlsOptions | undefined,
    /** Seconds a peer may stay silent (see DEFAULT_PEER_TIMEOUT). */
    private readonly peerTimeout: number,
  ) {
    this.secrets = new PeerSecrets(redis);
    this.unreachable = new UnreachableAddresses((address) => this.worker.warn(`the peer at ${address} answers again: the values it keeps come from it directly`));
  }

  /** The values of `keys` for a task of `store`'s client: those in `carried` (frames a job carried) are not read. */
  async gather(store: RedisStore, keys: readonly string[], carried: ReadonlyMap<string, readonly string[]>): Promise<TaskInputs> {
    const { clock } = this.worker;
    const received = clock.now();
    const toRead = carried.size === 0 ? keys : keys.filter((key) => !carried.has(key));
    const stored = toRead.length > 0 ? await store.fetch(toRead) : NOTHING_STORED;
    const gathered: TaskInputs = { inputs: new Map(), missing: [...stored.missing], bytes: 0, given: new Set(), startstops: [], metrics: [], transfer: undefined };
    if (gathered.missing.length > 0) return gathered;
    const fetchedAt = clock.now();
    const add = (key: string, value: unknown): void => {
      gathered.inputs.set(key, value);
      gathered.bytes += sizeOf(value);
    };
    for (const [key, frames] of stored.frames) add(key, decodeValue(frames));
    for (const [key, frames] of carried) add(key, decodeCarried(frames));
    // Inputs the job carried were not read: no transfer, as in Dask for data already on the worker.
    if (stored.frames.size > 0) this.fromRedis(gathered, stored, received, fetchedAt, clock.now());
    // A chain's step: nothing kept by a worker to ask for.
    if (stored.located.size === 0) return gathered;
    const tried = new Set<string>();
    await this.fromHolders(gathered, store, stored.located, tried, add);
    if (gathered.missing.length > 0) {
      // A value its holder did not have may have moved meanwhile (computed again elsewhere after
      // the holder was taken for gone, or handed over by a leaving one): one more look at the
      // records, trying holders not tried yet; a lost value is reported only if it is still lost.
      const asked = clock.now();
      const again = await store.fetch(gathered.missing.splice(0));
      const readAt = clock.now();
      gathered.missing.push(...again.missing);
      for (const [key, frames] of again.frames) add(key, decodeValue(frames));
      if (again.frames.size > 0) this.fromRedis(gathered, again, asked, readAt, clock.now());
      const moved = new Map([...again.located].filter(([, { holder }]) => !tried.has(holder) || holder === this.worker.name));
      gathered.missing.push(...[...again.located.keys()].filter((key) => !moved.has(key)));
      await this.fromHolders(gathered, store, moved, tried, add);
    }
    return gathered;
  }

  /**
   * The values of `keys` that `holder` keeps, from its data listener at `address` (a leaving worker
   * hands them over, ./handoff), logged as a fetch of inputs is; rejects if it cannot be reached.
   */
  async fetchHeld(store: RedisStore, holder: string, address: string, keys: readonly string[]): Promise<FetchResult["values"]> {
    const peers = await this.peersOf(store.namespace.clientId);
    const result = await peers.getData(address, keys, this.worker.name);
    this.fromPeer({ inputs: new Map(), missing: [], bytes: 0, given: new Set(), startstops: [], metrics: [], transfer: undefined }, holder, result);
    return result.values;
  }

  /** Gets the values at `located` from their holders (this worker itself among them), adding each holder asked to `tried`. */
  private async fromHolders(gathered: TaskInputs, store: RedisStore, located: ReadonlyMap<string, ValueLocation>, tried: Set<string>, add: (key: string, value: unknown) => void): Promise<void> {
    const byHolder = new Map<string, { address: string; keys: string[] }>();
    const kept = this.worker.kept.of(store.namespace.clientId);
    for (const [key, location] of located) {
      if (location.holder === this.worker.name) {
        if (kept.has(key)) add(key, kept.get(key));
        else gathered.missing.push(key);
        continue;
      }
      tried.add(location.holder);
      const group = byHolder.get(location.holder) ?? { address: location.address, keys: [] };
      byHolder.set(location.holder, group);
      group.keys.push(key);
    }
    await Promise.all([...byHolder].map(([holder, { address, keys: held }]) => this.fromHolder(gathered, store, holder, address, held, add)));
  }

  /** Closes the connections made for `clientId` (it left). */
  forgetClient(clientId: string): void {
    const peers = this.peers.get(clientId);
    this.peers.delete(clientId);
    void peers?.then((client) => client.close(), () => {});
  }

  close(): void {
    for (const clientId of [...this.peers.keys()]) this.forgetClient(clientId);
    this.unreachable.close();
  }

  /** Logs the read of `stored` from Redis: `received` → `fetchedAt` on the wire, then decoding until `decodedAt`. */
  private fromRedis(gathered: TaskInputs, stored: StoredFrames, received: number, fetchedAt: number, decodedAt: number): void {
    const { clock, transfers } = this.worker;
    const ledger = new InstructionLedger();
    ledger.add("network", fetchedAt - received, "seconds");
    ledger.add("deserialize", decodedAt - fetchedAt, "seconds");
    gathered.metrics.push(...this.worker.digest(ledger.finalize()));
    const [start, stop] = [clock.toScheduler(received), clock.toScheduler(decodedAt)];
    gathered.startstops.push({ action: "transfer", start, stop, source: "redis" });
    gathered.transfer = transfers.received({ start, stop, who: "redis", keys: keySizes(stored.sizes), wireBytes: stored.bytes, types: [...new Set(stored.types.values())] });
  }

  /** Gets `keys` from `holder`'s data listener at `address`, or through Redis when it cannot be reached. */
  private async fromHolder(gathered: TaskInputs, store: RedisStore, holder: string, address: string, keys: readonly string[], add: (key: string, value: unknown) => void): Promise<void> {
    if (!this.unreachable.has(address)) {
      let result: FetchResult | undefined;
      try {
        const peers = await this.peersOf(store.namespace.clientId);
        result = await peers.getData(address, keys, this.worker.name);
      } catch (error) {
        if (!this.unreachable.has(address)) {
          const clientId = store.namespace.clientId;
          this.unreachable.add(address, async () => (await this.peersOf(clientId)).getData(address, [], this.worker.name));
          this.worker.warn(`cannot reach peer ${holder} at ${address} (${(error as Error).message}) for ${keys.join(", ")}: the values it keeps come through Redis until it answers again`);
        }
      }
      if (result !== undefined) {
        for (const [key, value] of Object.entries(result.values)) {
          add(key, value);
          // Read from the socket into memory of its own (../comm/connection), which nothing else refers to.
          gathered.given.add(key);
        }
        gathered.missing.push(...result.missing);
        this.fromPeer(gathered, holder, result);
        return;
      }
    }
    const received = this.worker.clock.now();
    const published = await throughRedis(this.redis, store, holder, keys);
    const fetchedAt = this.worker.clock.now();
    for (const [key, frames] of published.frames) add(key, decodeValue(frames));
    // Moved to another holder meanwhile: missing here, looked up again by gather().
    gathered.missing.push(...published.missing, ...published.located.keys());
    if (published.frames.size > 0) this.fromRedis(gathered, published, received, fetchedAt, this.worker.clock.now());
  }

  /** Logs a fetch from a peer as LocalCluster's workers do (../worker/worker gatherDep). */
  private fromPeer(gathered: TaskInputs, holder: string, result: FetchResult): void {
    const { clock, transfers } = this.worker;
    const ledger = new InstructionLedger();
    // Dask's gather-dep has no bytes of its own: they are in the transfer logs and the bandwidth.
    ledger.add("network", Math.max(0, result.stop - result.start - result.deserializeSeconds), "seconds");
    ledger.add("deserialize", result.deserializeSeconds, "seconds");
    const received = Object.entries(result.values);
    gathered.metrics.push(...this.worker.digest(ledger.finalize(received.length > 0 ? undefined : "missing")));
    const start = clock.toScheduler(clock.fromMachine(result.start));
    const stop = clock.toScheduler(clock.fromMachine(result.stop));
    if (received.length === 0) return;
    const sizes = received.map(([key, value]) => [key, sizeOf(value)] as const);
    transfers.received({ start, stop, who: holder, keys: keySizes(sizes), wireBytes: result.wireBytes, types: [...new Set(received.map(([, value]) => typeName(value)))] });
    // The reply is decoded once all its bytes are in, at the end of the fetch: that stretch is the grey "deserialize".
    const decoded = Math.max(start, stop - result.deserializeSeconds);
    gathered.startstops.push({ action: "transfer", start, stop: decoded, source: holder });
    if (decoded < stop) gathered.startstops.push({ action: "deserialize", start: decoded, stop });
  }

  private peersOf(clientId: string): Promise<PeerClient> {
    let peers = this.peers.get(clientId);
    if (peers === undefined) {
      peers = this.secrets.of(clientId).then((secret) => {
        if (secret === undefined) throw new Error(`client ${clientId} has no secret in Redis (it left)`);
        return new PeerClient({ credentials: { clientId, secret }, tls: this.peerTls, timeout: this.peerTimeout });
      });
      peers.catch(() => this.peers.delete(clientId));
      this.peers.set(clientId, peers);
    }
    return peers;
  }
}
