// The Executor the scheduler loop drives for "threads" and "processes": it checks a
// computation's functions before anything runs, ships each task with its inputs inlined, and
// sizes batches from how long this computation's tasks take.

import type { Plan } from "../graph/plan";
import { forEachFunction } from "../graph/spec";
import { profiling } from "../profiling/hub";
import type { Executor, TaskJob, TaskOutcome } from "./executor";
import { AdaptiveBatching } from "../execution/batching";
import type { WorkerPool } from "../execution/pool";
import { toWire } from "../execution/ship";

export class PoolExecutor extends AdaptiveBatching implements Executor {
  constructor(private readonly pool: WorkerPool) {
    super();
  }

  get threads(): number {
    return this.pool.size;
  }

  /** Tasks handed out at once: one per worker for long tasks, a few batches' worth for tiny ones. */
  get capacity(): number {
    return this.pool.size * this.batchSize;
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

  /** Waits for the workers' statistical profiles when someone profiles, so they are complete when callbacks finish. */
  release(): void | Promise<void> {
    this.pool.release(this);
    if (profiling.active !== undefined) return this.pool.collectProfiles();
  }
}
