// What a computation can be told: which scheduler runs it (a local one by name, a get function,
// or a GraphScheduler such as a distributed Client), with what, and how to check such values.

import type { Callback } from "../callbacks/callback";
import type { Graph, GraphInput } from "../graph/graph";
import type { Key } from "../graph/keys";

/** The local schedulers: this thread, a pool of worker threads, a pool of child processes. */
export type SchedulerName = "sync" | "threads" | "processes";
export const SCHEDULER_NAMES: readonly SchedulerName[] = ["sync", "threads", "processes"];

/** Something that runs whole graphs elsewhere (a distributed Client). */
export interface GraphScheduler {
  /** For messages: e.g. "Client(cluster at …)". */
  readonly description: string;
  run(request: GraphRun): Promise<unknown>;
}

/** One computation handed to a GraphScheduler: the keys' values, shaped like `keys`, are its result. */
export interface GraphRun {
  readonly graph: Graph;
  readonly keys: Key | readonly unknown[];
  /** Every callback this computation should run (its own, its withCallbacks blocks', the registered ones). */
  readonly callbacks: readonly Callback[];
  /** Aborted by the caller's signal or a kernel interrupt. */
  readonly signal: AbortSignal;
  /** Where its tasks may run (a distributed Client's placement options; see GetOptions). */
  readonly workers?: string | readonly string[];
  readonly allowOtherWorkers?: boolean;
}

/** A scheduler's get, as `get` itself or a Profiler's `get`: Dask's `scheduler=` accepts these too. */
export type GetFunction = (dsk: GraphInput, keys: Key | readonly unknown[], options?: GetOptions) => Promise<unknown>;

/** Everything that can choose where a computation runs. */
export type SchedulerChoice = SchedulerName | GraphScheduler | GetFunction;

export interface GetOptions {
  /**
   * Where tasks run: "sync" (this thread), "threads", "processes", a GraphScheduler (a Client) or
   * a get function. Unset: the scoped config, the global config, an open Client, then the
   * collection's default ("sync" for raw graphs and delayed, "threads" for arrays).
   */
  readonly scheduler?: SchedulerChoice;
  /** Pool size for "threads" and "processes"; defaults to the configured size, else the available parallelism. */
  readonly numWorkers?: number;
  /** Callbacks for this computation only, besides those of withCallbacks blocks and register(). */
  readonly callbacks?: readonly Callback[];
  /** Aborting it stops the computation: no new task starts, running ones are stopped where possible. */
  readonly signal?: AbortSignal;
  /** Known values (taken as data) that also receive results and lose released ones, like Dask's `cache=`. Local schedulers only. */
  readonly cache?: Map<Key, unknown>;
  /** A distributed Client only: the workers the tasks may run on, by address, name or host (Dask's workers=). */
  readonly workers?: string | readonly string[];
  /** A distributed Client only, with `workers`: they are a preference (Dask's allow_other_workers=True). */
  readonly allowOtherWorkers?: boolean;
}

export const GET_OPTION_NAMES: readonly (keyof GetOptions)[] = ["scheduler", "numWorkers", "callbacks", "signal", "cache", "workers", "allowOtherWorkers"];

export function isGraphScheduler(value: unknown): value is GraphScheduler {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof (value as Partial<GraphScheduler>).run === "function" &&
    typeof (value as Partial<GraphScheduler>).description === "string"
  );
}

/** Throws a TypeError naming `where` ("Option scheduler", "Config scheduler") unless `value` can choose a scheduler. */
export function checkScheduler(value: unknown, where: string): asserts value is SchedulerChoice {
  if (typeof value === "function" || isGraphScheduler(value)) return;
  if ((SCHEDULER_NAMES as readonly unknown[]).includes(value)) return;
  throw new TypeError(
    `${where} must be "sync", "threads", "processes", a GraphScheduler (such as a Client) or a get function, got ${describe(value)}`,
  );
}

export function checkNumWorkers(value: unknown, where: string): asserts value is number {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= 1)) {
    throw new TypeError(`${where} must be a whole number ≥ 1, got ${describe(value)}`);
  }
}

export function checkGetOptions(options: GetOptions): void {
  if (options === null || typeof options !== "object") throw new TypeError(`get options must be an object, got ${String(options)}`);
  for (const name of Object.keys(options)) {
    if (!(GET_OPTION_NAMES as readonly string[]).includes(name)) {
      throw new TypeError(`Unknown get option "${name}"; known: ${GET_OPTION_NAMES.join(", ")}`);
    }
  }
  const { scheduler, numWorkers, callbacks, signal, cache } = options;
  if (scheduler !== undefined) checkScheduler(scheduler, "Option scheduler");
  if (numWorkers !== undefined) checkNumWorkers(numWorkers, "Option numWorkers");
  if (callbacks !== undefined && !Array.isArray(callbacks)) throw new TypeError("Option callbacks must be an array of Callback");
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError("Option signal must be an AbortSignal");
  if (cache !== undefined && !(cache instanceof Map)) throw new TypeError("Option cache must be a Map");
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null) return "null";
  return typeof value === "object" ? "an object without run() and description" : String(value);
}
