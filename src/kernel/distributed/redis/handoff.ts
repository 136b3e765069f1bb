// A Redis worker leaving gracefully (SIGTERM, close()) hands over the results only it keeps, as
// Dask's retire_workers moves a retiring worker's unique data before it goes: nothing it computed
// is computed again. Each value goes to a live peer with room for it (the most room first), which
// fetches it from the leaving worker's data listener — a peer transfer like any other, in the
// peer's transfer log — keeps it and records itself as its holder in Redis in place of the leaving
// worker (./store: the same job's location, replaced only if it still names the leaving worker).
// Clients then find it there (their gathers and later tasks read the record; a client seeing the
// worker leave reads where its values went, ./task-queue relocate). What no peer takes, or takes
// in time (`handoffTimeout`), the leaving worker writes into Redis itself; what cannot be written
// in that time again is left to be recomputed. A shutdown never waits longer than three times the
// timeout (the tasks placed on it, the peers, the writes into Redis).

import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { WorkerStatus } from "../../../protocol/records";
import { nbytes as sizeOf } from "../../metrics/nbytes";
import { DEFAULT_THRESHOLDS } from "../worker/memory";
import type { StoreMeter } from "../worker/store";
import type { KeptEntry, KeptValues } from "./held";
import type { AcquireHeldMessage, WorkerRequest } from "./jobs";
import { type Namespace, registry, workerTaskQueue } from "./keys";
import { type RegisteredWorker, registeredWorkers } from "./registry";
import { type RedisStore, typeName } from "./store";

/** Seconds a leaving worker waits for peers to take its values before it writes the rest into Redis. */
export const DEFAULT_HANDOFF_TIMEOUT = 20;

const PAUSE_SHARE = DEFAULT_THRESHOLDS.pause === false ? 1 : DEFAULT_THRESHOLDS.pause;

/**
 * Seconds clients may take to see that a worker is leaving (twice their default poll interval):
 * tasks they place on it meanwhile still run there, before it hands over what it keeps.
 */
const PLACEMENT_GRACE_MS = 2000;

/** A peer that could take values, and the bytes it can take before it would pause. */
export interface Recipient {
  readonly name: string;
  readonly headroom: number;
}

export interface HandoffPlan {
  /** Values for each peer, by peer name. */
  readonly toPeers: ReadonlyMap<string, readonly KeptEntry[]>;
  /** Values no peer has room for. */
  readonly toRedis: readonly KeptEntry[];
}

/**
 * Who takes which value: the biggest first, each to the peer with the most room left, if the
 * value fits there (Dask's retire_workers also sends each key to the least loaded recipient);
 * the rest go to Redis.
 */
export function planHandoff(values: readonly KeptEntry[], recipients: readonly Recipient[]): HandoffPlan {
  const room = new Map(recipients.map(({ name, headroom }) => [name, headroom]));
  const toPeers = new Map<string, KeptEntry[]>();
  const toRedis: KeptEntry[] = [];
  for (const value of [...values].sort((a, b) => b.nbytes - a.nbytes || (a.key < b.key ? -1 : 1))) {
    let best: string | undefined;
    for (const [name, left] of room) {
      if (left >= value.nbytes && (best === undefined || left > room.get(best)! || (left === room.get(best)! && name < best))) best = name;
    }
    if (best === undefined) {
      toRedis.push(value);
      continue;
    }
    room.set(best, room.get(best)! - value.nbytes);
    const taking = toPeers.get(best);
    if (taking === undefined) toPeers.set(best, [value]);
    else taking.push(value);
  }
  return { toPeers, toRedis };
}

/**
 * The registered workers that can take values from `self`: running (not paused, not leaving
 * themselves), listening, with their room: what their memory may still grow before they pause
 * (Dask's pause threshold, 80 % of their limit).
 */
export function recipientsOf(workers: readonly RegisteredWorker[], self: string): Recipient[] {
  const recipients: Recipient[] = [];
  for (const { info, beat } of workers) {
    if (info.name === self || info.dataAddress === undefined || beat?.status !== "running") continue;
    const headroom = info.memoryLimit * PAUSE_SHARE - beat.metrics.memory;
    if (headroom > 0) recipients.push({ name: info.name, headroom });
  }
  return recipients;
}

/** What handing over needs of a worker, leaving or taking values from one that leaves. */
export interface HandoffWorker {
  readonly name: string;
  /** Its data listener, where peers fetch values (undefined: it does not listen, so keeps and takes nothing). */
  readonly address: string | undefined;
  readonly redis: Redis;
  readonly kept: KeptValues;
  status(): WorkerStatus;
  /** The store of each client it serves, by client id. */
  storeOf(clientId: string): RedisStore | undefined;
  /** Fetches values from a peer's data listener (./inputs fetchHeld). */
  fetch(store: RedisStore, holder: string, address: string, keys: readonly string[]): Promise<Readonly<Record<string, unknown>>>;
  /** Meters values it keeps that spill to disk. */
  readonly meter: StoreMeter;
  log(line: string): void;
}

/** A client's task queues on a leaving worker: the shared one, and its own (./placement). */
export interface LeavingQueues {
  readonly namespace: Namespace;
  readonly shared: { close(): Promise<void> };
  readonly own: { close(): Promise<void> };
}

/**
 * Dask's retire_workers: `worker` takes no more tasks, runs those placed on it, then hands the
 * results it keeps to peers or Redis, so that nothing is recomputed; within 3 × `timeoutSeconds`.
 */
export async function retire(worker: HandoffWorker, queues: readonly LeavingQueues[], timeoutSeconds: number): Promise<void> {
  const steps = async (): Promise<void> => {
    await Promise.all(queues.map(({ shared }) => shared.close()));
    const namespaces = queues.map(({ namespace }) => namespace);
    if (worker.kept.entries().length > 0) await drainPlaced(worker.redis, namespaces, worker.name, timeoutSeconds);
    await Promise.all(queues.map(({ own }) => own.close()));
    await handOffKept(worker, timeoutSeconds);
  };
  await within(3 * timeoutSeconds, steps().catch((error: Error) => worker.log(`could not hand over what it keeps: ${error.message}`)));
}

/**
 * Waits until the tasks placed on worker `name` (its own queues of the clients at `namespaces`,
 * see ./placement) have run, and clients had time to stop placing more, within `timeoutSeconds`.
 */
async function drainPlaced(redis: Redis, namespaces: readonly Namespace[], name: string, timeoutSeconds: number): Promise<void> {
  const start = performance.now();
  const queues = namespaces.map((namespace) => new Queue(workerTaskQueue(name), { connection: redis, prefix: namespace.queuePrefix }));
  try {
    for (;;) {
      const counts = await Promise.all(queues.map((queue) => queue.getJobCounts("wait", "prioritized", "active", "delayed")));
      const left = counts.reduce((sum, count) => sum + Object.values(count).reduce((a, b) => a + b, 0), 0);
      const waited = performance.now() - start;
      if ((left === 0 && waited >= PLACEMENT_GRACE_MS) || waited >= timeoutSeconds * 1000) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await Promise.all(queues.map((queue) => queue.close().catch(() => {})));
  }
}

/** First and longest pause between two looks at where the handed values are, ms. */
const FIRST_LOOK_MS = 20;
const LONGEST_LOOK_MS = 250;

/** Hands every value `worker` keeps to peers, or to Redis (see the header); resolves when none is left with it. */
export async function handOffKept(worker: HandoffWorker, timeoutSeconds: number): Promise<void> {
  const address = worker.address;
  const values = await stillItsOwn(worker, worker.kept.entries());
  if (values.length === 0 || address === undefined) return;
  const deadline = performance.now() + timeoutSeconds * 1000;
  const plan = planHandoff(values, recipientsOf(await registeredWorkers(worker.redis), worker.name));
  const asked: KeptEntry[] = [];
  const toRedis = [...plan.toRedis];
  for (const [peer, entries] of plan.toPeers) {
    for (const [clientId, ofClient] of byClient(entries)) {
      const message: AcquireHeldMessage = { op: "acquire-held", from: worker.name, address, keys: ofClient.map(({ key, job }) => [key, job]) };
      const request: WorkerRequest = { client: clientId, message };
      // Nobody subscribed: the peer left since its last heartbeat.
      if ((await worker.redis.publish(registry.requests(peer), JSON.stringify(request))) > 0) asked.push(...ofClient);
      else toRedis.push(...ofClient);
    }
  }
  const handed = await awaitHandedOver(worker, asked, deadline);
  toRedis.push(...asked.filter((entry) => !handed.has(entry)));
  for (const [peer, entries] of groupBy([...handed.keys()], (entry) => handed.get(entry)!)) {
    for (const [clientId, ofClient] of byClient(entries)) worker.log(`handed ${describe(ofClient)} of client ${clientId} to worker ${peer}: ${keysOf(ofClient)}`);
  }
  if (toRedis.length > 0) await intoRedis(worker, toRedis, timeoutSeconds);
}

/**
 * The `entries` whose records in Redis still name `worker` as their holder: a copy recomputed
 * elsewhere meanwhile (this worker was frozen and taken for gone), or forgotten, is nobody's.
 */
async function stillItsOwn(worker: HandoffWorker, entries: readonly KeptEntry[]): Promise<KeptEntry[]> {
  const own: KeptEntry[] = [];
  for (const [clientId, ofClient] of byClient(entries)) {
    const store = worker.storeOf(clientId);
    if (store === undefined) continue;
    const places = await store.whereAre(ofClient.map(({ key }) => key));
    own.push(...ofClient.filter((_, i) => places[i]?.holder === worker.name));
  }
  return own;
}

/** Waits until each of `asked` names another holder in Redis, or until `deadline`; the handed ones, with their new holder. */
async function awaitHandedOver(worker: HandoffWorker, asked: readonly KeptEntry[], deadline: number): Promise<Map<KeptEntry, string>> {
  const handed = new Map<KeptEntry, string>();
  let waiting = [...asked];
  let pause = FIRST_LOOK_MS;
  while (waiting.length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, deadline - performance.now()))));
    pause = Math.min(LONGEST_LOOK_MS, pause * 1.5);
    const still: KeptEntry[] = [];
    for (const [clientId, ofClient] of byClient(waiting)) {
      const places = await worker.storeOf(clientId)!.whereAre(ofClient.map(({ key }) => key)).catch(() => undefined);
      ofClient.forEach((entry, i) => {
        const place = places?.[i];
        if (places === undefined || place?.holder === worker.name) still.push(entry);
        else if (place?.holder !== undefined) handed.set(entry, place.holder);
        // No record (the client forgot the key), or bytes in Redis: nothing left to hand over.
      });
    }
    waiting = still;
  }
  return handed;
}

/** Writes `entries` into Redis, bounded by `timeoutSeconds`: what is not written by then is recomputed if needed. */
async function intoRedis(worker: HandoffWorker, entries: readonly KeptEntry[], timeoutSeconds: number): Promise<void> {
  const writes = [...byClient(entries)].map(async ([clientId, ofClient]) => {
    const published = await worker.kept.publish(worker.storeOf(clientId)!, ofClient.map(({ key }) => key), worker.name);
    worker.log(`put ${published} of ${describe(ofClient)} of client ${clientId} into Redis, no peer taking them in time: ${keysOf(ofClient)}`);
  });
  const outcome = await within(timeoutSeconds, Promise.all(writes).then(() => "written" as const, (error: Error) => error));
  if (outcome === undefined) worker.log(`could not write ${describe(entries)} into Redis within ${timeoutSeconds} s (what is not there is recomputed if needed): ${keysOf(entries)}`);
  else if (outcome instanceof Error) worker.log(`could not write kept values into Redis (${outcome.message}): what is not there is recomputed if needed`);
}

/**
 * A leaving worker's `message`: fetch the values, keep them and record them as this worker's. A
 * worker not running (paused, leaving itself) takes nothing: the leaving one writes them into Redis.
 */
export async function acquireHeld(worker: HandoffWorker, clientId: string, message: AcquireHeldMessage): Promise<void> {
  const store = worker.storeOf(clientId);
  if (store === undefined || worker.address === undefined || worker.status() !== "running") return;
  // A value it keeps already (computed here again meanwhile) stays as it is.
  const held = worker.kept.of(clientId);
  const jobs = new Map(message.keys.filter(([key]) => !held.has(key)));
  if (jobs.size === 0) return;
  let values: Readonly<Record<string, unknown>>;
  try {
    values = await worker.fetch(store, message.from, message.address, [...jobs.keys()]);
  } catch (error) {
    worker.log(`cannot take the values of leaving worker ${message.from} (${(error as Error).message}): it writes them into Redis`);
    return;
  }
  const taken: string[] = [];
  await Promise.all(
    Object.entries(values).map(async ([key, value]) => {
      const nbytes = sizeOf(value);
      const type = typeName(value);
      const job = jobs.get(key)!;
      worker.kept.keep(clientId, key, job, value, nbytes, type, worker.meter);
      const outcome = await store.publishLocation(key, { holder: worker.name, address: worker.address!, nbytes, type }, job, message.from).result.catch(() => "failed" as const);
      // Another record stands (the client forgot the key, or it was recomputed): this copy is nobody's.
      if (outcome === "published") taken.push(key);
      else worker.kept.drop(clientId, [key]);
    }),
  );
  if (taken.length > 0) worker.log(`took ${taken.length} value(s) of client ${clientId} from leaving worker ${message.from}: ${taken.join(", ")}`);
}

/** `promise`'s value, or undefined once `seconds` have passed: a shutdown never waits longer. */
async function within<T>(seconds: number, promise: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), seconds * 1000)));
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

function byClient(entries: readonly KeptEntry[]): Map<string, KeptEntry[]> {
  return groupBy(entries, (entry) => entry.clientId);
}

function groupBy<T>(items: readonly T[], by: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const name = by(item);
    const group = groups.get(name);
    if (group === undefined) groups.set(name, [item]);
    else group.push(item);
  }
  return groups;
}

/** "3 value(s) (24.0 MB)". */
function describe(entries: readonly KeptEntry[]): string {
  const bytes = entries.reduce((sum, { nbytes }) => sum + nbytes, 0);
  return `${entries.length} value(s) (${(bytes / 1e6).toFixed(1)} MB)`;
}

function keysOf(entries: readonly KeptEntry[]): string {
  return entries.map(({ key }) => key).join(", ");
}
