// contextMeter (Dask's `distributed.metrics.context_meter`): user code running inside a task
// labels part of its time, or digests any metric, into the task's ledger. The ledger follows the
// task across awaits (AsyncLocalStorage), so concurrent tasks never see each other's metrics.

import { AsyncLocalStorage } from "node:async_hooks";
import { nowMs } from "../clock";
import { isThenable } from "../graph/spec";
import { type TaskTimes, ThreadClock, threadCpuMs } from "./clock";

/** One measurement, of a task or of any other piece of work: what it was doing, how much, in what unit. */
export type Metric = readonly [activity: string, value: number, unit: string];

/** A task's metering scope, or a `meter` block inside it. */
interface Frame {
  readonly ledger: TaskLedger;
  /** The enclosing block; null for the task itself. */
  readonly parent: Frame | null;
  /** Seconds digested inside this scope (by nested meters or digestMetric): not this scope's own. */
  nested: number;
}

/**
 * What one task measured: its clock readings, plus what its code metered. Filled by the thread
 * that runs the task; turned into `Metric`s by `executeMetrics`.
 */
export class TaskLedger implements Frame, TaskTimes {
  readonly ledger = this;
  readonly parent = null;
  nested = 0;
  start = 0;
  end = 0;
  cpu = Number.NaN;
  cpuStart = Number.NaN;
  /** Wall and CPU ms inside the task's outermost `meter` blocks. */
  meteredWall = 0;
  meteredCpu = 0;
  /** Seconds digested directly in the task (not inside a meter): taken from thread-noncpu first. */
  digestedSeconds = 0;
  /** The user's metrics in the order digested; null until the first. */
  user: [string, number, string][] | null = null;

  digest(label: string, value: number, unit: string): void {
    (this.user ??= []).push([label, value, unit]);
  }

  /** The task's user metrics with repeats summed, or null when its code digested none. */
  userMetrics(): Metric[] | null {
    if (this.user === null) return null;
    const byKey = new Map<string, [string, number, string]>();
    for (const [label, value, unit] of this.user) {
      const key = `${label}\u0000${unit}`;
      const seen = byKey.get(key);
      if (seen === undefined) byKey.set(key, [label, value, unit]);
      else seen[1] += value;
    }
    return [...byKey.values()];
  }
}

// One store per process-wide tsdask, even when two copies of the package are loaded (a task's
// module may resolve "tsdask" to another install than the worker's): the meter a task calls must
// find the ledger the worker opened. The same goes for the sole task's ledger (TaskMeter.openSole).
const GLOBAL_KEY = Symbol.for("tsdask.metrics.frames");
const frames: AsyncLocalStorage<Frame> = ((globalThis as Record<symbol, unknown>)[GLOBAL_KEY] ??=
  new AsyncLocalStorage<Frame>()) as AsyncLocalStorage<Frame>;
const SOLE_KEY = Symbol.for("tsdask.metrics.sole");
const sole: { ledger: TaskLedger | undefined } = ((globalThis as Record<symbol, unknown>)[SOLE_KEY] ??= { ledger: undefined }) as {
  ledger: TaskLedger | undefined;
};

/** The scope contextMeter records into: a meter block or task AsyncLocalStorage carries, else the sole task's. */
function currentFrame(): Frame | undefined {
  return frames.getStore() ?? sole.ledger;
}

/** Measures the tasks of the calling thread; executors make one per thread. */
export class TaskMeter {
  private readonly clock = new ThreadClock();

  /** Starts the clocks for a task about to run. */
  begin(): TaskLedger {
    const ledger = new TaskLedger();
    this.clock.begin(ledger);
    return ledger;
  }

  /** Runs (the synchronous part of) the task's code with its ledger open. */
  run<A extends unknown[], R>(ledger: TaskLedger, fn: (...args: A) => R, ...args: A): R {
    return frames.run(ledger, fn, ...args);
  }

  /**
   * Opens `ledger` to everything the thread runs until closeSole, without AsyncLocalStorage: for
   * a task that has the thread to itself until it settles (a Redis worker's inline task). Once a
   * store has run, AsyncLocalStorage's promise hooks cost every promise the thread makes — ~20 µs
   * per task on a Redis worker, whose Redis client makes many promises per job.
   */
  openSole(ledger: TaskLedger): void {
    sole.ledger = ledger;
  }

  closeSole(): void {
    sole.ledger = undefined;
  }

  /** Stops the clocks once the task has settled. */
  end(ledger: TaskLedger): void {
    this.clock.end(ledger);
  }

  /** The thread is about to wait for work (see ThreadClock.idle). */
  idle(): void {
    this.clock.idle();
  }
}

/** How a pool thread times its tasks: a TaskMeter, or a TaskTimer when it keeps no metrics. */
export type TaskClock = Pick<TaskMeter, "begin" | "run" | "end" | "idle">;

/**
 * A TaskMeter's stand-in for a pool that keeps no metrics (PoolOptions.metrics false): wall
 * times only, no CPU clock, and tasks run outside contextMeter's scope (its calls do nothing).
 */
export class TaskTimer implements TaskClock {
  begin(): TaskLedger {
    const ledger = new TaskLedger();
    ledger.start = nowMs();
    return ledger;
  }

  run<A extends unknown[], R>(_ledger: TaskLedger, fn: (...args: A) => R, ...args: A): R {
    return fn(...args);
  }

  end(ledger: TaskLedger): void {
    ledger.end = nowMs();
  }

  idle(): void {}
}

/**
 * The execute-layer breakdown of a task of `wall` seconds that used `cpu` seconds of its thread:
 * thread-cpu and thread-noncpu for the time outside the user's meters, then the user's metrics.
 * A meter's own CPU and non-CPU time come out of thread-cpu and thread-noncpu respectively
 * (Dask takes a meter's whole wall time out of thread-cpu, which floors it to 0 around I/O);
 * seconds digested without a meter come out of thread-noncpu first. Nothing is counted twice: the
 * seconds add up to `wall` (unless the user digests more seconds than the task lasted).
 */
export function executeMetrics(wall: number, cpu: number, ledger: TaskLedger | null): Metric[] {
  if (Number.isNaN(cpu)) {
    // No CPU clock on this platform: the time is known, its split is not.
    const outside = ledger === null ? wall : Math.max(0, wall - ledger.meteredWall / 1000 - ledger.digestedSeconds);
    return withUser([["thread", outside, "seconds"]], ledger);
  }
  if (ledger === null || (ledger.user === null && ledger.meteredWall === 0)) {
    return [
      ["thread-cpu", cpu, "seconds"],
      ["thread-noncpu", wall - cpu, "seconds"],
    ];
  }
  const outside = Math.max(0, wall - ledger.meteredWall / 1000);
  let cpuOutside = Math.min(outside, Math.max(0, cpu - ledger.meteredCpu / 1000));
  let noncpuOutside = outside - cpuOutside;
  const fromNoncpu = Math.min(noncpuOutside, ledger.digestedSeconds);
  noncpuOutside -= fromNoncpu;
  cpuOutside = Math.max(0, cpuOutside - (ledger.digestedSeconds - fromNoncpu));
  return withUser(
    [
      ["thread-cpu", cpuOutside, "seconds"],
      ["thread-noncpu", noncpuOutside, "seconds"],
    ],
    ledger,
  );
}

function withUser(metrics: Metric[], ledger: TaskLedger | null): Metric[] {
  const user = ledger?.userMetrics();
  return user == null ? metrics : [...user, ...metrics];
}

function checkLabel(label: unknown, what: string): asserts label is string {
  if (typeof label !== "string" || label === "") {
    throw new TypeError(`contextMeter.${what}: the label must be a non-empty string, got ${label === "" ? '""' : typeof label}`);
  }
}

/** A `meter` block just ended: its time goes to `label`, minus what was digested inside it. */
function closeMeter(frame: Frame, block: Frame, label: string, wallStart: number, cpuStart: number): void {
  const wall = nowMs() - wallStart;
  const seconds = Math.max(0, wall / 1000 - block.nested);
  const { ledger } = frame;
  ledger.digest(label, seconds, "seconds");
  frame.nested += seconds + block.nested;
  if (frame.parent === null) {
    ledger.meteredWall += wall;
    ledger.meteredCpu += threadCpuMs() - cpuStart;
  }
}

type Metered<F> = F extends (...args: infer A) => infer R ? (...args: A) => R : never;

/**
 * Fine performance metrics from inside a task (Dask's `context_meter`). Outside a task, and in
 * tasks of a computation nobody collects metrics for (the sync scheduler without a
 * FinePerformanceMetrics callback), both calls only run the code / do nothing.
 */
export const contextMeter = {
  /**
   * Runs `fn` (sync or async) and logs its wall time as `label`, in seconds, taking it out of the
   * task's thread-cpu / thread-noncpu (its CPU part from thread-cpu, the rest from thread-noncpu).
   * Time metered by nested meters is logged under their labels only. Digested even when `fn`
   * throws. Returns what `fn` returns.
   *
   * With a label only, returns a wrapper for functions: `const read = contextMeter.meter("I/O")(readFiles)`,
   * or `@contextMeter.meter("I/O")` on a class method (TypeScript 5 decorators).
   */
  meter: meter as {
    <T>(label: string, fn: () => T): T;
    (label: string): <F extends (...args: never[]) => unknown>(fn: F, context?: unknown) => Metered<F>;
  },

  /**
   * Adds `value` (any unit: "seconds", "bytes", "count", or your own) under `label` to the running
   * task's metrics, e.g. `digestMetric("S3 Infrequent Access", bytes, "bytes")`. Seconds digested
   * here are taken out of the time of the enclosing meter, or of the task's thread-noncpu.
   */
  digestMetric(label: string, value: number, unit: string): void {
    checkLabel(label, "digestMetric");
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new TypeError(`contextMeter.digestMetric("${label}"): the value must be a finite number, got ${String(value)}`);
    }
    if (typeof unit !== "string" || unit === "") {
      throw new TypeError(`contextMeter.digestMetric("${label}"): the unit must be a non-empty string such as "seconds" or "bytes"`);
    }
    const frame = currentFrame();
    if (frame === undefined) return;
    frame.ledger.digest(label, value, unit);
    if (unit === "seconds") {
      frame.nested += value;
      if (frame.parent === null) frame.ledger.digestedSeconds += value;
    }
  },
};

/** A function `contextMeter.meter(label)` wrapped: what it wraps, and the label. */
export interface MeteredFunction {
  readonly inner: (...args: never[]) => unknown;
  readonly label: string;
}

// Process-wide, like the ledger store: a wrapper made by another loaded copy of tsdask is known too.
const METERED_KEY = Symbol.for("tsdask.metrics.metered");
const meteredWrappers: WeakMap<object, MeteredFunction> = ((globalThis as Record<symbol, unknown>)[METERED_KEY] ??=
  new WeakMap<object, MeteredFunction>()) as WeakMap<object, MeteredFunction>;

/**
 * What `fn` wraps, when `contextMeter.meter(label)` made it: a shipper sends the inner function
 * and the label, and the worker wraps it again, since the wrapper's own source names variables
 * of this module that a worker cannot see.
 */
export function meteredFunctionOf(fn: object): MeteredFunction | undefined {
  return meteredWrappers.get(fn);
}

/** `fn` wrapped to log its time as `label` (`contextMeter.meter(label)(fn)`). */
export function meteredFunction<F extends (...args: never[]) => unknown>(label: string, fn: F): Metered<F> {
  checkLabel(label, "meter");
  if (typeof fn !== "function") throw new TypeError(`contextMeter.meter("${label}") wraps a function, got ${typeof fn}`);
  const target = fn as unknown as (...args: unknown[]) => unknown;
  const wrapper = function metered(this: unknown, ...args: unknown[]): unknown {
    return meter(label, () => target.apply(this, args));
  };
  // Named as what it wraps (Python's functools.wraps): task keys and profiles show the user's name.
  Object.defineProperty(wrapper, "name", { value: fn.name, configurable: true });
  meteredWrappers.set(wrapper, { inner: fn, label });
  return wrapper as Metered<F>;
}

function meter(label: string, fn?: () => unknown): unknown {
  checkLabel(label, "meter");
  if (fn === undefined) return (target: (...args: never[]) => unknown) => meteredFunction(label, target);
  if (typeof fn !== "function") throw new TypeError(`contextMeter.meter("${label}", fn): fn must be a function, got ${typeof fn}`);
  const frame = currentFrame();
  if (frame === undefined) return fn();
  const block: Frame = { ledger: frame.ledger, parent: frame, nested: 0 };
  const cpuStart = frame.parent === null ? threadCpuMs() : 0;
  const wallStart = nowMs();
  let result: unknown;
  try {
    result = frames.run(block, fn);
  } catch (error) {
    closeMeter(frame, block, label, wallStart, cpuStart);
    throw error;
  }
  if (!isThenable(result)) {
    closeMeter(frame, block, label, wallStart, cpuStart);
    return result;
  }
  return Promise.resolve(result).then(
    (value) => {
      closeMeter(frame, block, label, wallStart, cpuStart);
      return value;
    },
    (error: unknown) => {
      closeMeter(frame, block, label, wallStart, cpuStart);
      throw error;
    },
  );
}
