// The contract between the scheduler loop and whatever runs tasks (this thread, a thread pool,
// a process pool), and the synchronous executor that runs them on the calling thread.

import type { Key } from "../graph/keys";
import type { Plan } from "../graph/plan";
import { type Expr, evaluate, isThenable } from "../graph/spec";

/** The id of the thread or process that ran a task; `null` with the sync scheduler. */
export type WorkerId = number | string | null;

/** One task handed to an executor. */
export interface TaskJob {
  readonly node: number;
  readonly key: Key;
  readonly expr: Expr;
  /** Node → value; the job's references point into it. */
  readonly values: readonly unknown[];
}

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
}

export type TaskOutcome =
  | { readonly node: number; readonly ok: true; readonly value: unknown; readonly workerId: WorkerId; readonly timing?: TaskTiming }
  | { readonly node: number; readonly ok: false; readonly error: unknown; readonly workerId: WorkerId; readonly timing?: TaskTiming };

export interface Executor {
  /** How many tasks may be handed over at once (read before each dispatch, so it may change). */
  readonly capacity: number;
  /** Checks the computation's tasks before any runs, e.g. that their functions can reach a worker. */
  prepare?(plan: Plan): void | Promise<void>;
  /** Starts a task; `done` is called exactly once, possibly before `submit` returns. */
  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void;
  /** Stops the tasks still running (abort, or an error elsewhere). */
  cancelRunning?(): void;
  /** Called once when the computation ends, however it ends. */
  release?(): void;
}

/**
 * Runs each task on the calling thread as soon as it is submitted. A task that returns a
 * promise is awaited; its worker id is null, as in Dask's get_sync.
 */
export class SyncExecutor implements Executor {
  readonly capacity = 1;

  /**
   * `isolate`, when given, runs each task's code (the callbacks module's runInsideTask, so that
   * computations a task starts do not see this one's callbacks).
   */
  constructor(private readonly isolate?: <T>(fn: () => T) => T) {}

  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void {
    const { node } = job;
    let value: unknown;
    try {
      value = this.isolate !== undefined ? this.isolate(() => evaluate(job.expr, job.values)) : evaluate(job.expr, job.values);
    } catch (error) {
      done({ node, ok: false, error, workerId: null });
      return;
    }
    if (isThenable(value)) {
      value.then(
        (result) => done({ node, ok: true, value: result, workerId: null }),
        (error: unknown) => done({ node, ok: false, error, workerId: null }),
      );
    } else {
      done({ node, ok: true, value, workerId: null });
    }
  }
}
