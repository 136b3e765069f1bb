// Errors raised while reading a graph, before any task runs. Each names the keys at fault.

import { type Key, formatKey } from "./keys";

function listKeys(keys: readonly Key[], limit = 10): string {
  const shown = keys.slice(0, limit).map(formatKey).join(", ");
  return keys.length > limit ? `${shown}, … (${keys.length - limit} more)` : shown;
}

/** Base class of every graph error, so callers can catch them as one kind. */
export class GraphError extends Error {
  override name = "GraphError";
}

/** A requested key is neither in the graph nor in the cache (Dask raises KeyError). */
export class MissingKeyError extends GraphError {
  override name = "MissingKeyError";
  constructor(readonly key: Key) {
    super(`Key ${formatKey(key)} is not in the graph`);
  }
}

/** A task refers (through `ref()`) to a key that the graph does not hold. */
export class MissingDependencyError extends GraphError {
  override name = "MissingDependencyError";
  constructor(readonly key: Key, readonly dependents: readonly Key[]) {
    super(`Missing dependency ${formatKey(key)} for dependents {${listKeys(dependents)}}`);
  }
}

/** The tasks depend on each other in a loop; `cycle` lists the keys around it. */
export class CycleError extends GraphError {
  override name = "CycleError";
  constructor(readonly cycle: readonly Key[]) {
    super(`Cycle detected between the following keys: ${[...cycle, cycle[0]].map(formatKey).join(" -> ")}`);
  }
}

/** A task is malformed, e.g. its head is `undefined` where a function belongs. */
export class InvalidTaskError extends GraphError {
  override name = "InvalidTaskError";
  constructor(readonly key: Key, detail: string) {
    super(`Task ${formatKey(key)} is invalid: ${detail}`);
  }
}
