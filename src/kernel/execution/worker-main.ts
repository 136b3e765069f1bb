// The program each pool worker runs, as a worker thread or as a forked child process: it
// resolves shipped functions, runs batches of tasks one at a time and reports each task's
// outcome with its wall times, thread CPU time, bytes moved and what contextMeter recorded.

import { type MessagePort, receiveMessageOnPort, threadId, workerData } from "node:worker_threads";
import { nowMs as epochMs } from "../clock";
import { estimateNbytes } from "../metrics/nbytes";
import { type Expr, evaluate, isThenable } from "../graph/spec";
import { type TaskClock, type TaskLedger, TaskMeter, TaskTimer, executeMetrics } from "../metrics/context-meter";
import { PlainRestorer, collectGarbage, inSharedMemory } from "./buffers";
import { type AnyFunction, resolveFunction } from "./functions";
import { isProfilerControl } from "../profiling/messages";
import { findUncloneable } from "./transfer";
import * as profiler from "../profiling/worker-host";
import {
  CALL,
  LIST,
  LITERAL,
  type PoolMessage,
  type RunMessage,
  type WireExpr,
  RESULT_SIZE,
  RUN_TASKS_AT,
  type WorkerMessage,
  type WorkerThreadData,
  NO_METRICS_ARG,
  packError,
} from "./wire";

/** A thread talks to its pool over a port of its own, which it can also poll synchronously. */
const threadData = workerData as WorkerThreadData | null;
const port: MessagePort | null = threadData?.port ?? null;
const isThread = port !== null;
const waitAwake = threadData?.waitAwake ?? true;
/** Off (PoolOptions.metrics false): tasks are timed by the wall clock alone, outside contextMeter's scope. */
const measures = threadData?.metrics ?? !process.argv.includes(NO_METRICS_ARG);
/** PoolOptions.shareResults: results' own big buffers go to the pool in shared memory, copied here. */
const sharesResults = threadData?.shareResults ?? false;

/** `transfer`: buffers whose memory moves with the message (threads only; they are detached here). */
function send(message: WorkerMessage, transfer?: readonly ArrayBuffer[]): void {
  if (port !== null) port.postMessage(message, transfer);
  else if (process.connected) process.send!(message, undefined, undefined, exitIfOrphaned);
}

/** A send that fails because the pool's process is gone (EPIPE) leaves nobody to work for. */
function exitIfOrphaned(error: Error | null): void {
  if (error !== null && !process.connected) process.exit(0);
}

// ---- Functions -------------------------------------------------------------------------------

const functions = new Map<number, AnyFunction>();

function toExpr(wire: WireExpr): Expr {
  if (!Array.isArray(wire)) return { kind: "literal", value: wire };
  switch (wire[0]) {
    case LITERAL:
      return { kind: "literal", value: wire[1] };
    case CALL: {
      const args: Expr[] = [];
      for (let i = 2; i < wire.length; i++) args.push(toExpr(wire[i]));
      return { kind: "call", fn: functions.get(wire[1] as number)!, args };
    }
    case LIST: {
      const items: Expr[] = [];
      for (let i = 1; i < wire.length; i++) items.push(toExpr(wire[i]));
      return { kind: "list", items };
    }
    default:
      throw new Error(`tsdask worker: malformed task expression ${JSON.stringify(wire[0])}`);
  }
}

// ---- Running batches -------------------------------------------------------------------------

/** Results are sent when the batch ends, or sooner once a task has kept them waiting this long. */
const REPORT_AFTER_MS = 2;

/** Outcomes not yet sent, RESULT_SIZE slots each (see ResultsMessage). */
let pending: unknown[] = [];
let lastReport = 0;

function report(): void {
  const results = pending;
  pending = [];
  lastReport = epochMs();
  if (sharesResults) {
    try {
      send(results, shareResults(results));
      return;
    } catch {
      // A buffer that cannot be moved (or a result that cannot be cloned): copy, as below.
    }
  }
  try {
    send(results);
  } catch {
    // Some result cannot be cloned: send that one as an error, the others as they are.
    for (let i = 0; i < results.length; i += RESULT_SIZE) {
      if (results[i] !== 1) continue;
      try {
        structuredClone(results[i + 1]);
      } catch (error) {
        results[i] = 0;
        results[i + 1] = packError(error, findUncloneable(results[i + 1]) ?? true);
      }
    }
    send(results);
  }
}

/**
 * Puts the big buffers the successful results in `results` own (see ownedBuffers) in shared
 * memory standing in for them, each result listing its stand-ins: the copies are made here, so
 * the pool's thread (a cluster worker's, which serves its peers) hands them to its next tasks
 * without copying them itself. Returns the owned buffers too big to copy (see
 * STAND_IN_MAX_BYTES), each once, to move with the message.
 */
function shareResults(results: unknown[]): ArrayBuffer[] {
  const moved: ArrayBuffer[] = [];
  for (let i = 0; i < results.length; i += RESULT_SIZE) {
    if (results[i] !== 1) continue;
    const standIns: SharedArrayBuffer[] = [];
    results[i + 1] = inSharedMemory(results[i + 1], standIns, moved);
    if (standIns.length > 0) {
      results[i + 9] = standIns;
      collectionDue = true;
    }
  }
  return [...new Set(moved)];
}

/**
 * Shared memory standing in for plain memory goes back only once every thread that had it
 * (this one made it, or copied it for a task) has collected its garbage, and an idle thread
 * allocates nothing that would make it collect: without a collection here, a result its worker
 * spilled would stay in memory. So a thread that handled stand-ins collects as soon as it is idle
 * (a full collection of a task thread's small heap takes a few ms).
 */
let collectionDue = false;
let idleCollection: NodeJS.Immediate | undefined;

function collectWhenIdle(): void {
  if (!collectionDue) return;
  idleCollection = setImmediate(() => {
    idleCollection = undefined;
    collectionDue = false;
    collectGarbage();
  });
  idleCollection.unref();
}

/** Times each task and keeps the ledger contextMeter records into while it runs. */
const taskClock: TaskClock = measures ? new TaskMeter() : new TaskTimer();

function record(ok: boolean, value: unknown, task: TaskLedger, bytesIn: number, awaited = false): void {
  taskClock.end(task);
  profiler.taskEnded();
  const bytesOut = ok ? estimateNbytes(value, isThread) : 0;
  // Only a task whose code metered something ships its breakdown; the pool derives the rest.
  const metrics = task.user === null && task.meteredWall === 0 ? null : executeMetrics((task.end - task.start) / 1000, task.cpu / 1000, task);
  pending.push(ok ? 1 : 0, ok ? value : packError(value), task.start, task.end, task.cpu, bytesIn, bytesOut, metrics, awaited ? 1 : 0, null);
  if (task.end - lastReport > REPORT_AFTER_MS) report();
}

function evaluateWire(wire: WireExpr): unknown {
  return evaluate(toExpr(wire), []);
}

/**
 * Runs the batch's tasks from `from` on; false if it is waiting for a task's promise. `restorer`:
 * copies the shared memory standing in for plain memory into plain memory of this thread, as the
 * message listed it, before a task sees it.
 */
function runBatch(tasks: RunMessage, from: number, restorer: PlainRestorer | undefined): boolean {
  for (let i = from; i < tasks.length; i++) {
    const wire = restorer === undefined ? tasks[i] : restorer.restore(tasks[i]);
    const bytesIn = estimateNbytes(wire, isThread);
    const task = taskClock.begin();
    profiler.taskStarted();
    let value: unknown;
    try {
      value = taskClock.run(task, evaluateWire, wire);
    } catch (error) {
      record(false, error, task, bytesIn);
      continue;
    }
    if (isThenable(value)) {
      value.then(
        (resolved) => {
          record(true, resolved, task, bytesIn, true);
          runBatch(tasks, i + 1, restorer);
        },
        (error: unknown) => {
          record(false, error, task, bytesIn, true);
          runBatch(tasks, i + 1, restorer);
        },
      );
      return false;
    }
    record(true, value, task, bytesIn);
  }
  if (pending.length > 0) report();
  return true;
}

/**
 * After a quick batch the next one often follows within microseconds (a chain of small tasks).
 * A thread waits for it awake this long: waking a sleeping thread costs tens of µs on an idle machine.
 */
const POLL_MS = 0.05;

function onMessage(message: PoolMessage): void {
  // Not idle after all: the collection waits for the end of this message.
  clearImmediate(idleCollection);
  for (let next: PoolMessage | undefined = message; next !== undefined; ) {
    const started = epochMs();
    if (!runMessage(next) || port === null || !waitAwake || epochMs() - started > POLL_MS) break;
    next = poll(port);
  }
  // Back to the event loop: the thread waits for the next message (or a task's promise).
  taskClock.idle();
  collectWhenIdle();
}

function poll(from: MessagePort): PoolMessage | undefined {
  const end = epochMs() + POLL_MS;
  do {
    const received = receiveMessageOnPort(from);
    if (received !== undefined) return received.message as PoolMessage;
  } while (epochMs() < end);
  return undefined;
}

/** Defines the message's new functions and runs its tasks; false if a task's promise is pending. */
function runMessage(message: PoolMessage): boolean {
  if (isProfilerControl(message)) {
    profiler.onProfilerControl(message, send);
    return true;
  }
  for (const [id, spec] of message[0] ?? []) {
    try {
      functions.set(id, resolveFunction(spec));
    } catch (error) {
      // Reported by the first task that calls it.
      const fail = (): never => {
        throw error;
      };
      functions.set(id, fail);
    }
  }
  lastReport = epochMs();
  const standIns = message[1];
  if (standIns !== null) collectionDue = true;
  const listed = new Set<ArrayBufferLike>(standIns ?? []);
  const restorer = standIns === null ? undefined : new PlainRestorer((buffer) => listed.has(buffer));
  return runBatch(message, RUN_TASKS_AT, restorer);
}

function globalNames(): string[] {
  const names = new Set<string>();
  for (let scope: object | null = globalThis; scope !== null; scope = Object.getPrototypeOf(scope)) {
    for (const name of Object.getOwnPropertyNames(scope)) names.add(name);
  }
  return [...names];
}

if (port !== null) {
  port.on("message", onMessage);
} else if (process.send !== undefined) {
  process.on("message", onMessage as (message: unknown) => void);
  // The pool went away (the calling process exited or was killed): so do we.
  process.on("disconnect", () => process.exit(0));
  // Like a worker thread's "error" event: tell the pool why this process is about to die.
  process.on("uncaughtException", (error) => {
    const message: WorkerMessage = { type: "crash", message: error instanceof Error ? error.message : String(error) };
    if (process.connected) process.send!(message, undefined, undefined, () => process.exit(1));
    else process.exit(1);
  });
} else {
  throw new Error("tsdask's worker program runs inside a pool (a worker thread or a forked process)");
}
send({ type: "ready", workerId: isThread ? threadId : process.pid, globals: globalNames() });
