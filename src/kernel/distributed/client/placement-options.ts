// The Client's placement options (Dask's `workers=` and `allow_other_workers=`), checked and
// turned into the scheduler's WorkerRestriction, and how calls that take arguments (`submit`,
// `run`) tell a trailing options object from an argument.

import type { WorkerRestriction } from "../scheduler/state";

export interface PlacementOptions {
  /**
   * Workers the tasks may run on, by address, name or host (Dask's `workers=`): one or a list.
   * While none of them is running, the tasks wait for one (as Dask's). An empty list: anywhere.
   */
  readonly workers?: string | readonly string[];
  /** The workers are a preference (Dask's `allow_other_workers=True`): others are used when none of them is running, and work stealing may move the tasks. */
  readonly allowOtherWorkers?: boolean;
}
export const PLACEMENT_OPTIONS: readonly (keyof PlacementOptions)[] = ["workers", "allowOtherWorkers"];

/** The restriction `options` ask for (undefined: none); bad values are TypeErrors naming `method`'s option. */
export function restrictionOf(method: string, options: PlacementOptions): WorkerRestriction | undefined {
  const { workers, allowOtherWorkers } = options;
  if (allowOtherWorkers !== undefined && typeof allowOtherWorkers !== "boolean") {
    throw new TypeError(`${method}: allowOtherWorkers must be true or false, got ${JSON.stringify(allowOtherWorkers)}`);
  }
  if (workers === undefined) {
    if (allowOtherWorkers !== undefined) throw new TypeError(`${method}: allowOtherWorkers is only meaningful with workers (as Dask's allow_other_workers)`);
    return undefined;
  }
  const names = workerNames(method, workers);
  if (names.length === 0) return undefined;
  return { workers: new Set(names), allowOtherWorkers: allowOtherWorkers ?? false };
}

/** `workers` as a list of names, addresses or hosts; anything else is a TypeError naming `method`. */
export function workerNames(method: string, workers: unknown): string[] {
  const list = typeof workers === "string" ? [workers] : workers;
  if (!Array.isArray(list) || !list.every((worker) => typeof worker === "string")) {
    throw new TypeError(`${method}: workers must be a worker address, name or host, or a list of them; got ${JSON.stringify(workers)}`);
  }
  return list;
}

/**
 * Splits `args` of a call that takes arguments and then options: the last argument is the
 * options when it is a plain object naming one of `known` (an object argument naming none stays
 * an argument); any other name in it is then a TypeError.
 */
export function trailingOptions<O extends object>(method: string, args: unknown[], known: readonly string[]): O | undefined {
  const last = args[args.length - 1];
  if (last === null || typeof last !== "object" || Object.getPrototypeOf(last) !== Object.prototype) return undefined;
  const names = Object.keys(last);
  if (!names.some((name) => known.includes(name))) return undefined;
  for (const name of names) {
    if (!known.includes(name)) throw new TypeError(`Unknown ${method} option "${name}"; known: ${known.join(", ")}`);
  }
  args.pop();
  return last as O;
}
