// `get(dsk, keys, opts)`: the public entry point. It chooses the scheduler as Dask's get_scheduler
// does (the call's option, the scoped config, the global config, an open Client, the collection's
// default), gathers the callbacks and runs the loop on an executor, or hands the graph over.

import { AsyncLocalStorage } from "node:async_hooks";
import { activeCallbacks, runInsideTask } from "../callbacks/callback";
import { inNotebook } from "../display";
import { wantsTaskMetrics } from "../metrics/computations";
import { Graph, type GraphInput } from "../graph/graph";
import type { Key } from "../graph/keys";
import { config } from "./config";
import { type Executor, SyncExecutor } from "./executor";
import { AbortError, runLoop } from "./loop";
import {
  type GetFunction,
  type GetOptions,
  type GraphScheduler,
  type SchedulerChoice,
  type SchedulerName,
  checkGetOptions,
  isGraphScheduler,
} from "./options";
import { getPool } from "../execution";
import { PoolExecutor } from "./pool-executor";

export type { GetFunction, GetOptions, GraphRun, GraphScheduler, SchedulerChoice, SchedulerName } from "./options";

/**
 * Makes the executor for one computation. `isolate`: tasks must not see this computation's
 * callbacks. `measure`: a callback wants each task's timing and metrics (pools always report them).
 */
export type ExecutorFactory = (options: GetOptions, isolate: boolean, measure: boolean) => Executor;
const factories = new Map<SchedulerName, ExecutorFactory>([
  ["sync", (_options, isolate, measure) => new SyncExecutor(isolate ? runInsideTask : undefined, measure)],
  ["threads", (options) => new PoolExecutor(getPool("threads", options.numWorkers))],
  ["processes", (options) => new PoolExecutor(getPool("processes", options.numWorkers))],
]);

export function registerExecutor(name: SchedulerName, factory: ExecutorFactory): void {
  factories.set(name, factory);
}

let defaultGraphScheduler: GraphScheduler | null = null;

/** The open Client registers itself here; null when none is open. The last one connected wins, as in Dask. */
export function setDefaultGraphScheduler(scheduler: GraphScheduler | null): void {
  if (scheduler !== null && !isGraphScheduler(scheduler)) {
    throw new TypeError("setDefaultGraphScheduler takes a GraphScheduler (an object with description and run()) or null");
  }
  defaultGraphScheduler = scheduler;
}

/**
 * Where a computation runs, first answer wins: the call's `scheduler` option, the innermost
 * withConfig block, config.set, an open Client, then the collection's own default.
 */
function chooseScheduler(options: GetOptions, collectionDefault: SchedulerName): SchedulerChoice {
  return options.scheduler ?? config.get("scheduler") ?? defaultGraphScheduler ?? collectionDefault;
}

/**
 * Computes `keys` of the graph `dsk`. `keys` is one key, or a (nested) list of keys, and the
 * result has the same shape: `await get(dsk, [["x"], "y"])` → `[[1], 2]`. Raw graphs run on the
 * "sync" scheduler unless told otherwise (their functions often cannot travel to a worker).
 */
export function get(dsk: GraphInput, keys: Key | readonly unknown[], options: GetOptions = {}): Promise<unknown> {
  return computeGraph(dsk, keys, options, "sync");
}

/** get() for a collection whose own default scheduler is `collectionDefault` (Dask's `__dask_scheduler__`). */
export async function computeGraph(
  dsk: GraphInput,
  keys: Key | readonly unknown[],
  options: GetOptions,
  collectionDefault: SchedulerName,
): Promise<unknown> {
  checkGetOptions(options);
  const scheduler = chooseScheduler(options, collectionDefault);
  if (typeof scheduler === "function") return callGetFunction(scheduler, dsk, keys, options);
  const graph = Graph.from(dsk);
  const callbacks = activeCallbacks(options.callbacks);
  const interrupt = listenForInterrupt();
  const signal = options.signal === undefined ? interrupt.signal : AbortSignal.any([options.signal, interrupt.signal]);
  try {
    if (typeof scheduler === "object") {
      if (options.cache !== undefined) throw new TypeError(`Option cache works with the local schedulers only, not with ${scheduler.description}`);
      const { workers, allowOtherWorkers } = options;
      return await scheduler.run({ graph, keys, callbacks, signal, ...(workers === undefined ? {} : { workers }), ...(allowOtherWorkers === undefined ? {} : { allowOtherWorkers }) });
    }
    for (const name of ["workers", "allowOtherWorkers"] as const) {
      if (options[name] !== undefined) throw new TypeError(`Option ${name} works with a distributed Client only, not with the "${scheduler}" scheduler`);
    }
    const factory = factories.get(scheduler);
    if (factory === undefined) {
      throw new Error(`Scheduler "${scheduler}" is not available; this build has: ${[...factories.keys()].join(", ")}`);
    }
    const numWorkers = options.numWorkers ?? config.get("numWorkers");
    const executor = factory({ ...options, numWorkers }, callbacks.length > 0, wantsTaskMetrics(callbacks));
    return await runLoop({ graph, keys, executor, callbacks, signal, cache: options.cache });
  } finally {
    interrupt.stop();
  }
}

/** The get functions running here, so one that config chose again from inside itself is caught, not looped. */
const runningGetFunctions = new AsyncLocalStorage<ReadonlySet<GetFunction>>();

function callGetFunction(fn: GetFunction, dsk: GraphInput, keys: Key | readonly unknown[], options: GetOptions): Promise<unknown> {
  const running = runningGetFunctions.getStore() ?? new Set<GetFunction>();
  if (running.has(fn)) {
    throw new TypeError(
      `The scheduler function ${fn.name || "(anonymous)"} calls get() without choosing a scheduler, so it was chosen again: ` +
        'pass one in its call, e.g. get(dsk, keys, { ...options, scheduler: "threads" })',
    );
  }
  const { scheduler: _chosen, ...rest } = options;
  return runningGetFunctions.run(new Set([...running, fn]), () => fn(dsk, keys, rest));
}

// A kernel interrupt (SIGINT) aborts the computations running in a tslab kernel. In a plain
// Node script Ctrl-C keeps its default meaning (exit), so a stuck synchronous task can still be killed.
const interruptible = new Set<AbortController>();
let listeningForSigint = false;

function onSigint(): void {
  for (const controller of interruptible) controller.abort(new Error("Interrupted (SIGINT)"));
  interruptible.clear();
}

function listenForInterrupt(): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  if (!inNotebook()) return { signal: controller.signal, stop() {} };
  if (!listeningForSigint) {
    // One listener for the kernel's lifetime, added outside the cell's synchronous part: while that
    // runs, Node's vm has taken the SIGINT listeners away, and adding or removing one then leaves
    // the kernel to die on the next interrupt (seen with tslab 1.0.22 on Node 20).
    listeningForSigint = true;
    setImmediate(() => process.on("SIGINT", onSigint));
  }
  interruptible.add(controller);
  return { signal: controller.signal, stop: () => interruptible.delete(controller) };
}

export { AbortError };
