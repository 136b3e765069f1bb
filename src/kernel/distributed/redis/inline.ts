// Running a tiny task on the worker's own thread instead of a task thread. Handing a task to a
// thread and its outcome back costs two thread wake-ups (measured on a Redis worker's chain of
// tiny tasks: ~60 µs to wake the task thread, ~35 µs for the outcome back, of ~600 µs per step),
// more than such a task takes. The worker runs a task here only when its prefix's recent tasks
// were all tiny (InlinePolicy), so a task that turns out long holds the worker's thread once, and
// its prefix goes back to the task threads.

import { now as machineNow } from "../../clock";
import { keyFromId } from "../../graph/keys";
import { type Expr, evaluate, isThenable } from "../../graph/spec";
import { TaskMeter, executeMetrics } from "../../metrics/context-meter";
import { callingThread } from "../../profiling/main-thread";
import { type AnyFunction, resolveFunction } from "../../execution/functions";
import { type FnSpec, packError } from "../../execution/wire";
import { holdsPlainStandIn } from "../../execution/buffers";
import { TaskTransferError, findUncloneable } from "../../execution/transfer";
import { type TaskRequest, type TaskRun, mapWireTask, runMetrics } from "../worker/execute";

/** A task shorter than this is tiny: shorter than the trips to and from a task thread would add. */
export const INLINE_TASK_SECONDS = 0.001;
/** Tiny tasks of a prefix in a row, on any thread, before the next one runs inline. */
export const INLINE_AFTER_TINY = 3;
/** Prefixes remembered (the least recently seen is forgotten first). */
const MAX_PREFIXES = 4096;

/**
 * Which tasks run inline: those of a prefix whose last INLINE_AFTER_TINY tasks were tiny, learnt
 * from every task's compute time. One task that was not tiny starts the count again. A task whose
 * inputs this worker keeps in shared memory standing in for plain memory (its big results, see
 * standsInForPlain) goes to a thread anyway: the task must see plain memory, and the copy that
 * makes it is a task thread's work, not this thread's.
 */
export class InlinePolicy {
  private readonly tinyInARow = new Map<string, number>();

  wants(prefix: string, inputs: ReadonlyMap<string, unknown> = new Map()): boolean {
    return (this.tinyInARow.get(prefix) ?? 0) >= INLINE_AFTER_TINY && !holdsPlainStandIn(inputs);
  }

  /** A task of `prefix` computed for `seconds`. */
  ran(prefix: string, seconds: number): void {
    const count = seconds < INLINE_TASK_SECONDS ? (this.tinyInARow.get(prefix) ?? 0) + 1 : 0;
    this.tinyInARow.delete(prefix);
    this.tinyInARow.set(prefix, count);
    if (this.tinyInARow.size > MAX_PREFIXES) this.tinyInARow.delete(this.tinyInARow.keys().next().value!);
  }
}

/** The id TaskRun.thread has for a task run inline: the worker's own thread (worker_threads' main thread id). */
export const INLINE_THREAD = 0;

/** Functions resolved for inline runs, by their spec: ids are per client, specs are what they mean. */
const MAX_FUNCTIONS = 1024;

/** Runs tasks on the calling thread, measured and profiled as a task thread measures and profiles them. */
export class InlineRunner {
  private readonly meter = new TaskMeter();
  private readonly functions = new Map<string, AnyFunction>();

  /** Runs `request`, calling the functions `specs` define; `done` gets its outcome once. */
  run(request: TaskRequest, specs: readonly (readonly [number, FnSpec])[], done: (run: TaskRun) => void): void {
    const submitted = machineNow();
    let expr: Expr;
    try {
      expr = mapWireTask<Expr, AnyFunction>(request.task, request, {
        fn: (id) => {
          const spec = specs.find(([defined]) => defined === id)?.[1];
          return spec === undefined ? undefined : this.resolve(spec);
        },
        value: (value) => ({ kind: "literal", value }),
        call: (fn, args) => ({ kind: "call", fn, args }),
        list: (items) => ({ kind: "list", items }),
      });
    } catch (error) {
      const arrived = machineNow();
      done({ ok: false, value: undefined, error: packError(error), thread: -1, submitted, start: arrived, end: arrived, arrived, ranOnThread: false, queued: 0, metrics: [] });
      return;
    }
    const ledger = this.meter.begin();
    // Nothing else runs on this thread until the task settles (the worker runs a task inline only
    // when no other is running), so the ledger needs no AsyncLocalStorage to follow its awaits.
    this.meter.openSole(ledger);
    // Profiled as a task of the worker's own thread: its samples are compute, under its prefix.
    const mark = callingThread.taskStarted(keyFromId(request.key));
    let awaited = false;
    const finish = (ok: boolean, result: unknown): void => {
      this.meter.closeSole();
      this.meter.end(ledger);
      callingThread.taskEnded(mark);
      const timing = { startTime: ledger.start / 1000, endTime: ledger.end / 1000, metrics: executeMetrics((ledger.end - ledger.start) / 1000, ledger.cpu / 1000, ledger), awaited };
      const arrived = machineNow();
      done({
        ok,
        value: ok ? result : undefined,
        error: ok ? undefined : packError(result),
        thread: INLINE_THREAD,
        submitted,
        start: timing.startTime,
        end: timing.endTime,
        arrived,
        ranOnThread: true,
        queued: 0,
        metrics: runMetrics(timing, submitted, arrived),
      });
    };
    let value: unknown;
    try {
      value = evaluate(expr, []);
    } catch (error) {
      finish(false, error);
      return;
    }
    // A result run on a task thread is checked as it is posted back; one run here is stored as it
    // is, so the same check is made here, before storing fails with V8's bare "could not be cloned".
    const settle = (result: unknown): void => {
      const uncloneable = findUncloneable(result);
      if (uncloneable === undefined) finish(true, result);
      else finish(false, new TaskTransferError(keyFromId(request.key), "result", undefined, uncloneable));
    };
    if (isThenable(value)) {
      awaited = true;
      value.then(settle, (error: unknown) => finish(false, error));
    } else {
      settle(value);
    }
  }

  private resolve(spec: FnSpec): AnyFunction {
    const cacheKey = JSON.stringify(spec);
    let fn = this.functions.get(cacheKey);
    if (fn === undefined) {
      fn = resolveFunction(spec);
      if (this.functions.size >= MAX_FUNCTIONS) this.functions.clear();
      this.functions.set(cacheKey, fn);
    }
    return fn;
  }
}
