// What the fine performance metrics need to know about a running computation beyond the callback
// hooks: how many threads run its tasks. The scheduler loop notes it; callbacks look it up by the
// computation's state object. And the marker a callback sets to ask for measured tasks.

/** A callback whose property under this symbol is true asks executors that measure tasks only on demand (sync) to do so. */
export const MEASURES_TASKS: unique symbol = Symbol.for("tsdask.measuresTasks") as never;

/** True when some callback asks for each task's timing and metrics. */
export function wantsTaskMetrics(callbacks: readonly object[]): boolean {
  return callbacks.some((cb) => (cb as { [MEASURES_TASKS]?: unknown })[MEASURES_TASKS] === true);
}

const threadsByState = new WeakMap<object, number>();

/** Called by the loop once a computation's state exists. */
export function noteComputation(state: object, threads: number): void {
  threadsByState.set(state, threads);
}

/** Threads running the computation whose state this is (1 when unknown). */
export function threadsOf(state: object): number {
  return threadsByState.get(state) ?? 1;
}
