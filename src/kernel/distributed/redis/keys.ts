// Every Redis key tsdask uses, in one place. Shared keys (the worker and client registries) sit
// under `tsdask:`; everything a client's computations leave in Redis sits under its namespace
// `tsdask:<client id>:`, so closing the client (or finding it dead) removes one prefix.

const ROOT = "tsdask";

/** The registries that clients and workers find each other by. */
export const registry = {
  /** SET of the names of workers that registered (entries outlive a dead worker until someone notices). */
  workers: `${ROOT}:workers`,
  /** HASH of one worker's registration and last heartbeat; expires unless the worker keeps it alive. */
  worker: (name: string): string => `${ROOT}:worker:${name}`,
  /** SET of the ids of clients that connected. */
  clients: `${ROOT}:clients`,
  /** STRING (the client's description) that expires unless the client keeps it alive. */
  client: (clientId: string): string => `${ROOT}:client:${clientId}`,
  /** Pub/Sub channel: "client-joined <id>", "client-left <id>", "worker-joined <name>", "worker-left <name>". */
  announcements: `${ROOT}:announce`,
  /** Pub/Sub channel of requests to one worker (client.run, profiles); it answers on the asking client's reply stream. */
  requests: (name: string): string => `${ROOT}:requests:${name}`,
} as const;

/** BullMQ queue names cannot hold ":"; the queue lives under the namespace through BullMQ's prefix. */
export const TASK_QUEUE = "tasks";

/** The queue of the tasks placed on one worker (see ./placement): its name in hex, which holds no ":". */
export function workerTaskQueue(worker: string): string {
  return `${TASK_QUEUE}-${Buffer.from(worker).toString("hex")}`;
}

/** The keys of one client's namespace. */
export class Namespace {
  readonly prefix: string;

  constructor(readonly clientId: string) {
    if (!/^[A-Za-z0-9_-]+$/.test(clientId)) throw new Error(`A tsdask client id is letters, digits, "_" and "-"; got ${JSON.stringify(clientId)}`);
    this.prefix = `${ROOT}:${clientId}`;
  }

  /** HASH holding a stored value: field "m" its metadata, fields "0", "1"… its bytes, "j" the job that wrote it. */
  value(key: string): string {
    return `${this.prefix}:v:${key}`;
  }

  /** Where a value too large for one command is assembled before it is published under `value(key)`. */
  staging(key: string, token: string): string {
    return `${this.prefix}:s:${token}:${key}`;
  }

  /** HASH in the store's format holding a task whose spec is too large to travel inside its job. */
  taskSpec(key: string, token: string): string {
    return `${this.prefix}:t:${token}:${key}`;
  }

  /**
   * STREAM of workers' replies to the client's requests (field "r"); the client reads past the
   * last entry it handled and deletes what it handled, so a connection lost mid-read loses nothing.
   */
  get replies(): string {
    return `${this.prefix}:replies`;
  }

  /**
   * STREAM of the outcomes of the client's tasks (fields "p", how the result was stored, and "o",
   * the outcome: see jobs.ts), each written by the worker that ran the task in the same script as
   * its result (./store); the client reads past the last entry it handled and trims what it read.
   */
  get outcomes(): string {
    return `${this.prefix}:outcomes`;
  }

  /**
   * STRING: the client's peer secret (random, written once with its registration): a worker's
   * data listener serves only peers that prove they know it (see ../comm/handshake).
   */
  get peerSecret(): string {
    return `${this.prefix}:peer-secret`;
  }

  /** BullMQ's prefix for the client's task queue: its keys are `<prefix>:tasks:…`. */
  get queuePrefix(): string {
    return this.prefix;
  }

  /** Liveness of the client that owns the namespace: writes into the namespace require it. */
  get alive(): string {
    return registry.client(this.clientId);
  }

  /** SCAN pattern matching every key of the namespace (client ids need no glob escaping). */
  get pattern(): string {
    return `${this.prefix}:*`;
  }
}
