// What a scheduler shows its listeners (callbacks, diagnostics, the dashboard feed): Dask's
// read-only State view and the timing a worker measured for a task. The schedulers fill these
// in; listeners only read them, so the types live here, below both.

import type { Key } from "../graph/keys";
import type { Metric } from "../metrics/context-meter";

/** What callbacks see; the field names and meanings are Dask's. Read-only views, cheap to hold. */
export interface State {
  /** key → the keys it depends on (constant). */
  readonly dependencies: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → the keys that depend on it (constant). */
  readonly dependents: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** task → dependencies not computed yet; a task leaves when it becomes ready. */
  readonly waiting: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → dependents that have not run yet; a key leaves when its value is released. */
  readonly waitingData: ReadonlyMap<Key, ReadonlySet<Key>>;
  /** key → value, for data and results not yet released. */
  readonly cache: ReadonlyMap<Key, unknown>;
  /** Tasks ready to run; the last one runs next. A fresh array on each read. */
  readonly ready: readonly Key[];
  readonly running: ReadonlySet<Key>;
  readonly finished: ReadonlySet<Key>;
  readonly released: ReadonlySet<Key>;
}

/** The id of the thread or process that ran a task; `null` with the sync scheduler. */
export type WorkerId = number | string | null;

/** What the worker measured while running a task (the executor hooks the diagnostics read). */
export interface TaskTiming {
  /** Wall clock, epoch seconds, on the clock every thread and process shares. */
  readonly startTime: number;
  readonly endTime: number;
  /** CPU seconds spent by the thread that ran the task, when the platform can tell. */
  readonly cpuTime?: number;
  /** Bytes of arguments sent to and of the result received from the worker. */
  readonly bytesIn?: number;
  readonly bytesOut?: number;
  /**
   * The task's execute-layer fine performance metrics, measured where it ran: thread-cpu and
   * thread-noncpu (outside the user's meters), and the user's meters and digests (contextMeter).
   */
  readonly metrics?: readonly Metric[];
  /**
   * For the first task of a pool batch: seconds the calling thread spent cloning the batch into
   * the pool worker's message (the local schedulers show it as "serialize"; a cluster worker, as
   * Dask's, counts handing a task to its thread as "executor").
   */
  readonly postSeconds?: number;
  /** The task's function returned a promise: it ran across awaits (Dask runs such tasks on the worker's event loop). */
  readonly awaited?: boolean;
}
