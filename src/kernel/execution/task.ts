// One task as handed to whatever runs it (the calling thread, a pool, a cluster worker's task
// threads) and what comes back: the unit both the scheduler loop and the pools speak.

import type { TaskTiming, WorkerId } from "../callbacks/state";
import type { Key } from "../graph/keys";
import type { Expr } from "../graph/spec";

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
