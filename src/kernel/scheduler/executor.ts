// The contract between the scheduler loop and whatever runs tasks (this thread, a thread pool,
// a process pool), and the synchronous executor that runs them on the calling thread.

import { type TaskTiming, type WorkerId, runInsideTask } from "../callbacks/callback";
import type { Key } from "../graph/keys";
import type { Plan } from "../graph/plan";
import { type Expr, evaluate, isThenable } from "../graph/spec";

/** One task handed to an executor. */
export interface TaskJob {
  readonly node: number;
  readonly key: Key;
  readonly expr: Expr;
  /** Node → value; the job's references point into it. */
  readonly values: readonly unknown[];
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

  /** `isolate`: run tasks so that computations they start do not see this one's callbacks. */
  constructor(private readonly isolate: boolean) {}

  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void {
    const { node } = job;
    let value: unknown;
    try {
      value = this.isolate ? runInsideTask(() => evaluate(job.expr, job.values)) : evaluate(job.expr, job.values);
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
