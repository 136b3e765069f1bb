// What travels between the pool (calling thread) and its workers: messages, the shipped form of
// task expressions and functions, errors, and the worker-side measurements. Loaded by both sides.

import type { MessagePort } from "node:worker_threads";
import type { ProfileMessage, ProfilerControl } from "../profiling/messages";
import type { UncloneablePart } from "./transfer";

/** How a worker finds a function. */
export type FnSpec =
  /** An export of a module file: `require(path)[name]`, or `require(path)` itself when name is "". */
  | { readonly kind: "module"; readonly path: string; readonly name: string }
  /** A built-in reachable from the worker's globalThis, e.g. ["Math", "max"]. */
  | { readonly kind: "global"; readonly path: readonly string[] }
  /** Source text compiled in the worker; `method` marks object-literal method shorthand. */
  | { readonly kind: "source"; readonly source: string; readonly method: boolean }
  /** A function `contextMeter.meter(label)` wrapped: the worker wraps `inner` again. */
  | { readonly kind: "metered"; readonly label: string; readonly inner: FnSpec };

// Messages are flat arrays where they are per task: structured clone's cost grows with the
// number of objects, and on a chain of tiny tasks that cost is the scheduler's latency.

// A task expression with its references replaced by their values. A value that is not an array
// stands for itself; arrays are [LITERAL, array value] | [CALL, function id, ...args] | [LIST, ...items].
export const LITERAL = 0;
export const CALL = 1;
export const LIST = 2;
export type WireExpr = unknown;

/** What a pool thread is started with. */
export interface WorkerThreadData {
  /** Its end of the channel to the pool. */
  readonly port: MessagePort;
  /** Whether it waits awake for the next batch of quick tasks (see PoolOptions.waitAwake). */
  readonly waitAwake: boolean;
  /** Whether it measures its tasks for fine performance metrics (see PoolOptions.metrics). */
  readonly metrics: boolean;
  /** Whether results' own big buffers go to the pool in shared memory, copied there by the thread (see PoolOptions.shareResults). */
  readonly shareResults: boolean;
}

/** A pool process's argument when it measures nothing (PoolOptions.metrics false; threads get WorkerThreadData). */
export const NO_METRICS_ARG = "--no-metrics";

/**
 * Pool → worker: definitions of the function ids this worker has not seen yet (or null), the
 * shared buffers in the tasks that stand in for plain ones, which the worker copies into plain
 * memory before the tasks see them (or null; see PoolOptions.moveInputs), then the tasks.
 */
export type RunMessage = readonly [readonly (readonly [number, FnSpec])[] | null, readonly SharedArrayBuffer[] | null, ...WireExpr[]];

/** Where the tasks of a RunMessage start. */
export const RUN_TASKS_AT = 2;

/** Pool → worker: a batch of tasks, or a profiler command (see kernel/profiling). */
export type PoolMessage = RunMessage | ProfilerControl;

/** Worker → pool, once at start-up. */
export interface ReadyMessage {
  readonly type: "ready";
  /** threadId for a thread, pid for a process. */
  readonly workerId: number;
  /** Every name reachable on the worker's globalThis: what task sources may use freely. */
  readonly globals: readonly string[];
}

/** Worker process → pool: an error escaped every task (thrown from a timer, say); the process exits next. */
export interface CrashMessage {
  readonly type: "crash";
  readonly message: string;
}

/**
 * Worker → pool: the outcomes of the batch's next tasks, in order, RESULT_SIZE slots each:
 * ok (1 or 0), the value or a PackedError, start and end (epoch ms), CPU ms of the worker thread
 * (NaN if unknown), bytes in, bytes out, the task's execute metrics when its code metered
 * or digested any (else null: the pool derives thread-cpu/noncpu from the times), 1 if its
 * function returned a promise (else 0), and the shared buffers in the value that stand in for
 * plain ones (PoolOptions.shareResults; else null).
 */
export type ResultsMessage = unknown[];
export const RESULT_SIZE = 10;

export type WorkerMessage = ReadyMessage | CrashMessage | ResultsMessage | ProfileMessage;

/** A thrown value made safe for structured clone. */
export type PackedError =
  /** Not an Error object (`throw "text"`, `throw 42`): rethrown as it was. */
  | { readonly kind: "value"; readonly value: unknown }
  | {
      readonly kind: "error";
      /** The constructor's name, used to rebuild a built-in class (TypeError, RangeError…). */
      readonly className: string;
      readonly name: string;
      readonly message: string;
      readonly stack: string | undefined;
      /** The error's own properties (code, custom fields, cause) that survive structured clone. */
      readonly props: Readonly<Record<string, unknown>>;
      /** Set when the task ran but its result could not be sent back: the part that could not, when found. */
      readonly unsendableResult?: UncloneablePart | true;
    };

function cloneable(value: unknown): boolean {
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

export function packError(error: unknown, unsendableResult?: UncloneablePart | true): PackedError {
  if (!(error instanceof Error)) {
    return cloneable(error) ? { kind: "value", value: error } : { kind: "value", value: String(error) };
  }
  const props: Record<string, unknown> = {};
  for (const name of Object.getOwnPropertyNames(error)) {
    if (name === "message" || name === "stack") continue;
    const value = (error as unknown as Record<string, unknown>)[name];
    if (cloneable(value)) props[name] = value;
  }
  return {
    kind: "error",
    className: error.constructor?.name ?? "Error",
    name: error.name,
    message: error.message,
    stack: error.stack,
    props,
    ...(unsendableResult !== undefined ? { unsendableResult } : {}),
  };
}

/**
 * The caller-side copy of an error thrown in a worker: the same built-in class when there is
 * one (else an Error whose `name` is the original's), message, own properties and worker stack.
 */
export function unpackError(packed: PackedError): unknown {
  if (packed.kind === "value") return packed.value;
  const builtIn = (globalThis as Record<string, unknown>)[packed.className];
  let error: Error | undefined;
  if (typeof builtIn === "function" && (builtIn === Error || (builtIn as { prototype: unknown }).prototype instanceof Error)) {
    try {
      error = Reflect.construct(builtIn, [packed.message]) as Error;
    } catch {
      // a global class that needs other arguments: fall back to a plain Error below
    }
  }
  const isBuiltInError = error !== undefined;
  error ??= new Error(packed.message);
  const hidden = (name: string, value: unknown): void => {
    Object.defineProperty(error, name, { value, writable: true, configurable: true, enumerable: false });
  };
  hidden("stack", packed.stack);
  if (!isBuiltInError || error.name !== packed.name) hidden("name", packed.name);
  for (const [name, value] of Object.entries(packed.props)) {
    const own = Object.getOwnPropertyDescriptor(error, name);
    if (own === undefined || own.writable) (error as unknown as Record<string, unknown>)[name] = value;
  }
  return error;
}
