// The seam between the scheduler and whatever carries its messages: Unix sockets to forked
// workers (LocalCluster, ../local) or BullMQ jobs and a Redis store (../redis). The scheduler
// never touches a socket; a transport never decides anything.

import type { ComputeTaskMessage, FromWorker, GatherReplyMessage, RegisterMessage, ToWorker, WorkerAddress } from "../messages";

/**
 * How ready tasks find a worker.
 * - "locality": the scheduler picks the worker (the one holding most of the task's input bytes,
 *   weighed against how busy it is) and sends it the task; workers keep results and fetch
 *   inputs from each other. Root tasks wait on the scheduler until a worker has room.
 * - "queue": the scheduler puts every ready task on a shared queue (lowest priority first) that
 *   any worker takes from; results live in a shared store, so who holds a key is the store.
 */
export type Placement = "locality" | "queue";

/** What a transport reports, on the scheduler's thread, from `start` until `close`. */
export interface TransportEvents {
  /** A worker registered: its first message. The scheduler answers with a heartbeat-reply. */
  workerJoined(registration: RegisterMessage): void;
  /** Messages from a registered worker, in the order it sent them (a batch per socket message). */
  received(worker: WorkerAddress, messages: readonly FromWorker[]): void;
  /**
   * The worker is gone: its connection closed, its process exited, or it stopped heartbeating.
   * With locality placement its tasks are rescheduled and results only it held are recomputed.
   */
  workerLeft(worker: WorkerAddress, reason: string): void;
  /**
   * The transport cannot go on (its server lost for too long, or it lost the cluster's data): the
   * scheduler closes, and everything pending fails with `error`. Transports that cannot fail this
   * way never call it.
   */
  failed?(error: Error): void;
  /** Something the user should hear about while it lasts (tasks waiting for a worker, say). */
  notice?(message: string): void;
}

/**
 * Moves the scheduler's instructions to workers and their reports back. The scheduler calls
 * `send` at most once per worker per event-loop turn, with everything for that worker batched.
 */
export interface Transport {
  readonly placement: Placement;
  /** For reprs and errors: "unix sockets in /tmp/tsdask-…", "redis://host:6379". */
  readonly description: string;
  /** Starts reporting to `events`; resolves once it is ready for workers. */
  start(events: TransportEvents): Promise<void>;
  /** Delivers messages to one worker, in order. Messages for a worker that has left are dropped. */
  send(worker: WorkerAddress, messages: readonly ToWorker[]): void;
  /** "queue" only: tasks whose inputs are all in the store, for any worker to take. */
  enqueue?(tasks: readonly ComputeTaskMessage[]): void;
  /**
   * "queue" only: the scheduler no longer wants these keys: remove them from the queue if no
   * worker took them yet, and their values from the store. (A worker running one is told with
   * free-keys through `send`.)
   */
  forget?(keys: readonly string[]): void;
  /** "queue" only: values of keys in the store (Client.gather, results of get); absent ones are missing. */
  fetch?(keys: readonly string[]): Promise<ReadonlyMap<string, unknown>>;
  /**
   * "locality", optional: the values of `keys` that `worker` holds (the others missing), fetched
   * over a channel of their own rather than the message channel — a bulk path for results.
   * Rejects if the worker cannot be reached. Without it the scheduler sends a gather message.
   */
  gather?(worker: WorkerAddress, keys: readonly string[]): Promise<Pick<GatherReplyMessage, "values" | "missing">>;
  /**
   * Whether the transport's idle handles (listener, connections, child processes) may keep this
   * process alive. The scheduler keeps it on only while a computation or request is pending, so
   * a script that forgot to close its cluster still exits.
   */
  setKeepsAlive(keep: boolean): void;
  /** Stops everything the transport started; the scheduler calls it once, last. */
  close(): Promise<void>;
}
