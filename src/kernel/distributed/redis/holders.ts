// The client's reads of results that workers keep (./held): gathered straight from each holder's
// data listener, as LocalCluster's scheduler gathers (a "gather" over ../worker/peers), with the
// client's own secret (./peer-secret) and, for tls:// listeners, the client's CA. A holder that
// cannot be reached is said so, and its values come through Redis (./fallback) until it answers
// again (./unreachable); values whose holder is gone are reported lost, for the scheduler to recompute,
// unless another worker keeps them by then.

import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { Redis } from "ioredis";
import { decodeValue } from "../comm/frames";
import type { FromWorker, GatherReplyMessage, WorkerAddress } from "../messages";
import { PeerClient } from "../worker/peers";
import { throughRedis } from "./fallback";
import { PeerSecrets } from "./peer-secret";
import type { RedisStore, ValueLocation } from "./store";
import { UnreachableAddresses } from "./unreachable";

export class HolderReader {
  private peers: Promise<PeerClient> | undefined;
  /** Data addresses that could not be reached: their values come through Redis. */
  private readonly unreachable = new UnreachableAddresses((address) => this.notice(`The worker at ${address} answers again: the results it keeps come from it directly`));

  constructor(
    private readonly redis: Redis,
    private readonly store: RedisStore,
    /** For tls:// listeners: the CA their certificates are checked against. */
    private readonly tls: TlsOptions | undefined,
    /** Reports messages as from `worker` (lost values, as missing-data). */
    private readonly report: (worker: WorkerAddress, messages: readonly FromWorker[]) => void,
    /** Says something the user should hear once. */
    private readonly notice: (message: string) => void,
    /** Seconds a holder may stay silent (see DEFAULT_PEER_TIMEOUT). */
    private readonly timeout: number,
  ) {}

  /**
   * The values at `located`, from their holders; those nobody has any more are left out and
   * reported lost (the scheduler recomputes what still needs them).
   */
  async read(located: ReadonlyMap<string, ValueLocation>): Promise<Map<string, unknown>> {
    const byHolder = new Map<string, { address: string; keys: string[] }>();
    for (const [key, { holder, address }] of located) {
      const group = byHolder.get(holder) ?? { address, keys: [] };
      byHolder.set(holder, group);
      group.keys.push(key);
    }
    const values = new Map<string, unknown>();
    await Promise.all([...byHolder].map(([holder, { address, keys }]) => this.fromHolder(holder, address, keys, values)));
    return values;
  }

  close(): void {
    this.unreachable.close();
    void this.peers?.then((peers) => peers.close(), () => {});
  }

  private async fromHolder(holder: string, address: string, keys: readonly string[], into: Map<string, unknown>): Promise<void> {
    let missing: readonly string[] = keys;
    if (!this.unreachable.has(address)) {
      try {
        const reply = await this.gather(address, keys);
        for (const [key, value] of Object.entries(reply.values)) into.set(key, value);
        missing = reply.missing;
      } catch (error) {
        this.unreachable.add(address, () => this.gather(address, []));
        this.notice(`Cannot reach worker ${holder} at ${address} (${(error as Error).message}) for ${keys.join(", ")}: the results it keeps come through Redis until it answers again`);
      }
    }
    if (missing.length === 0) return;
    const published = await throughRedis(this.redis, this.store, holder, missing);
    for (const [key, frames] of published.frames) into.set(key, decodeValue(frames));
    if (published.missing.length > 0) this.report("redis", published.missing.map((key) => ({ op: "missing-data", key, errantWorker: holder })));
    // Kept by another worker since (computed again while this holder did not answer): read there.
    // Reporting them lost would lose that new copy too; each further round needs another move.
    if (published.located.size > 0) for (const [key, value] of await this.read(published.located)) into.set(key, value);
  }

  private async gather(address: string, keys: readonly string[]): Promise<Pick<GatherReplyMessage, "values" | "missing">> {
    const peers = await this.connections();
    const { value } = await peers.request(address, { op: "gather", keys });
    const reply = value as Partial<GatherReplyMessage> | null;
    if (reply?.op !== "gather-reply" || typeof reply.values !== "object" || reply.values === null || !Array.isArray(reply.missing)) {
      throw new Error(`the worker answered a gather with something else`);
    }
    return { values: reply.values, missing: reply.missing };
  }

  private connections(): Promise<PeerClient> {
    this.peers ??= new PeerSecrets(this.redis).of(this.store.namespace.clientId).then((secret) => {
      if (secret === undefined) throw new Error("this client's peer secret is not in Redis");
      return new PeerClient({ credentials: { clientId: this.store.namespace.clientId, secret }, tls: this.tls, timeout: this.timeout });
    });
    this.peers.catch(() => (this.peers = undefined));
    return this.peers;
  }
}
