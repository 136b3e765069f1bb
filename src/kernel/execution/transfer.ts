// Values crossing to another thread or process go through V8's serialiser (structured clone,
// v8.serialize): functions, symbols, promises, weak collections, proxies and the like cannot. When
// a task's argument or result is one of those or holds one, the error names the task, the
// argument and the path to the part that cannot be copied, rather than V8's bare "… could not be
// cloned" (which names neither task nor argument).

import { types } from "node:util";
import { type Key, formatKey } from "../graph/keys";

/** The part of a value V8's serialiser refuses, and where it sits. */
export interface UncloneablePart {
  /** From the value to the part, as JavaScript would reach it: `.options.onDone`, `[2]`, "" for the value itself. */
  readonly path: string;
  /** What the part is: "a function f() {}", "a symbol", "a Promise"… */
  readonly what: string;
}

/** Where the uncloneable part of a task's arguments sits: the argument (1-based) and the part in it. */
export interface UncloneableArgument extends UncloneablePart {
  readonly argument: number;
}

/** A task's arguments or result cannot be copied between threads or processes (structured clone). */
export class TaskTransferError extends Error {
  override name = "TaskTransferError";
  constructor(
    readonly key: Key,
    readonly direction: "argument" | "result",
    cause: unknown,
    /** The part that cannot be copied, when it was found (see findUncloneable). */
    readonly where?: UncloneablePart | UncloneableArgument,
  ) {
    const what = direction === "argument" ? "cannot be sent to a worker" : "cannot be sent back from the worker";
    const whole = direction === "argument" ? (where !== undefined && "argument" in where ? `argument ${where.argument}` : "its arguments") : "its result";
    const detail = where === undefined ? (cause instanceof Error ? cause.message : String(cause)) : `${where.path === "" ? "it is" : `${where.path} is`} ${where.what}, which cannot be copied`;
    super(`Task ${formatKey(key)}: ${whole} ${what}: ${detail}`, cause === undefined ? undefined : { cause });
  }
}

/** The first part of `value` V8's serialiser refuses, searched as it would write the value; undefined if none. */
export function findUncloneable(value: unknown, skip?: (value: object) => boolean): UncloneablePart | undefined {
  // Most arguments and results are numbers and strings: no search, no Set.
  if (value === null || (typeof value !== "object" && typeof value !== "function" && typeof value !== "symbol")) return undefined;
  return search(value, "", new Set(), skip);
}

/**
 * The first argument in `args` (with the part in it) V8's serialiser refuses; `skip` marks
 * objects that do not travel as they are (a Future, replaced by its key).
 */
export function findUncloneableArgument(args: readonly unknown[], skip?: (value: object) => boolean): UncloneableArgument | undefined {
  const seen = new Set<object>();
  for (let i = 0; i < args.length; i++) {
    const part = search(args[i], "", seen, skip);
    if (part !== undefined) return { argument: i + 1, ...part };
  }
  return undefined;
}

/**
 * Mirrors V8's ValueSerializer::WriteObject: primitives but symbols, binary data, dates, regular
 * expressions, errors and boxed primitives are written whole; arrays, Maps, Sets and other
 * objects (own enumerable properties, as V8 writes a class instance) are written part by part.
 */
function search(value: unknown, path: string, seen: Set<object>, skip: ((value: object) => boolean) | undefined): UncloneablePart | undefined {
  if (typeof value === "function") return { path, what: `a function ${describeFunction(value)}` };
  if (typeof value === "symbol") return { path, what: `a symbol (${String(value)})` };
  if (value === null || typeof value !== "object") return undefined;
  if (seen.has(value) || (skip !== undefined && skip(value))) return undefined;
  seen.add(value);
  const refused = refusedKind(value);
  if (refused !== undefined) return { path, what: refused };
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof SharedArrayBuffer) return undefined;
  if (types.isDate(value) || types.isRegExp(value) || types.isBoxedPrimitive(value) || value instanceof Error) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = search(value[i], `${path}[${i}]`, seen, skip);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value instanceof Map) {
    for (const [key, item] of value) {
      const found = search(key, `${path} (a key of the Map)`, seen, skip) ?? search(item, `${path}.get(${describeKey(key)})`, seen, skip);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value instanceof Set) {
    for (const item of value) {
      const found = search(item, `${path} (an item of the Set)`, seen, skip);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const name of Object.keys(value)) {
    const found = search((value as Record<string, unknown>)[name], `${path}${/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`}`, seen, skip);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Objects V8's serialiser refuses outright, by kind (undefined: not one of them). */
function refusedKind(value: object): string | undefined {
  if (types.isProxy(value)) return "a Proxy";
  if (types.isPromise(value)) return "a Promise";
  if (types.isWeakMap(value)) return "a WeakMap";
  if (types.isWeakSet(value)) return "a WeakSet";
  if (value instanceof WeakRef) return "a WeakRef";
  if (value instanceof FinalizationRegistry) return "a FinalizationRegistry";
  if (types.isGeneratorObject(value)) return "a generator";
  if (types.isModuleNamespaceObject(value)) return "a module namespace";
  if (types.isSymbolObject(value)) return "a boxed symbol";
  if (types.isExternal(value)) return "a native (external) value";
  return undefined;
}

function describeFunction(fn: unknown): string {
  const source = Function.prototype.toString.call(fn).replace(/\s+/g, " ");
  return source.length > 60 ? `${source.slice(0, 57)}…` : source;
}

function describeKey(key: unknown): string {
  if (typeof key === "string") return JSON.stringify(key);
  if (typeof key === "number" || typeof key === "boolean" || typeof key === "bigint") return String(key);
  return "…";
}
