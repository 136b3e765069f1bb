// Where a task of a Redis cluster goes: placement follows data, as on LocalCluster (Dask's
// decide_worker: the worker already holding most of the task's input bytes, weighed against how
// busy it is), within what a shared BullMQ queue allows. A task whose inputs workers keep (./held)
// goes to the queue of its own of the worker keeping most of those bytes, unless that worker
// already has as many tasks sent its way as PLACED_PER_THREAD × its threads; every other task goes
// to the shared queue, which any worker takes from, and whoever takes it fetches what it lacks.

/** A task's input that a worker keeps. */
export interface KeptInput {
  readonly holder: string;
  readonly nbytes: number;
}

/** What placement knows of a worker: its threads, and the tasks sent to its own queue not yet reported. */
export interface WorkerLoad {
  readonly nthreads: number;
  readonly placed: number;
}

/**
 * Tasks a worker may have waiting in its own queue per thread, beyond which the next one goes to
 * the shared queue: a busy holder's tasks then run elsewhere, fetching their inputs (Dask weighs
 * the transfer against the occupancy in the same spirit).
 */
export const PLACED_PER_THREAD = 2;

/**
 * The worker whose queue should get a task with these kept inputs, or undefined for the shared
 * queue. `load(worker)` is undefined for a worker not registered (gone: its inputs are lost anyway).
 */
export function placeByData(inputs: readonly KeptInput[], load: (worker: string) => WorkerLoad | undefined): string | undefined {
  const bytesOn = new Map<string, number>();
  for (const { holder, nbytes } of inputs) bytesOn.set(holder, (bytesOn.get(holder) ?? 0) + nbytes);
  let best: string | undefined;
  let most = -1;
  for (const [holder, bytes] of bytesOn) {
    // Ties go to the name first in order, so that a decision does not depend on the inputs' order.
    if (bytes > most || (bytes === most && best !== undefined && holder < best)) [best, most] = [holder, bytes];
  }
  if (best === undefined) return undefined;
  const busy = load(best);
  if (busy === undefined || busy.placed >= PLACED_PER_THREAD * busy.nthreads) return undefined;
  return best;
}
