// A read-only view over a user's graph (a plain object or a Map) that looks keys up by value.

import { type Key, type KeyPart, keyId } from "./keys";

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
  /** For Maps: the tuple keys, found by value without building a string per lookup. */
  private readonly tuples: TupleIndex | undefined;
  /** Whether some key is a number or a tuple, so bare numbers and arrays may be references. */
  readonly hasNumberKeys: boolean;
  readonly hasTupleKeys: boolean;

  private constructor(input: Readonly<Record<string, unknown>> | ReadonlyMap<Key, unknown>) {
    if (input instanceof Map) {
      this.map = input as ReadonlyMap<Key, unknown>;
      let numbers = false;
      let tuples: TupleIndex | undefined;
      for (const key of this.map.keys()) {
        if (typeof key === "number") numbers = true;
        else if (typeof key !== "string") (tuples ??= new TupleIndex()).add(key);
      }
      this.tuples = tuples;
      this.hasNumberKeys = numbers;
      this.hasTupleKeys = tuples !== undefined;
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
    // Strings and numbers are their own instances (a Map compares them by value).
    if (typeof key !== "object") return this.map!.has(key) ? key : undefined;
    return this.tuples?.find(key);
  }

  has(key: Key): boolean {
    return this.canonicalKey(key) !== undefined;
  }

  /** The task spec (or literal) stored under `key`. */
  get(key: Key): unknown {
    if (this.object !== undefined) return typeof key === "string" ? this.object[key] : undefined;
    // Callbacks pass the graph's own key instances: an identity hit needs no search.
    const map = this.map!;
    const value = map.get(key);
    if (value !== undefined || typeof key !== "object" || map.has(key)) return value;
    const own = this.canonicalKey(key);
    return own === undefined ? undefined : map.get(own);
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

/**
 * Tuple keys by their elements, one level per element: a key is found by value with a Map lookup
 * per element instead of a string built for it. Tuples nested in a key fall back to `keyId`.
 */
class TupleIndex {
  /** Element → the keys that continue past it. */
  private children: Map<string | number, TupleIndex> | undefined;
  /** Last element → the key that ends with it. */
  private ends: Map<string | number, Key> | undefined;
  /** Keys with a tuple inside, by id. */
  private nested: Map<string, Key> | undefined;

  add(key: readonly KeyPart[]): void {
    if (!isFlat(key)) {
      (this.nested ??= new Map()).set(keyId(key), key);
      return;
    }
    let node: TupleIndex = this;
    const last = key.length - 1;
    for (let i = 0; i < last; i++) {
      const element = key[i] as string | number;
      let next = node.children?.get(element);
      if (next === undefined) (node.children ??= new Map()).set(element, (next = new TupleIndex()));
      node = next;
    }
    (node.ends ??= new Map()).set(key[last] as string | number, key);
  }

  find(key: readonly KeyPart[]): Key | undefined {
    if (!isFlat(key)) return this.nested?.get(keyId(key));
    let node: TupleIndex | undefined = this;
    const last = key.length - 1;
    for (let i = 0; i < last && node !== undefined; i++) node = node.children?.get(key[i] as string | number);
    return node?.ends?.get(key[last] as string | number);
  }
}

/** A tuple of strings and numbers only. */
function isFlat(key: readonly KeyPart[]): boolean {
  for (let i = 0; i < key.length; i++) if (typeof key[i] === "object") return false;
  return key.length > 0;
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  if (typeof value === "object") return `an object of class ${value.constructor?.name ?? "(none)"}`;
  return `${typeof value} ${String(value).slice(0, 40)}`;
}
