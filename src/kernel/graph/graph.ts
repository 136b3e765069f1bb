// A read-only view over a user's graph (a plain object or a Map) that looks keys up by value.

import { type Key, keyId } from "./keys";

/** What `get` accepts: a plain object with string keys, or a Map with any keys (tuples too). */
export type GraphInput = Readonly<Record<string, unknown>> | ReadonlyMap<Key, unknown> | Graph;

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * The graph as callbacks see it. `get(["x", 0])` finds a tuple key whatever array instance
 * is passed. Building one costs nothing for a plain object and one pass for a Map.
 */
export class Graph {
  private readonly object: Readonly<Record<string, unknown>> | undefined;
  private readonly map: ReadonlyMap<Key, unknown> | undefined;
  /** For Maps: value id → the Map's own key instance. */
  private readonly canonical: Map<string, Key> | undefined;
  /** Whether some key is a number or a tuple, so bare numbers and arrays may be references. */
  readonly hasNumberKeys: boolean;
  readonly hasTupleKeys: boolean;

  private constructor(input: Readonly<Record<string, unknown>> | ReadonlyMap<Key, unknown>) {
    if (input instanceof Map) {
      this.map = input as ReadonlyMap<Key, unknown>;
      this.canonical = new Map();
      let numbers = false;
      let tuples = false;
      for (const key of this.map.keys()) {
        if (typeof key === "number") numbers = true;
        else if (typeof key !== "string") tuples = true;
        this.canonical.set(keyId(key), key);
      }
      this.hasNumberKeys = numbers;
      this.hasTupleKeys = tuples;
    } else {
      this.object = input as Readonly<Record<string, unknown>>;
      this.hasNumberKeys = false;
      this.hasTupleKeys = false;
    }
  }

  static from(input: GraphInput): Graph {
    if (input instanceof Graph) return input;
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      throw new TypeError(`A graph must be a plain object or a Map of key → task, got ${describe(input)}`);
    }
    return new Graph(input);
  }

  /** The graph's own instance of a key given by value, or undefined when absent. */
  canonicalKey(key: Key): Key | undefined {
    if (this.object !== undefined) {
      return typeof key === "string" && hasOwn.call(this.object, key) ? key : undefined;
    }
    if (typeof key === "string" && key.charCodeAt(0) !== 0) {
      return this.map!.has(key) ? key : undefined;
    }
    return this.canonical!.get(keyId(key));
  }

  has(key: Key): boolean {
    return this.canonicalKey(key) !== undefined;
  }

  /** The task spec (or literal) stored under `key`. */
  get(key: Key): unknown {
    if (this.object !== undefined) return typeof key === "string" ? this.object[key] : undefined;
    // Callbacks pass the graph's own key instances: an identity hit skips building the key's id.
    const map = this.map!;
    const value = map.get(key);
    if (value !== undefined || map.has(key)) return value;
    const own = this.canonicalKey(key);
    return own === undefined ? undefined : this.map!.get(own);
  }

  get size(): number {
    return this.object !== undefined ? Object.keys(this.object).length : this.map!.size;
  }

  keys(): IterableIterator<Key> {
    return this.object !== undefined ? Object.keys(this.object)[Symbol.iterator]() : this.map!.keys();
  }

  *entries(): IterableIterator<[Key, unknown]> {
    for (const key of this.keys()) yield [key, this.get(key)];
  }

  [Symbol.iterator](): IterableIterator<[Key, unknown]> {
    return this.entries();
  }
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  if (typeof value === "object") return `an object of class ${value.constructor?.name ?? "(none)"}`;
  return `${typeof value} ${String(value).slice(0, 40)}`;
}
