// The scheduler loop, Dask's get_async: one state machine shared by every executor. Callbacks
// fire on the calling thread: pretask at dispatch, posttask once the state holds the result.

import type { Callback } from "../callbacks/callback";
import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import { type Plan, type Request, buildPlan } from "../graph/plan";
import { noteComputation } from "../metrics/computations";
import type { Executor, TaskOutcome } from "./executor";
import type { State } from "../callbacks/state";
import { SchedulerState } from "./state";

/** A computation stopped by its AbortSignal or by an interrupt (SIGINT). */
export class AbortError extends Error {
  override name = "AbortError";
  constructor(reason?: unknown) {
    super(reason instanceof Error ? `The computation was aborted: ${reason.message}` : "The computation was aborted", {
      cause: reason,
    });
  }
}

export interface LoopOptions {
  readonly graph: Graph;
  readonly keys: Key | readonly unknown[];
  readonly executor: Executor;
  readonly callbacks: readonly Callback[];
  readonly signal?: AbortSignal;
  readonly cache?: Map<Key, unknown>;
}

/** Longest stretch of synchronous tasks before the loop lets timers and I/O run. */
const YIELD_EVERY_MS = 20;

/** What finish() sees when the graph was rejected before a state existed (Dask passes `{}`). */
function emptyState(graph: Graph): State {
  return new SchedulerState(buildPlan(graph, [])).view;
}

export async function runLoop(options: LoopOptions): Promise<unknown> {
  const { graph, executor, callbacks, signal } = options;
  const started: Callback[] = [];
  let state: State | undefined;
  let scheduler: SchedulerState | undefined;
  let succeeded = false;
  let failure: unknown;
  const outcomes: TaskOutcome[] = [];
  let wake: (() => void) | undefined;
  const onOutcome = (outcome: TaskOutcome): void => {
    outcomes.push(outcome);
    if (wake !== undefined) {
      const resume = wake;
      wake = undefined;
      resume();
    }
  };
  const onAbort = (): void => wake?.();
  signal?.addEventListener("abort", onAbort);
  try {
    for (const cb of callbacks) {
      cb.start?.(graph);
      started.push(cb);
    }
    const plan = buildPlan(graph, options.keys, { cache: options.cache });
    await executor.prepare?.(plan);
    scheduler = new SchedulerState(plan, options.cache);
    state = scheduler.view;
    noteComputation(state, executor.threads ?? 1);
    for (const cb of callbacks) cb.startState?.(graph, state);

    const pretasks = callbacks.filter((cb) => cb.pretask !== undefined);
    const posttasks = callbacks.filter((cb) => cb.posttask !== undefined);
    const { keys, exprs } = plan;
    const values = scheduler.values;
    let lastYield = performance.now();

    while (scheduler.hasWork()) {
      if (signal?.aborted) throw new AbortError(signal.reason);
      while (scheduler.running < executor.capacity && scheduler.ready.length > 0) {
        const node = scheduler.startNext();
        const key = keys[node];
        for (const cb of pretasks) cb.pretask!(key, graph, state);
        executor.submit({ node, key, expr: exprs[node]!, values }, onOutcome);
      }
      if (outcomes.length === 0) {
        if (scheduler.running === 0) throw new Error("Found no accessible jobs in the graph");
        if (signal?.aborted) continue; // a task aborted synchronously: stop at the top of the loop
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      for (let i = 0; i < outcomes.length; i++) {
        const outcome = outcomes[i];
        if (!outcome.ok) {
          for (const cb of callbacks) {
            try {
              cb.taskError?.(keys[outcome.node], outcome.error, graph, state, outcome.workerId, outcome);
            } catch {
              // The task's error is the one to raise (see TaskErrorHook).
            }
          }
          throw outcome.error;
        }
        scheduler.finishTask(outcome.node, outcome.value);
        // The outcome doubles as the TaskInfo (it carries `timing`): no allocation per task.
        for (const cb of posttasks) cb.posttask!(keys[outcome.node], outcome.value, graph, state, outcome.workerId, outcome);
      }
      outcomes.length = 0;
      // Let timers (progress bars), abort signals and interrupts through during long synchronous runs.
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
    }
    succeeded = true;
    return collect(plan, plan.request, values);
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (!succeeded && scheduler !== undefined && scheduler.running > 0) executor.cancelRunning?.();
    // Measurements workers send after their results (statistical profiles) arrive before `finish`.
    const released = executor.release?.();
    if (released !== undefined) await released;
    let finishError: unknown;
    let finishFailed = false;
    for (const cb of started) {
      try {
        state ??= emptyState(graph);
        cb.finish?.(graph, state, !succeeded, failure);
      } catch (error) {
        if (!finishFailed) [finishError, finishFailed] = [error, true];
      }
    }
    // An error in `finish` matters only when nothing else went wrong first.
    if (finishFailed && succeeded) throw finishError;
  }
}

function collect(plan: Plan, request: Request, values: readonly unknown[]): unknown {
  if (typeof request === "number") return values[request];
  return request.map((item) => collect(plan, item, values));
}
