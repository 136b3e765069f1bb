// What the scheduler (in the client's process) and its workers say to each other: the contract
// between the scheduler state machine, the worker state machine and the transports that carry
// them. Plain data; keys travel as `keyId` strings. Messages are sent in batches (arrays), each
// batch encoded with `encodeValue` (./frames), so typed arrays inside travel as raw bytes.

import type { FnSpec, PackedError } from "../execution/wire";
import type { PackedProfile } from "../../protocol/profile";
import type { MetricRecord, StartStop, WorkerStatus } from "../../protocol/records";

/** Where a worker is reached: `unix://<socket path>` for LocalCluster workers; its name for Redis workers. */
export type WorkerAddress = string;

// ---- Task specs --------------------------------------------------------------------------------

/**
 * A task's expression as it travels. Functions are ids into the worker's function table (their
 * FnSpec is sent once per worker, in the batch that first needs it); references name other keys.
 */
export type WireTask =
  | readonly ["lit", unknown]
  | readonly ["ref", string]
  | readonly ["call", number, ...WireTask[]]
  | readonly ["list", ...WireTask[]];

export interface DependencyInfo {
  readonly key: string;
  readonly nbytes: number;
  /** Workers holding it; empty when it sits in the shared store (Redis). */
  readonly whoHas: readonly WorkerAddress[];
  /**
   * The dependency is not computed yet: it was sent to this same worker earlier and is still
   * queued or running there (whoHas is then empty). The worker runs this task once it finishes,
   * without fetching or asking the scheduler: on a chain this saves a scheduler round trip per
   * task. If the dependency errs, the scheduler frees this task (free-keys). Locality placement only.
   */
  readonly local?: boolean;
}

// ---- Scheduler → worker ------------------------------------------------------------------------

export interface ComputeTaskMessage {
  readonly op: "compute-task";
  readonly key: string;
  /** Dask's repr of the key, for records and errors. */
  readonly name: string;
  readonly prefix: string;
  readonly task: WireTask;
  readonly dependencies: readonly DependencyInfo[];
  /** Lower runs first (the graph's static order, then submission order). */
  readonly priority: number;
  readonly spanId: string;
  /**
   * A client wants this result: a worker sends it with the task's report when it is small
   * (RETURNED_RESULT_BYTES), so gathering it needs no further round trip.
   */
  readonly returnsResult?: true;
}

/** Results up to this size travel with their task-finished report when the compute-task asks (returnsResult). */
export const RETURNED_RESULT_BYTES = 64 * 1024;

export interface DefineFunctionsMessage {
  readonly op: "define-functions";
  readonly functions: readonly (readonly [number, FnSpec])[];
}

/** The scheduler no longer wants these keys on this worker: cancel them if queued or running, drop their data. */
export interface FreeKeysMessage {
  readonly op: "free-keys";
  readonly keys: readonly string[];
}

/** Runs a self-contained function on the worker's main thread with a view of the worker (Client.run). */
export interface RunMessage {
  readonly op: "run";
  readonly requestId: number;
  readonly fn: FnSpec;
  /** Passed to the function before the worker's view (Dask's client.run(function, *args)). */
  readonly args?: readonly unknown[];
}

/**
 * A worker plugin as it travels: its class (a module export, rebuilt with the object's own data)
 * or its hooks one by one (each a method source whose `this` is the rebuilt object).
 */
export interface ShippedWorkerPlugin {
  readonly name: string;
  readonly idempotent: boolean;
  readonly data: Readonly<Record<string, unknown>>;
  readonly build: { readonly kind: "class"; readonly class: FnSpec } | { readonly kind: "methods"; readonly methods: Readonly<Partial<Record<"setup" | "teardown" | "transition", FnSpec>>> };
}

/** Adds (or replaces) a worker plugin and runs its setup; answered with a run-reply (its error, if setup failed). */
export interface PluginAddMessage {
  readonly op: "plugin-add";
  readonly requestId: number;
  readonly plugin: ShippedWorkerPlugin;
}

/** Removes a worker plugin, running its teardown; answered with a run-reply. */
export interface PluginRemoveMessage {
  readonly op: "plugin-remove";
  readonly requestId: number;
  readonly name: string;
}

/** Sends back the worker's statistical profile windows overlapping [start, stop) (scheduler clock; Client.profile). */
export interface ProfileRequestMessage {
  readonly op: "profile";
  readonly requestId: number;
  readonly start?: number;
  readonly stop?: number;
}

/**
 * Dask's steal-request: the scheduler would move this task to another worker. The worker gives it
 * up if it has not started it, and answers with a steal-response either way.
 */
export interface StealRequestMessage {
  readonly op: "steal-request";
  readonly key: string;
  /** Names this request in the answer (an answer to an older request for the key is ignored). */
  readonly stimulusId: string;
}

export interface HeartbeatReplyMessage {
  readonly op: "heartbeat-reply";
  /** The scheduler's clock when it handled the heartbeat. */
  readonly time: number;
  /** Seconds until the next heartbeat. */
  readonly heartbeatInterval: number;
}

export interface CloseWorkerMessage {
  readonly op: "close";
  readonly reason: string;
}

export type ToWorker =
  | ComputeTaskMessage
  | DefineFunctionsMessage
  | FreeKeysMessage
  | RunMessage
  | ProfileRequestMessage
  | StealRequestMessage
  | PluginAddMessage
  | PluginRemoveMessage
  | HeartbeatReplyMessage
  | CloseWorkerMessage;

// ---- Worker → scheduler ------------------------------------------------------------------------

/**
 * The first message on a worker's connection. The scheduler answers with a heartbeat-reply (its
 * clock, for the worker's first clock-offset estimate, and the heartbeat interval).
 */
export interface RegisterMessage {
  readonly op: "register";
  readonly address: WorkerAddress;
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly nthreads: number;
  readonly memoryLimit: number;
  /** Names on the worker's globalThis that shipped sources may use (see pool/ship.ts). */
  readonly globals: readonly string[];
  /** The worker's clock when it sent this (for the first offset estimate). */
  readonly now: number;
  /** Resident set size of the worker process (the cluster's memory is known before the first heartbeat). */
  readonly memory?: number;
  /** A Redis worker's data listener, where peers fetch what it holds (tcp:// or tls://); absent with --no-listen. A LocalCluster worker's is its address. */
  readonly dataAddress?: string;
}

export interface TaskFinishedMessage {
  readonly op: "task-finished";
  readonly key: string;
  readonly nbytes: number;
  /** The result's type name. */
  readonly type: string;
  /** The task thread's id within the worker. */
  readonly thread: number;
  /** On the scheduler's clock (the worker applies its offset estimate). */
  readonly startstops: readonly StartStop[];
  /** The result itself, when present: the compute-task asked for it (returnsResult) and it is small. */
  readonly value?: unknown;
  /**
   * The task's own fine performance metrics, with span ids, from workers that report them with
   * each task rather than with their heartbeats (Redis workers): counted as a heartbeat's digests.
   */
  readonly digests?: readonly MetricRecord[];
}

export interface TaskErredMessage {
  readonly op: "task-erred";
  readonly key: string;
  readonly error: PackedError;
  readonly thread: number;
  readonly startstops: readonly StartStop[];
  /** As TaskFinishedMessage's. */
  readonly digests?: readonly MetricRecord[];
}

/**
 * A dependency could not be fetched from `errantWorker`: it does not hold it (any more), or is gone.
 * The worker also drops every task of its own that needed the key (as if told free-keys for them)
 * once no holder it knows of is left; the scheduler sends them again (compute-task) with fresh
 * holders, after recomputing the key if it was lost.
 */
export interface MissingDataMessage {
  readonly op: "missing-data";
  readonly key: string;
  readonly errantWorker: WorkerAddress;
  /**
   * Queue placement: the task that could not run without it (its job is over; the scheduler queues
   * it again once the key is back in the store, recomputing the key if it was lost).
   */
  readonly task?: string;
}

/**
 * Queue placement, Dask's `reschedule`: task `key`'s job is over without an outcome, its inputs
 * still in the store (a worker it was placed on left after handing them over): queue it again.
 */
export interface RescheduleMessage {
  readonly op: "reschedule";
  readonly key: string;
}

/** The worker now also holds these keys (fetched from peers): the scheduler adds it to their holders. */
export interface AddKeysMessage {
  readonly op: "add-keys";
  readonly keys: readonly string[];
}

/** The worker dropped its copies of these keys (not asked to: e.g. a fetched replica it no longer needs). */
export interface ReleaseWorkerDataMessage {
  readonly op: "release-worker-data";
  readonly keys: readonly string[];
}

export interface WorkerStatusMessage {
  readonly op: "worker-status-change";
  readonly status: WorkerStatus;
}

export interface HeartbeatMessage {
  readonly op: "heartbeat";
  /** The worker's clock when it sent this. */
  readonly now: number;
  /**
   * The worker's estimate of (its clock − the scheduler's), seconds, from the round trips of
   * earlier heartbeats (the shortest of the last few): what it takes off the times it reports.
   */
  readonly clockOffset?: number;
  readonly metrics: WorkerMetrics;
}

/** What a heartbeat reports (Dask's `Worker.get_metrics`). */
export interface WorkerMetrics {
  /** % of one core, since the previous heartbeat. */
  readonly cpu: number;
  /** Resident set size of the worker process. */
  readonly memory: number;
  readonly managedBytes: number;
  /**
   * Bytes of the results the worker had told the scheduler it holds when it wrote this heartbeat:
   * the scheduler counts those itself as they land and leave, so only the rest of managedBytes
   * (what only the worker knows of) is taken from a heartbeat that may arrive after a release.
   */
  readonly reportedResultBytes: number;
  readonly spilledBytes: { readonly memory: number; readonly disk: number };
  readonly taskCounts: Readonly<Record<string, number>>;
  /** Fine performance metrics digested since the previous heartbeat, with span ids (worker layer). */
  readonly digests: readonly MetricRecord[];
  /** Bytes on the wire and batches moved to and from peers since the previous heartbeat. */
  readonly transfer: {
    readonly incomingBytes: number;
    readonly outgoingBytes: number;
    readonly incomingCount: number;
    readonly outgoingCount: number;
  };
  /** Bandwidth estimates since the previous heartbeat (bytes/s): overall, per peer, per type. */
  readonly bandwidth: {
    readonly total: number;
    readonly workers: Readonly<Record<WorkerAddress, number>>;
    readonly types: Readonly<Record<string, number>>;
  };
}

/** The answer to a steal-request. */
export interface StealResponseMessage {
  readonly op: "steal-response";
  readonly key: string;
  readonly stimulusId: string;
  /**
   * "released": the worker gave the task up (it had not started it); null: it does not know the
   * task; otherwise the state it keeps the task in ("executing", "memory", …).
   */
  readonly state: string | null;
}

export interface RunReplyMessage {
  readonly op: "run-reply";
  readonly requestId: number;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: PackedError;
}

export interface ProfileReplyMessage {
  readonly op: "profile-reply";
  readonly requestId: number;
  /** The windows (source: the worker's address, times on the scheduler's clock); none when the worker does not profile. */
  readonly profile: PackedProfile;
  /** False when the worker was started without profiling. */
  readonly enabled: boolean;
}

export type FromWorker =
  | RegisterMessage
  | TaskFinishedMessage
  | TaskErredMessage
  | MissingDataMessage
  | RescheduleMessage
  | AddKeysMessage
  | ReleaseWorkerDataMessage
  | WorkerStatusMessage
  | HeartbeatMessage
  | StealResponseMessage
  | RunReplyMessage
  | ProfileReplyMessage;

// ---- Data connections: to a worker's listener, from peers and from the scheduler -------------
// Replies come in request order. Values travel as frames on a connection of their own, whose
// reading side (the asker) reads them straight into memory of their own.

export interface GetDataRequest {
  readonly op: "get-data";
  readonly keys: readonly string[];
  /** The asking worker's address, for the transfer logs. */
  readonly who: WorkerAddress;
}

export interface GetDataReply {
  readonly op: "data";
  /** keyId → value for the keys held; the others are missing. */
  readonly values: Readonly<Record<string, unknown>>;
  readonly missing: readonly string[];
}

/** The scheduler asks for results (Client.gather, results of get/compute): no transfer is logged. */
export interface GatherMessage {
  readonly op: "gather";
  readonly keys: readonly string[];
}

export interface GatherReplyMessage {
  readonly op: "gather-reply";
  /** keyId → value, for the keys it holds; the others are missing. */
  readonly values: Readonly<Record<string, unknown>>;
  readonly missing: readonly string[];
}

// ---- Starting a worker -------------------------------------------------------------------------

/** What LocalCluster gives a worker process it forks (JSON in the first command-line argument). */
export interface WorkerStartConfig {
  readonly name: string;
  /** Socket path of the scheduler's listener (in the client's process). */
  readonly schedulerPath: string;
  /** Socket path the worker listens on for peers and gathers; its address is `unix://<path>`. */
  readonly listenPath: string;
  readonly nthreads: number;
  /** Bytes; spilling, pausing and the nanny's restart are fractions of it. */
  readonly memoryLimit: number;
  /** A folder of the worker's own (spill files); removed when the worker closes. */
  readonly localDirectory: string;
  /** Seconds added to the worker's own clock, to test clock correction (or TSDASK_CLOCK_OFFSET). */
  readonly clockOffset?: number;
  /**
   * The statistical profiler (Dask's distributed.worker.profile): seconds between samples and per
   * window; false turns it off. Default { interval: 0.01, cycle: 1 }.
   */
  readonly profile?: { readonly interval: number; readonly cycle: number } | false;
  /**
   * Dask's memory thresholds as fractions of memoryLimit (distributed.worker.memory.target,
   * .spill, .pause; false turns one off). Defaults 0.6, 0.7, 0.8.
   */
  readonly memoryThresholds?: { readonly target?: number | false; readonly spill?: number | false; readonly pause?: number | false };
}
