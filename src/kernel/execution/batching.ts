// How many tasks a pool client hands a worker at once, from how long its tasks take: one for
// long tasks, up to a batch of `maxBatch` when tasks are so short that messages would dominate.

import type { PoolClient } from "./pool";

/** Batches aim at this much work per worker message, so message costs stay small next to the work. */
const TARGET_BATCH_MS = 0.5;
/** The largest batch by default (a client may allow larger ones, see the constructor). */
const MAX_BATCH = 32;
/** Tasks this short have their results awaited awake (a NaN mean, no task seen yet, is not short). */
const QUICK_TASK_MS = 0.05;

export class AdaptiveBatching implements PoolClient {
  /** Mean task duration (ms, exponentially weighted); NaN until a task has run. */
  private meanTaskMs = Number.NaN;

  constructor(private readonly maxBatch: number = MAX_BATCH) {}

  get batchSize(): number {
    if (Number.isNaN(this.meanTaskMs)) return 1;
    return Math.max(1, Math.min(this.maxBatch, Math.floor(TARGET_BATCH_MS / Math.max(this.meanTaskMs, 1e-3))));
  }

  get quickTasks(): boolean {
    return this.meanTaskMs < QUICK_TASK_MS;
  }

  recordDuration(ms: number): void {
    this.meanTaskMs = Number.isNaN(this.meanTaskMs) ? ms : 0.9 * this.meanTaskMs + 0.1 * ms;
  }
}
