// The five scheduler hooks of Dask's callback protocol, and which callbacks a computation sees:
// its own (`opts.callbacks`), those of the enclosing `withCallbacks` blocks, and registered ones.

import { AsyncLocalStorage } from "node:async_hooks";
import type { TaskStreamRecord } from "../../protocol/records";
import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import type { TaskTiming } from "../scheduler/executor";
import type { State } from "../scheduler/state";
import { now } from "../clock";

/** The id of the thread or process that ran a task; `null` with the sync scheduler. */
export type WorkerId = number | string | null;

/** What the scheduler knows about a finished task beyond its result: the worker's own timing, when measured. */
export interface TaskInfo {
  readonly timing?: TaskTiming;
  /**
   * The task's task-stream record with all its phases (transfer, disk, compute), on the
   * scheduler's clock, when a cluster ran it.
   */
  readonly record?: TaskStreamRecord;
}

/** The hooks, in the order they fire. Each is optional. */
export interface CallbackHooks {
  /** Before the state is built. */
  start?(dsk: Graph): void;
  /** Right after the state is built. */
  startState?(dsk: Graph, state: State): void;
  /** When a task is dispatched. */
  pretask?(key: Key, dsk: Graph, state: State): void;
  /**
   * When a task's result is back and the state updated. `info.timing` holds the start and end
   * the worker measured (threads, processes), truer than the dispatch/arrival times seen here.
   */
  posttask?(key: Key, result: unknown, dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void;
  /** On every way out: success, task error, callback error, abort; `error` is what stopped it. */
  finish?(dsk: Graph, state: State, errored: boolean, error?: unknown): void;
}

/**
 * Hooks for the life of a `withCallbacks` block, used by profilers to time the block. `time`
 * (epoch seconds, see `now()`) is read once per block, so every profiler of a block shares
 * one start and one end and their plots line up (Dask #9478).
 */
export interface BlockHooks {
  blockStart?(time: number): void;
  blockEnd?(time: number): void | Promise<void>;
}

const registered = new Set<Callback>();

/**
 * A set of scheduler hooks. Subclass and define the hook methods, or pass functions:
 * `new Callback({ pretask: (key) => console.log(key) })`.
 */
export class Callback {
  constructor(hooks: CallbackHooks = {}) {
    for (const name of HOOK_NAMES) {
      const hook = hooks[name];
      if (hook === undefined) continue;
      if (typeof hook !== "function") throw new TypeError(`Callback hook ${name} must be a function, got ${typeof hook}`);
      (this as CallbackHooks)[name] = hook as never;
    }
  }

  /** Applies to every computation from now on, until `unregister()`. */
  register(): this {
    registered.add(this);
    return this;
  }

  unregister(): void {
    if (!registered.delete(this)) {
      throw new Error(`${this.constructor.name} is not registered, so it cannot be unregistered`);
    }
  }

  /** Unregisters if registered; for `using` (TypeScript ≥ 5.2) and explicit disposal. */
  [Symbol.dispose](): void {
    registered.delete(this);
  }

  /** The callbacks registered globally right now. */
  static get active(): ReadonlySet<Callback> {
    return registered;
  }
}
// Hook methods are optional members that subclasses may define.
export interface Callback extends CallbackHooks, BlockHooks {}

export const HOOK_NAMES = ["start", "startState", "pretask", "posttask", "finish"] as const;

interface Scope {
  /** Callbacks of the enclosing withCallbacks blocks, outermost first. */
  readonly callbacks: readonly Callback[];
  /** False inside a running task: computations it starts ignore registered callbacks too. */
  readonly seesRegistered: boolean;
}

const scopes = new AsyncLocalStorage<Scope>();
const INSIDE_TASK: Scope = { callbacks: [], seesRegistered: false };

/**
 * Dask's `with cb1, cb2:` block. The callbacks apply to computations started inside `fn`
 * (awaited or not) and to no others, even ones running at the same time.
 */
export function withCallbacks<T>(callbacks: Callback | readonly Callback[], fn: () => T): T {
  const added = Array.isArray(callbacks) ? callbacks : [callbacks as Callback];
  for (const cb of added) {
    if (!(cb instanceof Callback)) throw new TypeError(`withCallbacks takes Callback objects, got ${typeof cb}`);
  }
  const outer = scopes.getStore();
  const scope: Scope = { callbacks: [...(outer?.callbacks ?? []), ...added], seesRegistered: outer?.seesRegistered ?? true };
  const started: Callback[] = [];
  const endBlock = (): Promise<void> | void => {
    const pending: Promise<void>[] = [];
    const endTime = now();
    for (const cb of started.reverse()) {
      const result = cb.blockEnd?.(endTime);
      if (result !== undefined) pending.push(result);
    }
    if (pending.length > 0) return Promise.all(pending).then(() => undefined);
  };
  let result: T;
  try {
    const startTime = now();
    for (const cb of added) {
      cb.blockStart?.(startTime);
      started.push(cb);
    }
    result = scopes.run(scope, fn);
  } catch (error) {
    const ending = endBlock();
    if (ending !== undefined) return ending.then(() => Promise.reject(error)) as T;
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      async (value) => {
        await endBlock();
        return value;
      },
      async (error) => {
        await endBlock();
        throw error;
      },
    ) as T;
  }
  const ending = endBlock();
  return (ending !== undefined ? ending.then(() => result) : result) as T;
}

/** The callbacks a computation started here should run: its own, the block's, then registered. */
export function activeCallbacks(own: readonly Callback[] | undefined): Callback[] {
  const scope = scopes.getStore();
  const seen = new Set<Callback>(own ?? []);
  for (const cb of scope?.callbacks ?? []) seen.add(cb);
  if (scope?.seesRegistered ?? true) for (const cb of registered) seen.add(cb);
  return [...seen];
}

/** Runs a task's code so that computations it starts see no outer callbacks (Dask PR #2397). */
export function runInsideTask<T>(fn: () => T): T {
  return scopes.run(INSIDE_TASK, fn);
}

/**
 * Beyond Dask's five hooks: a task failed. The computation stops right after (the loop raises the
 * task's error), so this is the only hook that sees the failed task: the task stream draws it.
 * An error thrown here is ignored, so that the task's own error is the one raised.
 */
export interface TaskErrorHook {
  taskError?(key: Key, error: unknown, dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void;
}
export interface Callback extends TaskErrorHook {}
