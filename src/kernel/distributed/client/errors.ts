// What a cluster computation raises when a task fails: the task's own error (as the local
// schedulers raise it), or KilledWorkerError when the task kept taking workers down with it.

import { unpackError } from "../../execution/wire";
import { type Key, formatKey, keyFromId } from "../../graph/keys";
import type { TaskFailure } from "../scheduler/state";

/** A task was running on `failures` workers that all died (Dask's KilledWorker, `allowed-failures`). */
export class KilledWorkerError extends Error {
  override name = "KilledWorkerError";
  constructor(
    /** The task's key, as the graph gave it (Dask's `KilledWorker.task`). */
    readonly key: Key,
    /** The last worker that died running it. */
    readonly lastWorker: string,
    readonly failures: number,
  ) {
    super(
      `Task ${formatKey(key)} was running on ${failures} workers that all died (the last: ${lastWorker}); ` +
        `it is taken to be what kills them (allowed failures: ${failures - 1}). ` +
        `Workers die when they run out of memory, crash, or are killed; their stderr shows why.`,
    );
  }
}

/** The error a failure raises in the caller. */
export function failureError(failure: TaskFailure): unknown {
  if (failure.kind === "killed") return new KilledWorkerError(keyFromId(failure.key), failure.worker, failure.failures);
  return unpackError(failure.error);
}
