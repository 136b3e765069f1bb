// `delayed(fn)(...args)`: lazy function calls that build a task graph, as dask.delayed does.

import type { Key } from "../graph/keys";
import { keyOfCollection, quote } from "../graph/spec";
import { tagTask } from "../metrics/spans";
import { type GetOptions, get } from "../scheduler/get";
import { GET_OPTION_NAMES } from "../scheduler/options";
import { tokenize } from "./tokenize";

/** An argument to a delayed function: a value, a Delayed that will produce it, or arrays/objects of those. */
export type MaybeDelayed<T> =
  | T
  | Delayed<T>
  | (T extends readonly (infer U)[]
      ? readonly MaybeDelayed<U>[]
      : T extends Record<string, unknown>
        ? { [K in keyof T]: MaybeDelayed<T[K]> }
        : never);
type DelayedArgs<A extends unknown[]> = { [I in keyof A]: MaybeDelayed<A[I]> };

/** A value not computed yet: one task, plus the Delayed values it needs. */
export class Delayed<T = unknown> {
  readonly [keyOfCollection]: Key;

  constructor(
    readonly key: string,
    /** The task spec, Dask-style: `[fn, ...args]`. */
    readonly task: unknown,
    /** The Delayed values the task refers to. */
    readonly dependencies: readonly Delayed[],
  ) {
    this[keyOfCollection] = key;
  }

  /** The whole task graph behind this value (this task and everything it needs). */
  get dask(): Map<string, unknown> {
    return mergeGraphs([this]);
  }

  compute(options?: GetOptions): Promise<T> {
    return get(this.dask, this.key, options) as Promise<T>;
  }

  toString(): string {
    return `Delayed('${this.key}')`;
  }
}

export interface DelayedOptions {
  /** Key prefix; defaults to the function's name. */
  readonly name?: string;
}

/** Wraps `fn` so calling it builds a task instead of running: `delayed(add)(1, x)` → Delayed. */
export function delayed<A extends unknown[], R>(
  fn: (...args: A) => R,
  options: DelayedOptions = {},
): (...args: DelayedArgs<A>) => Delayed<Awaited<R>> {
  if (typeof fn !== "function") {
    throw new TypeError(`delayed() takes a function, got ${fn === null ? "null" : typeof fn}`);
  }
  const name = options.name ?? (fn.name || "lambda");
  return (...args) => {
    const dependencies: Delayed[] = [];
    const specArgs = args.map((arg) => toSpec(arg, dependencies));
    const key = `${name}-${tokenize(fn, ...args)}`;
    const task = [fn, ...specArgs];
    tagTask(task);
    return new Delayed<Awaited<R>>(key, task, dependencies);
  };
}

/**
 * Computes several values in one graph, so shared work runs once. Non-Delayed values pass
 * through. A trailing options object (only get-option names) sets the scheduler and callbacks.
 */
export async function compute(...values: unknown[]): Promise<unknown[]> {
  let options: GetOptions | undefined;
  const last = values[values.length - 1];
  if (isOptionsObject(last)) {
    options = last as GetOptions;
    values = values.slice(0, -1);
  }
  const lazy = values.filter((value): value is Delayed => value instanceof Delayed);
  if (lazy.length === 0) return values;
  const results = (await get(mergeGraphs(lazy), lazy.map((value) => value.key), options)) as unknown[];
  let next = 0;
  return values.map((value) => (value instanceof Delayed ? results[next++] : value));
}

function isOptionsObject(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return false;
  const names = Object.keys(value);
  return names.length > 0 && names.every((name) => (GET_OPTION_NAMES as readonly string[]).includes(name));
}

/** The graph of all the given values, walked without recursion so long chains are fine. */
function mergeGraphs(roots: readonly Delayed[]): Map<string, unknown> {
  const graph = new Map<string, unknown>();
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (graph.has(node.key)) continue;
    graph.set(node.key, node.task);
    for (const dependency of node.dependencies) if (!graph.has(dependency.key)) stack.push(dependency);
  }
  return graph;
}

/** An argument as a graph spec: Delayed values become references, everything else stays literal. */
function toSpec(arg: unknown, dependencies: Delayed[]): unknown {
  if (arg instanceof Delayed) {
    dependencies.push(arg);
    return arg;
  }
  if (!containsDelayed(arg)) return typeof arg === "string" || Array.isArray(arg) ? quote(arg) : arg;
  if (Array.isArray(arg)) return [makeArray, ...arg.map((item) => toSpec(item, dependencies))];
  const entries = Object.entries(arg as object);
  return [makeObject, quote(entries.map(([name]) => name)), ...entries.map(([, value]) => toSpec(value, dependencies))];
}

function containsDelayed(value: unknown): boolean {
  if (value instanceof Delayed) return true;
  if (Array.isArray(value)) return value.some(containsDelayed);
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value).some(containsDelayed);
  }
  return false;
}

/** Builds an array from its evaluated items. */
export function makeArray(...items: unknown[]): unknown[] {
  return items;
}

/** Builds a plain object from names and evaluated values. */
export function makeObject(names: readonly string[], ...values: unknown[]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  names.forEach((name, i) => (object[name] = values[i]));
  return object;
}
