// The five scheduler hooks of Dask's callback protocol, and which callbacks a computation sees:
// its own (`opts.callbacks`), those of the enclosing `withCallbacks` blocks, and registered ones.

import { AsyncLocalStorage } from "node:async_hooks";
import type { TaskStreamRecord } from "../../protocol/records";
import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import type { State, TaskTiming, WorkerId } from "./state";
import { now } from "../clock";
import { checkNames, nearName } from "../names";

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
 * Dask's first callback protocol (seed 001), kept for code written against it. It runs on top of
 * the five hooks, so it works wherever they do.
 */
export interface TwoCallbackHooks {
  /** When a task starts (as `pretask`); once more with key `null` when the computation has succeeded. */
  startCallback?(key: Key | null, dsk: Graph, state: State): void;
  /** When a task has finished (as `posttask`); once more with key and worker id `null` when the computation has succeeded. */
  endCallback?(key: Key | null, dsk: Graph, state: State, workerId: WorkerId): void;
}

/** What `new Callback({ … })` accepts: any of the hooks, as functions. */
export type CallbackOptions = CallbackHooks & TwoCallbackHooks;

/**
 * Hooks for the life of a `withCallbacks` block, used by profilers to time the block. `time`
 * (epoch seconds, see `now()`) is read once per block, so every profiler of a block shares
 * one start and one end and their plots line up (Dask #9478).
 */
export interface BlockHooks {
  blockStart?(time: number): void;
  blockEnd?(time: number): void | Promise<void>;
}

const HOOK_NAMES = ["start", "startState", "pretask", "posttask", "finish"] as const;
const OPTION_NAMES: readonly (keyof CallbackOptions)[] = [...HOOK_NAMES, "startCallback", "endCallback"];
/** Every name the callback machinery calls on a Callback; a subclass method close to one of these is a typo. */
const CALLED_NAMES: readonly string[] = [...OPTION_NAMES, "blockStart", "blockEnd"];

const registered = new Set<Callback>();

/**
 * A set of scheduler hooks. Subclass and define the hook methods, or pass functions:
 * `new Callback({ pretask: (key) => console.log(key) })`. A name that is not a hook (a misspelt
 * option, or a subclass method such as `postTask` or Dask's `_pretask` standing for a hook the
 * class does not define) is a TypeError: a hook that silently never runs is worse.
 */
export class Callback {
  constructor(hooks: CallbackOptions = {}) {
    checkNames(hooks, OPTION_NAMES, "Callback hook");
    for (const name of Object.keys(hooks)) {
      const hook = hooks[name as keyof CallbackOptions];
      if (hook === undefined) continue;
      if (typeof hook !== "function") throw new TypeError(`Callback hook ${name} must be a function, got ${typeof hook}`);
      (this as CallbackOptions)[name as keyof CallbackOptions] = hook as never;
    }
    checkSubclassMethods(this);
    if (this.startCallback !== undefined || this.endCallback !== undefined) adaptTwoCallbacks(this);
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
export interface Callback extends CallbackHooks, TwoCallbackHooks, BlockHooks {}

/** Per class: its methods named like a hook but not exactly (`postTask` → posttask); worked out once per class. */
const nearMissesByClass = new WeakMap<object, readonly (readonly [method: string, hook: string])[]>();

/**
 * Rejects a subclass method whose name is a hook's name up to case and underscores when the object
 * has no such hook: `postTask` or Dask's `_posttask` would otherwise never run. Any other method
 * is the subclass's own business (helpers are fine, even `_finish` beside a `finish`). Only
 * methods are seen: a subclass's fields are set after this constructor has run.
 */
function checkSubclassMethods(cb: Callback): void {
  const proto = Object.getPrototypeOf(cb) as object;
  if (proto === Callback.prototype) return;
  let nearMisses = nearMissesByClass.get(proto);
  if (nearMisses === undefined) {
    const found: (readonly [string, string])[] = [];
    for (let level = proto; level !== Callback.prototype && level !== null; level = Object.getPrototypeOf(level) as object) {
      for (const name of Object.getOwnPropertyNames(level)) {
        const hook = CALLED_NAMES.includes(name) ? undefined : nearName(name, CALLED_NAMES);
        if (hook !== undefined) found.push([name, hook]);
      }
    }
    nearMissesByClass.set(proto, (nearMisses = found));
  }
  for (const [name, hook] of nearMisses) {
    if ((cb as unknown as Record<string, unknown>)[hook] === undefined) {
      throw new TypeError(`${cb.constructor.name} defines ${name}, which is not a Callback hook (did you mean ${hook}?); the hooks are ${CALLED_NAMES.join(", ")}`);
    }
  }
}

/** Runs seed 001's startCallback / endCallback through the five hooks (besides any pretask, posttask, finish of its own). */
function adaptTwoCallbacks(cb: Callback): void {
  const { pretask, posttask, finish, startCallback, endCallback } = cb;
  if (startCallback !== undefined) {
    cb.pretask = function (this: Callback, key, dsk, state) {
      pretask?.call(this, key, dsk, state);
      startCallback.call(this, key, dsk, state);
    };
  }
  if (endCallback !== undefined) {
    cb.posttask = function (this: Callback, key, result, dsk, state, workerId, info) {
      posttask?.call(this, key, result, dsk, state, workerId, info);
      endCallback.call(this, key, dsk, state, workerId);
    };
  }
  // Dask called both a final time when its loop ran out of tasks; a failed computation never got there.
  cb.finish = function (this: Callback, dsk, state, errored, error) {
    if (!errored) {
      startCallback?.call(this, null, dsk, state);
      endCallback?.call(this, null, dsk, state, null);
    }
    finish?.call(this, dsk, state, errored, error);
  };
}

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
 * (awaited or not) and to no others, even ones running at the same time. Always a promise: it
 * settles once `fn`'s result has and the callbacks have closed the block (profilers may need
 * to wait for their last samples).
 */
export async function withCallbacks<T>(callbacks: Callback | readonly Callback[], fn: () => T | PromiseLike<T>): Promise<T> {
  const added = Array.isArray(callbacks) ? callbacks : [callbacks as Callback];
  for (const cb of added) {
    if (!(cb instanceof Callback)) throw new TypeError(`withCallbacks takes Callback objects, got ${typeof cb}`);
  }
  if (typeof fn !== "function") throw new TypeError(`withCallbacks takes a function to run, got ${typeof fn}`);
  const outer = scopes.getStore();
  const scope: Scope = { callbacks: [...(outer?.callbacks ?? []), ...added], seesRegistered: outer?.seesRegistered ?? true };
  const started: Callback[] = [];
  let result: T;
  try {
    const startTime = now();
    for (const cb of added) {
      cb.blockStart?.(startTime);
      started.push(cb);
    }
    result = await scopes.run(scope, fn);
  } catch (error) {
    // The block's own error is the one to report; a failing blockEnd must not hide it.
    await endBlock(started).catch(() => undefined);
    throw error;
  }
  await endBlock(started);
  return result;
}

/** Ends the block for every callback that started it, innermost first, even if one of them fails. */
async function endBlock(started: readonly Callback[]): Promise<void> {
  const endTime = now();
  const endings = [...started].reverse().map(async (cb) => cb.blockEnd?.(endTime));
  const outcomes = await Promise.allSettled(endings);
  const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
  if (failed !== undefined) throw failed.reason;
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
