// The contract between the scheduler loop and whatever runs tasks (this thread, a thread pool,
// a process pool), and the synchronous executor that runs them on the calling thread.

import type { Key } from "../graph/keys";
import type { Plan } from "../graph/plan";
import { type Expr, evaluate, isThenable } from "../graph/spec";
import { type TaskLedger, TaskMeter, executeMetrics } from "../metrics/context-meter";
import { callingThread } from "../profiling/main-thread";
import type { TaskTiming, WorkerId } from "../callbacks/state";
import type { TaskJob, TaskOutcome } from "../execution/task";

export type { TaskJob, TaskOutcome };

export interface Executor {
  /** How many tasks may be handed over at once (read before each dispatch, so it may change). */
  readonly capacity: number;
  /** How many threads run the tasks (default 1): the budget fine performance metrics count idle time against. */
  readonly threads?: number;
  /** Checks the computation's tasks before any runs, e.g. that their functions can reach a worker. */
  prepare?(plan: Plan): void | Promise<void>;
  /** Starts a task; `done` is called exactly once, possibly before `submit` returns. */
  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void;
  /** Stops the tasks still running (abort, or an error elsewhere). */
  cancelRunning?(): void;
  /** Called once when the computation ends, however it ends; a promise delays the `finish` callbacks until it settles (it must not reject). */
  release?(): void | Promise<void>;
}

/**
 * Runs each task on the calling thread as soon as it is submitted. A task that returns a
 * promise is awaited; its worker id is null, as in Dask's get_sync.
 */
export class SyncExecutor implements Executor {
  readonly capacity = 1;
  readonly threads = 1;
  private readonly meter: TaskMeter | undefined;

  /**
   * `isolate`, when given, runs each task's code (the callbacks module's runInsideTask, so that
   * computations a task starts do not see this one's callbacks).
   * `measure`: report each task's timing and metrics (and let contextMeter record into them).
   */
  constructor(
    private readonly isolate?: <T>(fn: () => T) => T,
    measure = false,
  ) {
    if (measure) this.meter = (mainThreadMeter ??= new TaskMeter());
  }

  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void {
    // While someone profiles, this thread's samples are told apart by the task they fall in.
    const task = callingThread.taskStarted(job.key);
    if (task >= 0) done = endingTask(task, done);
    if (this.meter !== undefined) {
      this.submitMeasured(job, done, this.meter);
      return;
    }
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

  private submitMeasured(job: TaskJob, done: (outcome: TaskOutcome) => void, meter: TaskMeter): void {
    const { node } = job;
    const ledger = meter.begin();
    const settle = (ok: boolean, result: unknown): void => {
      const timing = timingOf(meter, ledger);
      done(ok ? { node, ok, value: result, workerId: null, timing } : { node, ok, error: result, workerId: null, timing });
    };
    let value: unknown;
    try {
      const isolate = this.isolate;
      value = meter.run(ledger, isolate !== undefined ? (expr, values) => isolate(() => evaluate(expr, values)) : evaluate, job.expr, job.values);
    } catch (error) {
      settle(false, error);
      return;
    }
    if (isThenable(value)) {
      value.then(
        (result) => settle(true, result),
        (error: unknown) => settle(false, error),
      );
    } else {
      settle(true, value);
    }
  }
}

/** One meter for the main thread: its clock state is the thread's, whichever computation runs. */
let mainThreadMeter: TaskMeter | undefined;

function timingOf(meter: TaskMeter, ledger: TaskLedger): TaskTiming {
  meter.end(ledger);
  const wall = (ledger.end - ledger.start) / 1000;
  const cpu = ledger.cpu / 1000;
  return {
    startTime: ledger.start / 1000,
    endTime: ledger.end / 1000,
    cpuTime: Number.isNaN(cpu) ? undefined : cpu,
    metrics: executeMetrics(wall, cpu, ledger),
  };
}

function endingTask(task: number, done: (outcome: TaskOutcome) => void): (outcome: TaskOutcome) => void {
  return (outcome) => {
    callingThread.taskEnded(task);
    done(outcome);
  };
}
