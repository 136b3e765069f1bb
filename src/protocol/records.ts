// The records the distributed half produces and every consumer reads: the scheduler and workers
// (kernel), the views (browser), the notebook payloads, the performance report and the dashboard.
// Plain JSON data. Times are epoch seconds (float) on the scheduler's clock; sizes are bytes.
// Keys are shown as Dask's repr (`('x', 0, 1)`) and are untrusted text wherever rendered.

/** A phase of a task on a worker, as the task stream draws it (seed 003's colours in brackets). */
export type StartStopAction =
  | "compute" // coloured by task prefix
  | "transfer" // an input fetched from a peer or from Redis (red)
  | "disk-read" // an input read back from the spill folder (orange)
  | "disk-write" // the result spilled right away (orange)
  | "deserialize"; // inputs decoded (grey)

export interface StartStop {
  readonly action: StartStopAction;
  readonly start: number;
  readonly stop: number;
  /** For "transfer": the worker (or "redis") the input came from. */
  readonly source?: string;
}

/** One task that left processing, Dask's task-stream record (`TaskStreamPlugin.buffer` entries). */
export interface TaskStreamRecord {
  /**
   * The key as Dask's task stream gives it, Python's `str(key)`: a string key is itself
   * (`"len-0"`, equal to the Future's key), a tuple key its repr (`"('x', 0)"`).
   */
  readonly key: string;
  /** `keyPrefix(key)`: the colour group. */
  readonly prefix: string;
  /** Worker address (cluster), or the executor's worker id as text (local schedulers: "main", a thread id, a pid). */
  readonly worker: string;
  /** The thread within the worker that ran the task (a worker-thread id); rows are (worker, thread) pairs. */
  readonly thread: number;
  readonly status: "OK" | "error";
  /** Size of the result (0 when erred). */
  readonly nbytes: number;
  /** The result's type name (`Float64Array`, `number`, `Object`…). */
  readonly type: string;
  readonly startstops: readonly StartStop[];
  /** The span the task belongs to (see SpanRecord.id); absent where spans are not tracked. */
  readonly span?: string;
}

/** One batch of keys moved between two workers (Dask's `transfer_incoming_log` / `transfer_outgoing_log`). */
export interface TransferLogEntry {
  readonly start: number;
  readonly stop: number;
  readonly middle: number;
  /** Seconds, at least 0.001 (Dask's floor, so bandwidth stays finite). */
  readonly duration: number;
  /** The peer: the worker that sent (incoming log) or asked (outgoing log); "redis" for the Redis transport. */
  readonly who: string;
  /** Each key as Dask's log holds it (Python's `str(key)`: `x`, `('x', 0)`) → its bytes. */
  readonly keys: Readonly<Record<string, number>>;
  /** Sum of `keys`. */
  readonly total: number;
  /** Bytes that actually crossed the wire (after compression, framing included). */
  readonly compressed: number;
  /** total / duration, bytes per second. */
  readonly bandwidth: number;
  /** Type names of the values moved, for "bandwidth by type". */
  readonly types?: readonly string[];
}

/** Where a fine performance metric was measured (Dask's first key element). */
export type MetricContext = "execute" | "gather-dep" | "get-data" | "memory-monitor";

/**
 * One fine performance metric, Dask's tuple key as named fields:
 * worker `digestsTotal`  ("execute", span, prefix, activity, unit) / (context, activity, unit);
 * scheduler `cumulativeWorkerMetrics` (no span); a span's metrics (execute only, no span field).
 */
export interface MetricRecord {
  readonly context: MetricContext;
  /** Span id: only in workers' digests (execute context). */
  readonly span?: string;
  /** Task prefix: execute context only; "N/A" for the synthetic idle row, as in Dask. */
  readonly prefix?: string;
  /** thread-cpu, thread-noncpu, idle, executor, other, disk-read, … or any label a user meters. */
  readonly activity: string;
  /** "seconds", "bytes", "count", or any unit a user digests. */
  readonly unit: string;
  /** Integers stay integers (Dask's ints-stay-ints rule). */
  readonly value: number;
}

/** Task counts by scheduler state. */
export type TaskStateCounts = Readonly<Partial<Record<"released" | "waiting" | "queued" | "processing" | "memory" | "erred" | "forgotten", number>>>;

/** A span (Dask's `Span`): a named block of the user's code whose tasks are accounted together. */
export interface SpanRecord {
  readonly id: string;
  /** The names from the outermost span in: `["load", "parse"]`; `["default"]` for untagged tasks. */
  readonly name: readonly string[];
  readonly parent: string | null;
  readonly children: readonly string[];
  /** When the span was opened (its first graph submitted). */
  readonly enqueued: number;
  /** First task start; 0 until a task has finished (Dask's convention). */
  readonly start: number;
  /** Last task stop when done, else now. */
  readonly stop: number;
  readonly done: boolean;
  /** Counts over the span's whole subtree. */
  readonly states: TaskStateCounts;
  /** Σ (interval × threads on the cluster) while the span was active: the "wall × threads" budget. */
  readonly activeCpuSeconds: number;
  /**
   * The intervals behind activeCpuSeconds, `[start, stop, threads]` (Dask's `nthreads_intervals`):
   * what lets a viewer merge spans (a union of their intervals) without counting overlaps twice.
   */
  readonly intervals?: readonly (readonly [start: number, stop: number, threads: number])[];
  readonly nbytesTotal: number;
  /** The subtree's execute metrics (no span field), idle included as ("N/A", "idle or other spans"). */
  readonly metrics: readonly MetricRecord[];
}

/** Dask's profile tree node (`distributed.profile`): one per function, counts are samples. */
export interface ProfileNode {
  /** `name;filename;line` of the function's first line: nodes are per function, not per line. */
  readonly identifier: string;
  /** Samples in which this function was on the stack (the root: all samples). */
  readonly count: number;
  readonly description: {
    readonly filename: string;
    readonly name: string;
    readonly line_number: number;
    readonly line: string;
  };
  readonly children: Readonly<Record<string, ProfileNode>>;
}

/** Sample counts over time (Dask's `profile_metadata`), for the profile's activity timeline. */
export interface ProfileTimelinePoint {
  /** Start of the cycle window (profileCycleInterval, 1 s by default). */
  readonly time: number;
  /** Samples in the window, all prefixes. */
  readonly count: number;
  /** Task prefix → samples in the window. */
  readonly byPrefix: Readonly<Record<string, number>>;
}

/** One point of a MemorySampler series. */
export interface MemorySample {
  readonly label: string;
  readonly time: number;
  readonly bytes: number;
  /** The MemoryState measure sampled (memory.ts MemoryMeasure: "process", "managed"…); absent: "process". */
  readonly measure?: string;
}

/** Dask's MemoryState measures: cluster-wide sums over workers (bytes). */
export interface ClusterMemory {
  /** Resident set size of the worker processes. */
  readonly process: number;
  /** Bytes of results held in RAM (their estimated sizes). */
  readonly managed: number;
  /** process − managed. */
  readonly unmanaged: number;
  /** The least unmanaged memory seen over the last 30 s. */
  readonly unmanagedOld: number;
  readonly unmanagedRecent: number;
  /** Bytes of results spilled to disk. */
  readonly spilled: number;
  /** managed + spilled. */
  readonly managedTotal: number;
  /** managed + unmanagedOld. */
  readonly optimistic: number;
}

export type WorkerStatus = "running" | "paused" | "closing" | "closed";

/** A worker as the scheduler last heard of it (heartbeats). */
export interface WorkerRecord {
  /** Where peers reach it; the id everywhere else (task stream, transfer logs). */
  readonly address: string;
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly nthreads: number;
  readonly memoryLimit: number;
  readonly status: WorkerStatus;
  /** Latest heartbeat time (scheduler clock). */
  readonly lastSeen: number;
  /** Estimated (worker clock − scheduler clock), seconds: what the worker subtracts from its times. */
  readonly clockOffset: number;
  /** CPU use of the worker process, % of one core. */
  readonly cpu: number;
  readonly memory: Omit<ClusterMemory, "unmanagedOld" | "unmanagedRecent" | "optimistic">;
  /** Task counts on the worker (executing, ready, waiting, in memory, fetching…). */
  readonly tasks: Readonly<Record<string, number>>;
  /** Bytes received from and sent to peers since the worker started. */
  readonly transferredIn: number;
  readonly transferredOut: number;
}

/** The whole cluster's CPU and memory at one moment (Dask's SystemMonitor, summed over the workers). */
export interface SystemSample {
  /** Scheduler clock, epoch seconds: when a heartbeat brought news. */
  readonly time: number;
  /** % of one core, summed over the workers (each as of its latest heartbeat). */
  readonly cpu: number;
  /** Resident bytes of the worker processes. */
  readonly memory: number;
  readonly workers: number;
}

/** Bandwidth estimates (bytes/s), Dask's "Bandwidth Types" and "Bandwidth Workers". */
export interface BandwidthSummary {
  readonly total: number;
  readonly byType: readonly { readonly type: string; readonly bandwidth: number }[];
  readonly byWorkers: readonly { readonly source: string; readonly destination: string; readonly bandwidth: number }[];
}

/** One line of a worker's log (Dask's `get_logs(timestamps=True)`: time, level, message). */
export interface WorkerLogLine {
  /** Epoch seconds on the scheduler's clock. */
  readonly time: number;
  readonly level: "INFO" | "WARNING" | "ERROR";
  /** Untrusted text (it may quote a task's error or a key): shown as text, never as markup. */
  readonly message: string;
}
