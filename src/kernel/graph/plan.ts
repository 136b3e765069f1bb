// Turns a graph and the requested keys into a Plan: only the tasks those keys need (culling),
// each compiled once, with dependency edges and a static depth-first priority (dask.order's spirit).

import { CycleError, InvalidTaskError, MissingDependencyError, MissingKeyError } from "./errors";
import { Graph, describe } from "./graph";
import { type Key, compareKeys, isKey, keyId } from "./keys";
import { type Expr, Quoted, TaskRef, keyOfCollection } from "./spec";

/** The requested keys with their nesting: a node index, or a list of requests. */
export type Request = number | readonly Request[];

/** Plain data the scheduler runs from; nodes are numbered 0…n-1. */
export interface Plan {
  readonly graph: Graph;
  /** Node index → key (the graph's own instance). */
  readonly keys: readonly Key[];
  /** Node index → `keyId` of its key. */
  readonly ids: readonly string[];
  /** Node index → compiled task, or undefined for a data node. */
  readonly exprs: readonly (Expr | undefined)[];
  /** Node index → value of a data node (a literal in the graph, or a cache entry). */
  readonly dataValues: readonly unknown[];
  /** Dependencies of node i: `dependencies[dependencyStart[i] … dependencyStart[i+1])`. */
  readonly dependencyStart: Int32Array;
  readonly dependencies: Int32Array;
  readonly dependentStart: Int32Array;
  readonly dependents: Int32Array;
  /** Lower runs first; a depth-first post-order, so intermediates are freed early. */
  readonly priority: Int32Array;
  readonly request: Request;
  /** 1 for nodes whose value the caller asked for (never released). */
  readonly isOutput: Uint8Array;
  /** Key id (see `keyId`) → node index. */
  readonly indexById: ReadonlyMap<string, number>;
}

export interface PlanOptions {
  /** Values already known; their keys are data, not tasks. */
  readonly cache?: ReadonlyMap<Key, unknown>;
}

const NEW = 0;
const ON_STACK = 1;
const DONE = 2;

export function buildPlan(input: Graph, requested: Key | readonly unknown[], options: PlanOptions = {}): Plan {
  return new PlanBuilder(input, options.cache).build(requested);
}

class PlanBuilder {
  private readonly keys: Key[] = [];
  private readonly ids: string[] = [];
  private readonly exprs: (Expr | undefined)[] = [];
  private readonly dataValues: unknown[] = [];
  private readonly nodeDependencies: number[][] = [];
  private readonly indexById = new Map<string, number>();
  private readonly cacheKeys: Map<string, Key> | undefined;
  private readonly missing = new Map<string, { key: Key; dependents: Key[] }>();
  private readonly tuplesMayBeKeys: boolean;
  private readonly numbersMayBeKeys: boolean;
  /** The dependencies found while compiling the current task. */
  private found: number[] = [];
  private foundSet: Set<number> | undefined;
  private compiling: Key = "";

  constructor(
    private readonly graph: Graph,
    private readonly cache: ReadonlyMap<Key, unknown> | undefined,
  ) {
    let cacheTuples = false;
    let cacheNumbers = false;
    if (cache !== undefined && cache.size > 0) {
      this.cacheKeys = new Map();
      for (const key of cache.keys()) {
        if (typeof key === "number") cacheNumbers = true;
        else if (typeof key !== "string") cacheTuples = true;
        this.cacheKeys.set(keyId(key), key);
      }
    }
    this.tuplesMayBeKeys = graph.hasTupleKeys || cacheTuples;
    this.numbersMayBeKeys = graph.hasNumberKeys || cacheNumbers;
  }

  build(requested: Key | readonly unknown[]): Plan {
    const request = this.resolveRequest(requested);
    const roots: number[] = [];
    collectLeaves(request, roots);
    const priority = this.orderFrom(roots);
    if (this.missing.size > 0) {
      const [{ key, dependents }] = this.missing.values();
      throw new MissingDependencyError(key, dependents);
    }
    const n = this.keys.length;
    const isOutput = new Uint8Array(n);
    for (const root of roots) isOutput[root] = 1;
    const { start: dependencyStart, list: dependencies } = toAdjacency(this.nodeDependencies);
    const { start: dependentStart, list: dependents } = invert(dependencyStart, dependencies, n);
    return {
      graph: this.graph,
      keys: this.keys,
      ids: this.ids,
      exprs: this.exprs,
      dataValues: this.dataValues,
      dependencyStart,
      dependencies,
      dependentStart,
      dependents,
      priority,
      request,
      isOutput,
      indexById: this.indexById,
    };
  }

  /** A requested key, or a (nested) list of them; an array that is itself a key counts as one key. */
  private resolveRequest(requested: unknown): Request {
    if (Array.isArray(requested) && !(isKey(requested) && this.canonical(requested) !== undefined)) {
      return requested.map((item) => this.resolveRequest(item));
    }
    if (!isKey(requested)) throw new TypeError(`Requested keys must be keys or lists of keys, got ${describe(requested)}`);
    const key = this.canonical(requested);
    if (key === undefined) throw new MissingKeyError(requested);
    return this.nodeOf(key);
  }

  /** The graph's (or cache's) own instance of a key, or undefined. The cache wins, as in Dask. */
  private canonical(key: Key): Key | undefined {
    if (this.cacheKeys !== undefined) {
      const cached = this.cacheKeys.get(keyId(key));
      if (cached !== undefined) return cached;
    }
    return this.graph.canonicalKey(key);
  }

  /** The node of `key`, one of the graph's (or cache's) own key instances. */
  private nodeOf(key: Key): number {
    const id = keyId(key);
    let index = this.indexById.get(id);
    if (index === undefined) {
      index = this.keys.length;
      this.indexById.set(id, index);
      this.keys.push(key);
      this.ids.push(id);
      this.exprs.push(undefined);
      this.dataValues.push(undefined);
      this.nodeDependencies.push(EMPTY);
    }
    return index;
  }

  /** Depth-first post-order from the roots: iterative (no stack overflow on long chains), finds cycles. */
  private orderFrom(roots: readonly number[]): Int32Array {
    const mark: number[] = [];
    const order: number[] = [];
    const stack: number[] = [];
    const nextChild: number[] = [];
    let counter = 0;
    for (const root of roots) {
      if ((mark[root] ?? NEW) !== NEW) continue;
      this.expand(root);
      mark[root] = ON_STACK;
      stack.push(root);
      nextChild.push(0);
      while (stack.length > 0) {
        const top = stack.length - 1;
        const node = stack[top];
        const children = this.nodeDependencies[node];
        if (nextChild[top] < children.length) {
          const child = children[nextChild[top]++];
          const state = mark[child] ?? NEW;
          if (state === NEW) {
            this.expand(child);
            mark[child] = ON_STACK;
            stack.push(child);
            nextChild.push(0);
          } else if (state === ON_STACK) {
            const from = stack.lastIndexOf(child);
            throw new CycleError(stack.slice(from).map((i) => this.keys[i]));
          }
        } else {
          stack.pop();
          nextChild.pop();
          mark[node] = DONE;
          order[node] = counter++;
        }
      }
    }
    return Int32Array.from(order);
  }

  /** Compiles node i's spec and records its dependencies, in the order the DFS should visit them. */
  private expand(index: number): void {
    const key = this.keys[index];
    if (this.cacheKeys !== undefined && this.cacheKeys.has(keyId(key))) {
      this.dataValues[index] = this.cache!.get(key);
      return;
    }
    this.compiling = key;
    this.found = [];
    this.foundSet = undefined;
    const expr = this.compile(this.graph.get(key), true);
    if (expr.kind === "literal") {
      this.dataValues[index] = expr.value;
      return;
    }
    this.exprs[index] = expr;
    const deps = this.found;
    // Siblings are visited highest key first, as Dask runs them (test_local's test_ordering).
    if (deps.length > 1) deps.sort((a, b) => compareKeys(this.keys[b], this.keys[a]));
    this.nodeDependencies[index] = deps;
  }

  private compile(value: unknown, topLevel: boolean): Expr {
    switch (typeof value) {
      case "string":
        return this.referenceOr(value, value);
      case "number":
        return this.numbersMayBeKeys ? this.referenceOr(value, value) : { kind: "literal", value };
      case "object":
        if (value === null) return { kind: "literal", value };
        if (Array.isArray(value)) return this.compileArray(value, topLevel);
        if (value instanceof TaskRef) return this.explicitReference(value.key);
        if (value instanceof Quoted) return { kind: "literal", value: value.value };
        if (keyOfCollection in value) return this.explicitReference((value as { [keyOfCollection]: Key })[keyOfCollection]);
        return { kind: "literal", value };
      default:
        return { kind: "literal", value };
    }
  }

  private compileArray(value: readonly unknown[], topLevel: boolean): Expr {
    const head = value[0];
    if (typeof head === "function") {
      const args = new Array<Expr>(value.length - 1);
      for (let i = 1; i < value.length; i++) args[i - 1] = this.compile(value[i], false);
      return { kind: "call", fn: head as (...args: never[]) => unknown, args };
    }
    if (value.length > 0 && head === undefined) {
      throw new InvalidTaskError(
        this.compiling,
        `${topLevel ? "it" : "a nested task"} starts with undefined where a function belongs (a missing import?)`,
      );
    }
    if (this.tuplesMayBeKeys && isKey(value)) {
      const key = this.canonical(value);
      if (key !== undefined) return this.reference(key);
    }
    const items = new Array<Expr>(value.length);
    let allLiteral = true;
    for (let i = 0; i < value.length; i++) {
      items[i] = this.compile(value[i], false);
      if (items[i].kind !== "literal") allLiteral = false;
    }
    // A list with nothing to evaluate stays the very array the user wrote.
    return allLiteral ? { kind: "literal", value } : { kind: "list", items };
  }

  private referenceOr(key: string | number, value: unknown): Expr {
    const own = this.canonical(key);
    return own === undefined ? { kind: "literal", value } : this.reference(own);
  }

  private explicitReference(key: Key): Expr {
    const own = this.canonical(key);
    if (own !== undefined) return this.reference(own);
    const id = keyId(key);
    const entry = this.missing.get(id) ?? { key, dependents: [] };
    entry.dependents.push(this.compiling);
    this.missing.set(id, entry);
    return { kind: "literal", value: undefined };
  }

  private reference(key: Key): Expr {
    const index = this.nodeOf(key);
    this.addDependency(index);
    return { kind: "ref", index };
  }

  private addDependency(index: number): void {
    const found = this.found;
    if (found.length < 16) {
      if (!found.includes(index)) found.push(index);
      return;
    }
    this.foundSet ??= new Set(found);
    if (!this.foundSet.has(index)) {
      this.foundSet.add(index);
      found.push(index);
    }
  }
}

const EMPTY: number[] = [];

function collectLeaves(request: Request, into: number[]): void {
  if (typeof request === "number") into.push(request);
  else for (const item of request) collectLeaves(item, into);
}

function toAdjacency(lists: readonly (readonly number[])[]): { start: Int32Array; list: Int32Array } {
  const start = new Int32Array(lists.length + 1);
  for (let i = 0; i < lists.length; i++) start[i + 1] = start[i] + lists[i].length;
  const list = new Int32Array(start[lists.length]);
  for (let i = 0; i < lists.length; i++) list.set(lists[i], start[i]);
  return { start, list };
}

function invert(start: Int32Array, list: Int32Array, n: number): { start: Int32Array; list: Int32Array } {
  const counts = new Int32Array(n + 1);
  for (let e = 0; e < list.length; e++) counts[list[e] + 1]++;
  for (let i = 0; i < n; i++) counts[i + 1] += counts[i];
  const fill = counts.slice(0, n);
  const out = new Int32Array(list.length);
  for (let node = 0; node < n; node++) {
    for (let e = start[node]; e < start[node + 1]; e++) out[fill[list[e]]++] = node;
  }
  return { start: counts, list: out };
}
