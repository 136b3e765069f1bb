// The Executor the scheduler loop drives for "threads" and "processes": it checks a
// computation's functions before anything runs, ships each task with its inputs inlined, and
// sizes batches from how long this computation's tasks take.

import type { Plan } from "../../graph/plan";
import { forEachFunction } from "../../graph/spec";
import type { Executor, TaskJob, TaskOutcome } from "../executor";
import type { PoolClient, WorkerPool } from "./pool";
import { toWire } from "./ship";

/** Batches aim at this much work per worker message, so message costs stay small next to the work. */
const TARGET_BATCH_MS = 0.5;
const MAX_BATCH = 32;
/** Tasks this short have their results awaited awake (a NaN mean, no task seen yet, is not short). */
const QUICK_TASK_MS = 0.05;

export class PoolExecutor implements Executor, PoolClient {
  /** Mean task duration (ms, exponentially weighted); NaN until a task has run. */
  private meanTaskMs = Number.NaN;

  constructor(private readonly pool: WorkerPool) {}

  get threads(): number {
    return this.pool.size;
  }

  /** Tasks handed out at once: one per worker for long tasks, a few batches' worth for tiny ones. */
  get capacity(): number {
    return this.pool.size * this.batchSize;
  }

  get batchSize(): number {
    if (Number.isNaN(this.meanTaskMs)) return 1;
    return Math.max(1, Math.min(MAX_BATCH, Math.floor(TARGET_BATCH_MS / Math.max(this.meanTaskMs, 1e-3))));
  }

  get quickTasks(): boolean {
    return this.meanTaskMs < QUICK_TASK_MS;
  }

  recordDuration(ms: number): void {
    this.meanTaskMs = Number.isNaN(this.meanTaskMs) ? ms : 0.9 * this.meanTaskMs + 0.1 * ms;
  }

  /** Rejects a function that cannot run in a worker before any task starts. */
  async prepare(plan: Plan): Promise<void> {
    await this.pool.ready();
    plan.exprs.forEach((expr, node) => {
      if (expr !== undefined) forEachFunction(expr, (fn) => this.pool.functionId(fn, plan.keys[node]));
    });
  }

  submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void {
    const fnIds: number[] = [];
    let wire;
    try {
      wire = toWire(job.expr, job.values, (fn) => {
        const id = this.pool.functionId(fn, job.key);
        fnIds.push(id);
        return id;
      });
    } catch (error) {
      done({ node: job.node, ok: false, error, workerId: null });
      return;
    }
    this.pool.enqueue(this, job, wire, fnIds, done);
  }

  cancelRunning(): void {
    this.pool.cancel(this);
  }

  release(): void {
    this.pool.release(this);
  }
}
