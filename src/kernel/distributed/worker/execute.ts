// Running one task of a cluster worker on its task threads (the pool's "threads" workers): the
// function table the scheduler fills, the task's wire expression with its inputs put in, and the
// execute-layer measurements of Dask's fine performance metrics. Nothing here knows where inputs
// came from, so any worker kind (peer-to-peer, Redis) can run tasks with it.

import { now as machineNow } from "../../clock";
import { type Key, keyFromId } from "../../graph/keys";
import type { TaskTiming } from "../../callbacks/state";
import type { TaskOutcome } from "../../scheduler/executor";
import { AdaptiveBatching } from "../../execution/batching";
import { ownedBuffers } from "../../execution/buffers";
import { type PoolJob, WorkerPool } from "../../execution/pool";
import { CALL, type FnSpec, LIST, LITERAL, type PackedError, type WireExpr, packError } from "../../execution/wire";
import type { WireTask } from "../messages";
import type { Metric } from "../../metrics/context-meter";

export interface TaskRequest {
  readonly key: string;
  /** Dask's repr of the key, for errors. */
  readonly name: string;
  readonly task: WireTask;
  /** keyId → value of every key the expression references. */
  readonly inputs: ReadonlyMap<string, unknown>;
  /**
   * Inputs whose values this task alone holds (fetched for it, kept nowhere): their big buffers
   * move to the thread uncopied, and are detached here once it has them.
   */
  readonly givenInputs?: ReadonlySet<string>;
}

export interface TaskRun {
  readonly ok: boolean;
  /** The result, when ok. */
  readonly value: unknown;
  /** The error, when not ok. */
  readonly error: PackedError | undefined;
  /** The task thread's id (-1 when the task never reached one). */
  readonly thread: number;
  /** Machine clock, epoch seconds: handed to the pool, started and ended on the thread, outcome back here. */
  readonly submitted: number;
  readonly start: number;
  readonly end: number;
  readonly arrived: number;
  /** Whether start and end are the thread's own measurements; false when the task never ran on one or its thread died (both are then `arrived`). */
  readonly ranOnThread: boolean;
  /**
   * Seconds after `submitted` the task waited while its thread was still busy with tasks handed
   * over before it (their outcomes not back yet): time already accounted to those tasks.
   */
  readonly queued: number;
  /**
   * Execute-layer metrics: thread-cpu and thread-noncpu (net of what the task metered itself,
   * when the pool reports that), the task's own meters and digests, and "executor" (waiting for
   * a thread, and the trips to and from it).
   */
  readonly metrics: readonly Metric[];
}

/** The pool's TaskTiming, with the task's own metrics list where the pool reports one. */
type TimingWithMetrics = TaskTiming & { readonly metrics?: readonly (readonly [activity: string, value: number, unit: string])[] };

/**
 * The largest batch of tiny tasks a worker hands a thread: its threads sleep between batches
 * (below), so every batch costs a wake-up and a message each way, and the worker's main thread
 * has each batch's outcomes to handle anyway. Outcomes still come back every few ms (worker-main's
 * REPORT_AFTER_MS), and a batch only grows this long for tasks of a few µs (TARGET_BATCH_MS).
 */
const WORKER_MAX_BATCH = 256;

export class TaskRunner extends AdaptiveBatching {
  private readonly pool: WorkerPool;
  /** The scheduler's function ids → the pool's. */
  private readonly functionIds = new Map<number, number>();
  /** Thread id → when the outcome of its latest task arrived (machine clock, epoch s). */
  private readonly threadFreeAt = new Map<number, number>();
  private nextNode = 0;

  /** `measures`: false when the worker keeps no fine performance metrics (TSDASK_METRICS=off): tasks are timed, not measured. */
  constructor(
    readonly nthreads: number,
    private readonly measures = true,
  ) {
    super(WORKER_MAX_BATCH);
    // A worker shares the machine's cores with the scheduler and other workers: its threads sleep
    // between batches rather than wait awake. Results' big buffers come off their threads in
    // shared memory (copied there by the thread, whose own are released): the worker's memory is
    // its results, as its limit assumes, and its next tasks take them without a copy here. Other
    // big inputs go to the threads as moved copies. Either way no copy holds up this thread, and
    // with it the peers it serves and the fetches it reads (bench/redis-data).
    this.pool = new WorkerPool("threads", nthreads, { waitAwake: false, metrics: measures, shareResults: true, moveInputs: true });
  }

  /**
   * Tasks worth handing to the threads at once: one per thread, more when tasks are so short
   * that the pool does better sending them in batches.
   */
  get capacity(): number {
    return this.nthreads * this.batchSize;
  }

  /** Waits for the threads; resolves to the names shipped sources may use (for `register`). */
  async ready(): Promise<readonly string[]> {
    return (await this.pool.ready()).workerGlobals;
  }

  defineFunctions(functions: readonly (readonly [number, FnSpec])[]): void {
    for (const [id, spec] of functions) this.functionIds.set(id, this.pool.functionIdForSpec(spec));
  }

  /**
   * Starts `request` on a thread; `done` gets its outcome once. Returns a handle to cancel it.
   * `submitted`: when the task was handed over (machine clock, epoch s), if the caller read it.
   */
  run(request: TaskRequest, done: (run: TaskRun) => void, submitted = machineNow()): RunningTask {
    const job = new TaskJob(this.nextNode++, request.key);
    const fnIds: number[] = [];
    let wire: WireExpr;
    try {
      wire = this.toPoolExpr(request.task, request, fnIds);
    } catch (error) {
      done(failedRun(error, submitted));
      return new RunningTask(this.pool, job);
    }
    const given = request.givenInputs === undefined ? undefined : [...request.givenInputs].flatMap((key) => ownedBuffers(request.inputs.get(key)));
    this.pool.enqueue(this, job, wire, fnIds, (outcome) => done(this.toRun(outcome, submitted)), given);
    return new RunningTask(this.pool, job);
  }

  /** Stops the threads; tasks still running fail. */
  close(): void {
    this.pool.close(new Error("The worker is closing"));
  }

  /** The task's expression as the pool's threads take it; `fnIds` gets the pool ids of the functions it calls. */
  private toPoolExpr(task: WireTask, request: TaskRequest, fnIds: number[]): WireExpr {
    this.calledIds = fnIds;
    return mapWireTask<WireExpr, number>(task, request, this.poolExpr);
  }

  /** Where `poolExpr` collects the functions of the task being rebuilt. */
  private calledIds: number[] = [];
  /** Rebuilds a task for the pool (one builder for every task: a worker rebuilds thousands a second). */
  private readonly poolExpr: WireTaskBuilder<WireExpr, number> = {
    fn: (id) => this.functionIds.get(id),
    value: (value) => (Array.isArray(value) ? [LITERAL, value] : value),
    call: (poolId, args) => {
      this.calledIds.push(poolId);
      args.unshift(CALL, poolId);
      return args;
    },
    list: (items) => {
      items.unshift(LIST);
      return items;
    },
  };

  private toRun(outcome: TaskOutcome, submitted: number): TaskRun {
    const arrived = machineNow();
    const timing = outcome.timing;
    const thread = typeof outcome.workerId === "number" ? outcome.workerId : -1;
    // Tasks queued behind others on a thread (batches of short tasks) count their time from
    // their predecessor's outcome on: the thread's time is never accounted to two tasks.
    let queued = 0;
    if (thread >= 0) {
      queued = Math.max(0, Math.min(arrived, this.threadFreeAt.get(thread) ?? 0) - submitted);
      this.threadFreeAt.set(thread, arrived);
    }
    return {
      ok: outcome.ok,
      value: outcome.ok ? outcome.value : undefined,
      error: outcome.ok ? undefined : packError(outcome.error),
      thread,
      submitted,
      start: timing?.startTime ?? arrived,
      end: timing?.endTime ?? arrived,
      arrived,
      ranOnThread: timing !== undefined,
      queued,
      metrics: this.measures ? runMetrics(timing, submitted + queued, arrived) : [],
    };
  }
}

/** How a task's wire expression is rebuilt for where it runs (see mapWireTask). */
export interface WireTaskBuilder<T, F> {
  /** Function `id` (the scheduler's id) as the runner knows it; undefined if it was never defined there. */
  fn(id: number): F | undefined;
  value(value: unknown): T;
  call(fn: F, args: T[]): T;
  list(items: T[]): T;
}

/** `task` rebuilt by `build`, with its inputs put in as values; an error names the task. */
export function mapWireTask<T, F>(task: WireTask, request: TaskRequest, build: WireTaskBuilder<T, F>): T {
  switch (task[0]) {
    case "lit":
      return build.value(task[1]);
    case "ref": {
      const value = request.inputs.get(task[1]);
      if (value === undefined && !request.inputs.has(task[1])) {
        throw new Error(`Task ${request.name} refers to ${JSON.stringify(task[1])}, which is not among its inputs`);
      }
      return build.value(value);
    }
    case "call": {
      const fn = build.fn(task[1]);
      if (fn === undefined) throw new Error(`Task ${request.name} calls function ${task[1]}, which was never defined on this worker`);
      const args: T[] = [];
      for (let i = 2; i < task.length; i++) args.push(mapWireTask(task[i] as WireTask, request, build));
      return build.call(fn, args);
    }
    case "list": {
      const items: T[] = [];
      for (let i = 1; i < task.length; i++) items.push(mapWireTask(task[i] as WireTask, request, build));
      return build.list(items);
    }
    default:
      throw new Error(`Task ${request.name} has a malformed expression (${JSON.stringify((task as unknown[])[0])})`);
  }
}

/**
 * The execute-layer metrics of one task from what its thread measured, as Dask's worker digests
 * them: the task's own list when the pool reports one (thread-cpu and thread-noncpu net of the
 * task's own meters, and those meters), else thread-cpu and thread-noncpu from its CPU and wall
 * times; then "executor": the time between handing the task over (or its thread becoming free
 * for it) and its outcome that no other measurement explains (cloning it into the thread's
 * message, the trips to and from the thread). A task whose function returned a promise gets
 * what Dask gives a coroutine task, which it runs on the worker's event loop rather than in its
 * thread pool: its own time all as thread-noncpu and no executor (the rest becomes "other").
 */
export function runMetrics(timing: TimingWithMetrics | undefined, submitted: number, arrived: number): Metric[] {
  if (timing === undefined) return [["executor", Math.max(0, arrived - submitted), "seconds"]];
  const wall = Math.max(0, timing.endTime - timing.startTime);
  const metrics: Metric[] = [];
  if (timing.metrics !== undefined) {
    metrics.push(...timing.metrics);
  } else if (timing.cpuTime !== undefined) {
    const cpu = Math.min(timing.cpuTime, wall);
    metrics.push(["thread-cpu", cpu, "seconds"], ["thread-noncpu", wall - cpu, "seconds"]);
  } else {
    metrics.push(["thread-noncpu", wall, "seconds"]);
  }
  if (timing.awaited === true) return asCoroutine(metrics);
  let measured = 0;
  for (const [, value, unit] of metrics) if (unit === "seconds") measured += value;
  metrics.push(["executor", Math.max(0, arrived - submitted - measured), "seconds"]);
  return metrics;
}

/** `metrics` with thread-cpu folded into thread-noncpu: Dask meters a coroutine task by the wall clock only. */
function asCoroutine(metrics: readonly Metric[]): Metric[] {
  let noncpu = 0;
  const others: Metric[] = [];
  for (const metric of metrics) {
    const [activity, value, unit] = metric;
    if (unit === "seconds" && (activity === "thread-cpu" || activity === "thread-noncpu")) noncpu += value;
    else others.push(metric);
  }
  return [...others, ["thread-noncpu", noncpu, "seconds"]];
}

/** A task as the pool knows it: its key is only worked out from its id for an error message. */
class TaskJob implements PoolJob {
  constructor(
    readonly node: number,
    private readonly id: string,
  ) {}

  get key(): Key {
    return keyFromId(this.id);
  }
}

/** A task handed to the runner. */
export class RunningTask {
  constructor(
    private readonly pool: WorkerPool,
    private readonly job: PoolJob,
  ) {}

  /** Stops the task (its thread is replaced); its outcome arrives as a failure with `reason`. */
  cancel(reason: Error): void {
    this.pool.cancelTask(this.job, reason);
  }
}

/** The outcome of a task that could not be handed to a thread. */
export function failedRun(error: unknown, submitted: number): TaskRun {
  const arrived = machineNow();
  return { ok: false, value: undefined, error: packError(error), thread: -1, submitted, start: arrived, end: arrived, arrived, ranOnThread: false, queued: 0, metrics: [] };
}

