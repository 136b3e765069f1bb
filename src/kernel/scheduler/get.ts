// `get(dsk, keys, opts)`: the public entry point that picks an executor, gathers the callbacks
// and runs the loop; plus interrupt handling for the notebook kernel.

import { type Callback, activeCallbacks } from "../callbacks/callback";
import { inNotebook } from "../display";
import { Graph, type GraphInput } from "../graph/graph";
import type { Key } from "../graph/keys";
import { type Executor, SyncExecutor } from "./executor";
import { AbortError, runLoop } from "./loop";
import { getPool } from "./pool";
import { PoolExecutor } from "./pool/executor";

export type SchedulerName = "sync" | "threads" | "processes";

/** One computation for a scheduler that runs whole graphs itself (a cluster's Client). */
export interface GraphRun {
  readonly graph: Graph;
  readonly keys: Key | readonly unknown[];
  readonly callbacks: readonly Callback[];
  readonly signal: AbortSignal;
}

/** A scheduler `get` hands whole graphs to, instead of running its loop: a cluster's Client. */
export interface GraphScheduler {
  /** For messages: "Client(LocalCluster 'local', 2 workers)". */
  readonly description: string;
  /** Computes `keys` of `graph` with the result shaped like `keys`, as `get` does. */
  run(request: GraphRun): Promise<unknown>;
}

let defaultGraphScheduler: GraphScheduler | null = null;

/** Makes `scheduler` the default for computations that name none (an open Client); null: back to "sync". */
export function setDefaultGraphScheduler(scheduler: GraphScheduler | null): void {
  defaultGraphScheduler = scheduler;
}

export interface GetOptions {
  /**
   * Where tasks run: "sync" (this thread), "threads", "processes", or a GraphScheduler such as a
   * Client. Default: the open Client, else "sync".
   */
  readonly scheduler?: SchedulerName | GraphScheduler;
  /** Pool size for "threads" and "processes"; defaults to the available parallelism. */
  readonly numWorkers?: number;
  /** Callbacks for this computation only, besides those of withCallbacks blocks and register(). */
  readonly callbacks?: readonly Callback[];
  /** Aborting it stops the computation: no new task starts, running ones are stopped where possible. */
  readonly signal?: AbortSignal;
  /** Known values (taken as data) that also receive results and lose released ones, like Dask's `cache=`. */
  readonly cache?: Map<Key, unknown>;
}

/** Makes the executor for one computation. `isolate`: tasks must not see this computation's callbacks. */
export type ExecutorFactory = (options: GetOptions, isolate: boolean) => Executor;
const factories = new Map<SchedulerName, ExecutorFactory>([
  ["sync", (_options, isolate) => new SyncExecutor(isolate)],
  ["threads", (options) => new PoolExecutor(getPool("threads", options.numWorkers))],
  ["processes", (options) => new PoolExecutor(getPool("processes", options.numWorkers))],
]);

export function registerExecutor(name: SchedulerName, factory: ExecutorFactory): void {
  factories.set(name, factory);
}

const OPTION_NAMES = new Set(["scheduler", "numWorkers", "callbacks", "signal", "cache"]);

/**
 * Computes `keys` of the graph `dsk`. `keys` is one key, or a (nested) list of keys, and the
 * result has the same shape: `await get(dsk, [["x"], "y"])` → `[[1], 2]`.
 */
export async function get(dsk: GraphInput, keys: Key | readonly unknown[], options: GetOptions = {}): Promise<unknown> {
  validateOptions(options);
  const graph = Graph.from(dsk);
  const callbacks = activeCallbacks(options.callbacks);
  const scheduler = options.scheduler ?? defaultGraphScheduler ?? "sync";
  if (typeof scheduler === "object") return runOn(scheduler, graph, keys, callbacks, options.signal);
  const factory = factories.get(scheduler);
  if (factory === undefined) {
    throw new Error(`Scheduler "${scheduler}" is not available; this build has: ${[...factories.keys()].join(", ")}`);
  }
  const executor = factory(options, callbacks.length > 0);
  const interrupt = listenForInterrupt();
  const signal = options.signal === undefined ? interrupt.signal : AbortSignal.any([options.signal, interrupt.signal]);
  try {
    return await runLoop({ graph, keys, executor, callbacks, signal, cache: options.cache });
  } finally {
    interrupt.stop();
  }
}

async function runOn(
  scheduler: GraphScheduler,
  graph: Graph,
  keys: Key | readonly unknown[],
  callbacks: readonly Callback[],
  own: AbortSignal | undefined,
): Promise<unknown> {
  const interrupt = listenForInterrupt();
  const signal = own === undefined ? interrupt.signal : AbortSignal.any([own, interrupt.signal]);
  try {
    return await scheduler.run({ graph, keys, callbacks, signal });
  } finally {
    interrupt.stop();
  }
}

function isGraphScheduler(value: unknown): value is GraphScheduler {
  return typeof value === "object" && value !== null && typeof (value as GraphScheduler).run === "function";
}

function validateOptions(options: GetOptions): void {
  if (options === null || typeof options !== "object") throw new TypeError(`get options must be an object, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw new TypeError(`Unknown get option "${name}"; known: ${[...OPTION_NAMES].join(", ")}`);
  }
  const { scheduler, numWorkers, callbacks, signal, cache } = options;
  if (scheduler !== undefined && scheduler !== "sync" && scheduler !== "threads" && scheduler !== "processes" && !isGraphScheduler(scheduler)) {
    throw new TypeError(`Option scheduler must be "sync", "threads", "processes" or a Client, got ${JSON.stringify(scheduler)}`);
  }
  if (isGraphScheduler(scheduler) && options.cache !== undefined) {
    throw new TypeError(`Option cache works with the local schedulers only, not with ${scheduler.description}`);
  }
  if (numWorkers !== undefined && !(Number.isInteger(numWorkers) && numWorkers >= 1)) {
    throw new TypeError(`Option numWorkers must be a whole number ≥ 1, got ${numWorkers}`);
  }
  if (callbacks !== undefined && !Array.isArray(callbacks)) throw new TypeError("Option callbacks must be an array of Callback");
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError("Option signal must be an AbortSignal");
  if (cache !== undefined && !(cache instanceof Map)) throw new TypeError("Option cache must be a Map");
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
