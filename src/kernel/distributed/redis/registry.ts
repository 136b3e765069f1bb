// How clients and workers of one Redis find each other.
//
// Workers: `tsdask:workers` (SET of names) and one HASH per worker, `tsdask:worker:<name>`, with
// fields "info" (its registration) and "beat" (its last heartbeat), which expires unless the
// worker refreshes it: a worker that dies vanishes within the TTL. A worker leaving on purpose
// deletes its hash at once.
//
// Clients: `tsdask:clients` (SET of ids) and `tsdask:client:<id>` (its description), deleted
// when the client closes. Its existence is what lets workers write into the client's namespace,
// so it has no TTL (a notebook busy in a long synchronous cell must not lose its data); a client
// that died without closing is recognised by its named connections being gone (see
// `clientConnectionName`), and whoever notices sweeps its namespace.
//
// Joins and leaves are also announced on a Pub/Sub channel, so workers find new clients at once.

import type { Redis } from "ioredis";
import type { WorkerStatus } from "../../../protocol/records";
import type { RegisterMessage, WorkerMetrics } from "../messages";
import { PeerSecret } from "../comm/handshake";
import { Namespace, registry } from "./keys";

/**
 * The version of what clients and workers of one Redis write for each other (jobs, outcomes,
 * replies, the registry), raised when a change makes one side wait in vain for the other. A worker
 * registers with it; a client refuses a worker of another version (./transport). 2: outcomes on
 * the client's outcome stream. Workers from before 2 register none.
 */
export const REDIS_PROTOCOL = 2;

/** A worker's registration: what it tells the scheduler when it joins (its name is its address), and more. */
export type WorkerInfo = Pick<RegisterMessage, "name" | "host" | "pid" | "nthreads" | "memoryLimit" | "globals"> & {
  /** REDIS_PROTOCOL as the worker knows it; absent from workers older than version 2. */
  readonly protocol?: number;
  /** Started with --allow-source: runs self-contained source shipped by clients. */
  readonly allowSource: boolean;
  /** When it registered, on the Redis clock (epoch seconds). */
  readonly started: number;
  /** Where its data listener is, as peers are told (tcp:// or tls://); absent when it does not listen (--no-listen). */
  readonly dataAddress?: string;
};

export interface WorkerBeat {
  /** On the Redis clock. */
  readonly time: number;
  /** Counts heartbeats, so a reader can tell a new one from the last one it saw. */
  readonly seq: number;
  readonly status: WorkerStatus;
  /** The worker's estimate of (its clock − the Redis clock), seconds. */
  readonly clockOffset: number;
  readonly metrics: WorkerMetrics;
}

export interface RegisteredWorker {
  readonly info: WorkerInfo;
  readonly beat: WorkerBeat | undefined;
}

export class WorkerNameTakenError extends Error {
  override name = "WorkerNameTakenError";
}

/** A worker's own entry: register once, refresh with each heartbeat, remove when leaving. */
export class WorkerRegistration {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    readonly info: WorkerInfo,
    /** How long the entry outlives the worker's last heartbeat, ms. */
    private readonly ttlMs: number,
  ) {
    this.key = registry.worker(info.name);
  }

  /** Adds the entry; a live worker of the same name is an error naming it. */
  async register(): Promise<void> {
    const created = await this.redis.hsetnx(this.key, "info", JSON.stringify(this.info));
    if (created === 0) {
      const [info, ttl] = await Promise.all([this.redis.hget(this.key, "info"), this.redis.pttl(this.key)]);
      const other = info === null ? undefined : (JSON.parse(info) as WorkerInfo);
      const who = other === undefined ? "another worker" : `the worker on host ${other.host} (pid ${other.pid})`;
      const expiry = ttl > 0 ? `; its entry expires in ${Math.ceil(ttl / 1000)} s unless it is alive` : "";
      throw new WorkerNameTakenError(`A worker named ${JSON.stringify(this.info.name)} is already registered: ${who}${expiry}. Choose another --name.`);
    }
    await this.redis.multi().pexpire(this.key, this.ttlMs).sadd(registry.workers, this.info.name).publish(registry.announcements, `worker-joined ${this.info.name}`).exec();
  }

  /** Refreshes the entry (re-creating it if Redis lost it: restarted, or the worker was frozen past the TTL). */
  async beat(beat: WorkerBeat): Promise<void> {
    await this.redis
      .multi()
      .hset(this.key, "info", JSON.stringify(this.info), "beat", JSON.stringify(beat))
      .pexpire(this.key, this.ttlMs)
      .sadd(registry.workers, this.info.name)
      .exec();
  }

  async leave(): Promise<void> {
    await this.redis.multi().del(this.key).srem(registry.workers, this.info.name).publish(registry.announcements, `worker-left ${this.info.name}`).exec();
  }
}

/** The workers registered now; names whose entry expired are dropped from the set on the way. */
export async function registeredWorkers(redis: Redis): Promise<RegisteredWorker[]> {
  const names = await redis.smembers(registry.workers);
  const entries = await Promise.all(names.map((name) => redis.hmget(registry.worker(name), "info", "beat")));
  const workers: RegisteredWorker[] = [];
  const gone: string[] = [];
  names.forEach((name, i) => {
    const [info, beat] = entries[i];
    if (info === null) gone.push(name);
    else workers.push({ info: JSON.parse(info) as WorkerInfo, beat: beat === null ? undefined : (JSON.parse(beat) as WorkerBeat) });
  });
  if (gone.length > 0) await redis.srem(registry.workers, ...gone);
  return workers;
}

/** The name a client's connections carry in CLIENT LIST: how workers tell a live client from a dead one. */
export function clientConnectionName(clientId: string): string {
  return `tsdask-client-${clientId}`;
}

export interface ClientDescription {
  readonly name: string;
  readonly host: string;
  readonly pid: number;
}

/** Registers the client, with the secret its workers' peers show each other (kept if it exists). */
export async function registerClient(redis: Redis, clientId: string, description: ClientDescription): Promise<void> {
  await redis
    .multi()
    .set(registry.client(clientId), JSON.stringify(description))
    .set(new Namespace(clientId).peerSecret, PeerSecret.generate(), "NX")
    .sadd(registry.clients, clientId)
    .publish(registry.announcements, `client-joined ${clientId}`)
    .exec();
}

export async function unregisterClient(redis: Redis, clientId: string): Promise<void> {
  await redis.multi().del(registry.client(clientId)).srem(registry.clients, clientId).publish(registry.announcements, `client-left ${clientId}`).exec();
}

/** Ids of the clients registered now (those whose entry was deleted are dropped from the set). */
export async function registeredClients(redis: Redis): Promise<string[]> {
  const ids = await redis.smembers(registry.clients);
  const present = await Promise.all(ids.map((id) => redis.exists(registry.client(id))));
  const gone = ids.filter((_, i) => present[i] === 0);
  if (gone.length > 0) await redis.srem(registry.clients, ...gone);
  return ids.filter((_, i) => present[i] === 1);
}

/** Client ids whose named connections are open now (CLIENT LIST). */
export async function connectedClients(redis: Redis): Promise<Set<string>> {
  const list = (await redis.client("LIST")) as string;
  const connected = new Set<string>();
  for (const match of list.matchAll(/ name=tsdask-client-([A-Za-z0-9_-]+) /g)) connected.add(match[1]);
  return connected;
}

/**
 * The workers among `names` with a connection to Redis subscribed to their request channel. A
 * worker's process that died (SIGKILL, a crash) lost its connections with it, at once; a frozen
 * one still has them, and a stopping one leaves the registry before it closes them.
 */
export async function workersListening(redis: Redis, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const reply = (await redis.pubsub("NUMSUB", ...names.map((name) => registry.requests(name)))) as (string | number)[];
  return new Set(names.filter((_, i) => Number(reply[2 * i + 1]) > 0));
}

/** Polls in a row a registered worker may have no connection listening before it is taken for dead. */
export const DEAD_AFTER_POLLS = 2;

/**
 * Registered workers whose process died: no connection listening (workersListening) for
 * DEAD_AFTER_POLLS polls in a row — a moment without one, as the connection comes back after a
 * blip or a new worker subscribes after it registered, is not death. They are gone seconds after
 * they died rather than once their registration lapses (its TTL), so the tasks placed on them run
 * elsewhere that much sooner; their registration is removed (a live worker's next heartbeat
 * would write it again).
 */
export class DeadWorkers {
  private readonly unheard = new Map<string, number>();

  constructor(private readonly redis: Redis) {}

  /** `found` less the workers now taken for dead, given which of them `listening` has. */
  living(found: readonly RegisteredWorker[], listening: ReadonlySet<string>): RegisteredWorker[] {
    const names = new Set(found.map(({ info }) => info.name));
    for (const name of [...this.unheard.keys()]) if (!names.has(name)) this.unheard.delete(name);
    return found.filter(({ info: { name } }) => {
      if (listening.has(name)) {
        this.unheard.delete(name);
        return true;
      }
      const polls = (this.unheard.get(name) ?? 0) + 1;
      this.unheard.set(name, polls);
      if (polls === DEAD_AFTER_POLLS) void this.redis.multi().del(registry.worker(name)).srem(registry.workers, name).exec().catch(() => {});
      return polls < DEAD_AFTER_POLLS;
    });
  }

  /** Whether `name` was taken for dead (rather than gone from the registry). */
  dead(name: string): boolean {
    return (this.unheard.get(name) ?? 0) >= DEAD_AFTER_POLLS;
  }
}
