// A pool of worker threads or child processes running worker-main, shared by the computations
// that ask for the same kind and size. It queues the tasks executors submit, hands them to idle
// workers in batches, routes outcomes back, replaces workers that die or are stopped, and keeps
// the process alive only while it has work.

import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { MessageChannel, Worker, receiveMessageOnPort } from "node:worker_threads";
import type { Key } from "../graph/keys";
import { formatKey } from "../graph/keys";
import { type Metric, executeMetrics } from "../metrics/context-meter";
import { COLLECT_TIMEOUT_MS, profiling } from "../profiling/hub";
import { PoolProfiles } from "../profiling/pool-source";
import type { TaskTiming } from "../callbacks/state";
import { BufferMover, holdsBigBuffer, markPlainStandIns } from "./buffers";
import type { TaskJob, TaskOutcome } from "./task";
import { TaskTransferError } from "./transfer";
import { FunctionShipper, FunctionTable, findUncloneableWireArgument } from "./ship";
import {
  CALL,
  type FnSpec,
  LITERAL,
  type PoolMessage,
  type ReadyMessage,
  type RunMessage,
  type WireExpr,
  type PackedError,
  NO_METRICS_ARG,
  RESULT_SIZE,
  type ResultsMessage,
  type WorkerMessage,
  type WorkerThreadData,
  unpackError,
} from "./wire";

export type PoolKind = "threads" | "processes";

/** A worker stopped while running a task: killed, out of memory, or `process.exit()` in the task. */
export class WorkerDiedError extends Error {
  override name = "WorkerDiedError";
  constructor(
    readonly key: Key,
    readonly workerId: number,
    readonly how: string,
  ) {
    super(`Task ${formatKey(key)} failed: its worker ${workerId} ${how}`);
  }
}

/** Whoever submitted a task: told its outcome, asked how many of its tasks to batch. */
export interface PoolClient {
  readonly batchSize: number;
  /** Its tasks take microseconds: worth waiting for their results awake (see POLL_MS). */
  readonly quickTasks: boolean;
  recordDuration(ms: number): void;
}

/** What the pool needs of a task: its node (echoed in the outcome) and key (named in errors). */
export type PoolJob = Pick<TaskJob, "node" | "key">;

interface Entry {
  readonly client: PoolClient;
  readonly job: PoolJob;
  readonly wire: WireExpr;
  readonly fnIds: readonly number[];
  readonly done: (outcome: TaskOutcome) => void;
  /** Its values hold big plain buffers that go to the thread as moved copies (PoolOptions.moveInputs). */
  readonly movesBuffers: boolean;
  /** Buffers of its values that move to the thread themselves, uncopied (see `enqueue`). */
  readonly given: readonly ArrayBuffer[] | undefined;
  /** For the first task of a batch: ms spent cloning the batch into the worker's message (TaskTiming.postSeconds). */
  postMs?: number;
}

/** One thread or process, seen through the few operations the pool needs. */
interface Transport {
  readonly workerId: number;
  /** `transfer`: buffers whose memory moves with the message (threads; a process gets copies). */
  post(message: PoolMessage, transfer?: readonly ArrayBuffer[]): void;
  stop(): void;
  setKeepsAlive(keep: boolean): void;
  /** Takes a message that has arrived, without waiting (threads only). */
  poll?(): WorkerMessage | undefined;
}

/**
 * How long the calling thread waits, awake, for the results of quick tasks before it lets the
 * event loop sleep: waking a sleeping thread costs tens of µs on an idle machine, more than a
 * small task's round trip. Workers do the same for their next batch (worker-main's POLL_MS).
 */
const POLL_MS = 0.03;

const WORKER_SCRIPT = join(__dirname, "worker-main.js");

/**
 * The caller's Node flags minus those that would make the worker something else: a script
 * (`-e`, `-p`), a REPL, a test runner, a file watcher, or a second debugger on the same port.
 */
export function workerExecArgv(): string[] {
  const kept: string[] = [];
  const flags = process.execArgv;
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i];
    if (["-e", "--eval", "-p", "--print"].includes(flag)) {
      i++; // and its script
    } else if (/^--(eval|print|input-type)=/.test(flag) || flag === "-i" || flag === "--interactive") {
      // dropped
    } else if (/^--(test|inspect|debug|watch)/.test(flag)) {
      if (!flag.includes("=") && i + 1 < flags.length && !flags[i + 1].startsWith("-")) i++; // its value
    } else {
      kept.push(flag);
    }
  }
  return kept;
}

class PoolWorker {
  readonly transport: Transport;
  /** The batch being run, and how many of its outcomes came back. */
  batch: Entry[] | undefined;
  reported = 0;
  readonly knownFunctions = new Set<number>();
  ready = false;
  /** Stopped on purpose (cancel, shutdown): its exit is not a failure. */
  retired = false;
  /** A crash reported before the exit, for the error message. */
  crash: string | undefined;

  constructor(pool: WorkerPool, kind: PoolKind, keepsAlive: boolean) {
    const onMessage = (message: WorkerMessage): void => pool.onMessage(this, message);
    if (kind === "threads") {
      const { port1, port2 } = new MessageChannel();
      const workerData: WorkerThreadData = { port: port2, waitAwake: pool.waitAwake, metrics: pool.metrics, shareResults: pool.shareResults };
      const worker = new Worker(WORKER_SCRIPT, { workerData, transferList: [port2] });
      port1.on("message", onMessage);
      worker.on("error", (error) => (this.crash = `crashed (${error.message})`));
      worker.on("exit", (code) => pool.onExit(this, this.crash ?? `exited with code ${code}`));
      this.transport = {
        workerId: worker.threadId,
        post: (message, transfer) => port1.postMessage(message, transfer),
        stop: () => {
          port1.close();
          void worker.terminate();
        },
        setKeepsAlive: (keep) => {
          if (keep) {
            worker.ref();
            port1.ref();
          } else {
            worker.unref();
            port1.unref();
          }
        },
        poll: () => receiveMessageOnPort(port1)?.message as WorkerMessage | undefined,
      };
    } else {
      const child: ChildProcess = fork(WORKER_SCRIPT, pool.metrics ? [] : [NO_METRICS_ARG], { serialization: "advanced", execArgv: workerExecArgv() });
      child.on("message", onMessage as (message: unknown) => void);
      child.on("error", (error) => (this.crash = `failed (${error.message})`));
      child.on("exit", (code, signal) =>
        pool.onExit(this, this.crash ?? (signal !== null ? `was killed by ${signal}` : `exited with code ${code}`)),
      );
      this.transport = {
        workerId: child.pid ?? -1,
        post: (message) => void child.send(message),
        stop: () => void child.kill("SIGKILL"),
        setKeepsAlive: (keep) => {
          if (keep) {
            child.ref();
            child.channel?.ref();
          } else {
            child.unref();
            child.channel?.unref();
          }
        },
      };
    }
    this.transport.setKeepsAlive(keepsAlive);
  }
}

export interface PoolOptions {
  /**
   * Whether the calling thread and the threads wait awake for the next message of quick tasks
   * (see POLL_MS); default true. A process sharing its cores with others (a cluster worker)
   * lets its threads sleep instead: spinning would take the cores the others need.
   */
  readonly waitAwake?: boolean;
  /**
   * Whether tasks are measured for fine performance metrics (thread CPU time, contextMeter's
   * scope, serialize time); default true. Off, outcomes carry only their wall times: a cluster
   * run with TSDASK_METRICS=off does no metrics work at all (bench/cluster-fpm.ts).
   */
  readonly metrics?: boolean;
  /**
   * Threads only: a result's own big ArrayBuffers (see ownedBuffers) come to the calling thread in
   * shared memory standing in for them (see standsInForPlain), copied there by the task's thread,
   * whose buffers are then released: a task must not keep a buffer it returns; default false. A
   * cluster worker, which holds results for its own tasks, its peers and the client, shares them:
   * with moveInputs its tasks then take them without a copy on the calling thread, and see plain
   * memory again (their thread copies it, see PlainRestorer); frames send them as plain memory.
   */
  readonly shareResults?: boolean;
  /**
   * Threads only: the big plain ArrayBuffers in a task's values (OWNED_BUFFER_MIN_BYTES and more)
   * go to its thread as copies moved with the message rather than cloned inside it (see
   * BufferMover): one copy instead of two, and far less of the calling thread's time; default
   * false. Whether a value holds such a buffer is remembered per value object, so the values must
   * not change while the pool runs tasks on them: a cluster worker's stored results, which it
   * never changes.
   */
  readonly moveInputs?: boolean;
}

export class WorkerPool {
  readonly waitAwake: boolean;
  readonly metrics: boolean;
  readonly shareResults: boolean;
  readonly moveInputs: boolean;
  /** Values already looked at for big plain buffers (PoolOptions.moveInputs). */
  private readonly holdsBuffers = new WeakMap<object, boolean>();
  private readonly workers: PoolWorker[] = [];
  private queue: Entry[] = [];
  private flushScheduled = false;
  private polling = false;
  private waitingForReady = 0;
  private keepsAlive = false;
  private readonly functions = new FunctionTable();
  private readonly shipperReady: Promise<FunctionShipper>;
  private resolveShipper!: (shipper: FunctionShipper) => void;
  private rejectShipper!: (error: Error) => void;
  /** Set when workers cannot start at all: every task fails with it instead of respawning forever. */
  private broken: Error | undefined;
  /** The workers' statistical profiles, while someone profiles (see kernel/profiling). */
  private readonly profiles = new PoolProfiles();

  constructor(
    readonly kind: PoolKind,
    readonly size: number,
    options: PoolOptions = {},
  ) {
    this.waitAwake = options.waitAwake ?? true;
    this.metrics = options.metrics ?? true;
    this.shareResults = kind === "threads" && (options.shareResults ?? false);
    this.moveInputs = kind === "threads" && (options.moveInputs ?? false);
    this.shipperReady = new Promise((resolve, reject) => {
      this.resolveShipper = resolve;
      this.rejectShipper = reject;
    });
    this.shipperReady.catch(() => {}); // a pool that never starts is reported by ready() and enqueue()
    for (let i = 0; i < size; i++) this.workers.push(new PoolWorker(this, kind, false));
    profiling.register(this.profiles);
  }

  /** Has every worker send what it has sampled so far (when profiling is on). */
  collectProfiles(timeoutMs = COLLECT_TIMEOUT_MS): Promise<void> {
    return this.profiles.collect(timeoutMs);
  }

  /** Resolves once a worker has said which globals task sources may use. */
  async ready(): Promise<FunctionShipper> {
    if (this.broken !== undefined) throw this.broken;
    if (this.functions.shipper !== undefined) return this.functions.shipper;
    // Starting workers are unreferenced; someone waiting for them must keep the process alive.
    this.waitingForReady++;
    this.updateKeepAlive();
    try {
      return await this.shipperReady;
    } finally {
      this.waitingForReady--;
      this.updateKeepAlive();
    }
  }

  /** The id under which `fn` travels; decides (and checks) how on first sight. */
  functionId(fn: (...args: never[]) => unknown, key: Key): number {
    if (this.functions.shipper === undefined) throw new Error(`The ${this.kind} pool is not ready yet (internal: prepare() was skipped)`);
    return this.functions.idFor(fn, key);
  }

  /**
   * The id under which the function `spec` describes travels. Functions with the same spec (the
   * same source, say, from re-running a notebook cell) share an id, so the table grows with
   * distinct code rather than with function objects.
   */
  functionIdForSpec(spec: FnSpec): number {
    return this.functions.idOf(spec);
  }

  /**
   * Queues a task. `given` (with moveInputs): big plain buffers of the task's values that nothing
   * else uses, such as inputs fetched for this task alone; they move to the thread without a copy,
   * and are detached on this thread once the task is handed over.
   */
  enqueue(client: PoolClient, job: PoolJob, wire: WireExpr, fnIds: readonly number[], done: (outcome: TaskOutcome) => void, given?: readonly ArrayBuffer[]): void {
    if (this.broken !== undefined) {
      done({ node: job.node, ok: false, error: this.broken, workerId: null });
      return;
    }
    const movesBuffers = this.moveInputs && this.wireHoldsBuffers(wire);
    this.queue.push({ client, job, wire, fnIds, done, movesBuffers, given: movesBuffers && given !== undefined && given.length > 0 ? given : undefined });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // The loop submits several tasks in a row; hand them out together.
      queueMicrotask(() => this.flush());
    }
  }

  /** Stops the workers running `client`'s tasks (and replaces them); drops its queued tasks. */
  cancel(client: PoolClient): void {
    this.release(client);
    for (let i = 0; i < this.workers.length; i++) {
      const worker = this.workers[i];
      if (worker.batch?.[0]?.client !== client) continue;
      worker.retired = true;
      worker.transport.stop();
      this.profiles.workerGone(worker.transport);
      this.workers[i] = new PoolWorker(this, this.kind, this.keepsAlive);
    }
    this.updateKeepAlive();
  }

  /**
   * Stops one task: drops it if it is queued, stops its worker if it is running (the worker is
   * replaced and the batch's later tasks go back in line); `done` gets `reason`. A task handed to
   * a worker but not started yet runs anyway; false then, and its outcome arrives as usual.
   */
  cancelTask(job: PoolJob, reason: Error): boolean {
    const queued = this.queue.findIndex((entry) => entry.job === job);
    if (queued >= 0) {
      const [entry] = this.queue.splice(queued, 1);
      entry.done({ node: job.node, ok: false, error: reason, workerId: null });
      this.updateKeepAlive();
      return true;
    }
    const slot = this.workers.findIndex((worker) => worker.batch?.[worker.reported]?.job === job);
    if (slot < 0) return false;
    const worker = this.workers[slot];
    const [running, ...notStarted] = worker.batch!.slice(worker.reported);
    worker.retired = true;
    worker.batch = undefined;
    worker.transport.stop();
    this.workers[slot] = new PoolWorker(this, this.kind, this.keepsAlive);
    this.queue.unshift(...notStarted);
    running.done({ node: job.node, ok: false, error: reason, workerId: worker.transport.workerId });
    if (this.queue.length > 0) this.flush();
    this.updateKeepAlive();
    return true;
  }

  /** Forgets `client`'s tasks that have not been handed to a worker. */
  release(client: PoolClient): void {
    if (this.queue.some((entry) => entry.client === client)) this.queue = this.queue.filter((entry) => entry.client !== client);
    this.updateKeepAlive();
  }

  /** Stops every worker now; queued and running tasks fail with `reason`. The pool is unusable afterwards. */
  close(reason = new Error(`The ${this.kind} pool was closed`)): void {
    this.broken = reason;
    this.rejectShipper(reason);
    profiling.unregister(this.profiles);
    const unfinished = [...this.queue];
    for (const worker of this.workers) {
      worker.retired = true;
      worker.transport.stop();
      this.profiles.workerGone(worker.transport);
      if (worker.batch !== undefined) unfinished.push(...worker.batch.slice(worker.reported));
    }
    this.workers.length = 0;
    this.queue = [];
    for (const entry of unfinished) entry.done({ node: entry.job.node, ok: false, error: reason, workerId: null });
    this.updateKeepAlive();
  }

  get closed(): boolean {
    return this.broken !== undefined;
  }

  get workerIds(): number[] {
    return this.workers.map((worker) => worker.transport.workerId);
  }

  private flush(): void {
    this.flushScheduled = false;
    let idle = this.workers.filter((worker) => worker.batch === undefined).length;
    for (const worker of this.workers) {
      if (this.queue.length === 0 || idle === 0) break;
      if (worker.batch !== undefined) continue;
      // A batch holds one client's tasks, so cancelling a computation never touches another's.
      const client = this.queue[0].client;
      const limit = Math.min(client.batchSize, Math.ceil(this.queue.length / idle));
      let size = 1;
      while (size < limit && this.queue[size]?.client === client) size++;
      this.run(worker, this.queue.splice(0, size));
      idle--;
    }
    this.updateKeepAlive();
    if (!this.polling) this.pollQuickResults();
  }

  /** Waits up to POLL_MS, awake, for a result of quick tasks, and handles the first that comes. */
  private pollQuickResults(): void {
    if (!this.waitAwake) return;
    const waiting = this.workers.filter((worker) => worker.batch?.[0].client.quickTasks && worker.transport.poll !== undefined);
    if (waiting.length === 0) return;
    this.polling = true;
    try {
      const end = performance.now() + POLL_MS;
      do {
        for (const worker of waiting) {
          const message = worker.transport.poll!();
          if (message !== undefined) return this.onMessage(worker, message);
        }
      } while (performance.now() < end);
    } finally {
      this.polling = false;
    }
  }

  private run(worker: PoolWorker, batch: Entry[]): void {
    const fns: [number, FnSpec][] = [];
    for (const entry of batch) {
      for (const id of entry.fnIds) {
        if (worker.knownFunctions.has(id)) continue;
        worker.knownFunctions.add(id);
        fns.push([id, this.functions.spec(id)]);
      }
    }
    try {
      // postMessage / send clone the message on this thread before returning: with the copies
      // made to move, that is the batch's serialize time.
      const posting = performance.now();
      const message: unknown[] = [fns.length > 0 ? fns : null, null];
      const mover = batch.some((entry) => entry.movesBuffers) ? new BufferMover(new Set(batch.flatMap((entry) => entry.given ?? []))) : undefined;
      for (const entry of batch) message.push(mover !== undefined && entry.movesBuffers ? movedWire(entry.wire, mover) : entry.wire);
      if (mover !== undefined && mover.standIns.size > 0) message[1] = [...mover.standIns];
      worker.transport.post(message as unknown as RunMessage, mover?.transfer);
      if (this.metrics) batch[0].postMs = performance.now() - posting;
    } catch {
      // Something in the batch cannot be cloned: fail those tasks, send the rest.
      for (const [id] of fns) worker.knownFunctions.delete(id);
      const sendable = batch.filter((entry) => {
        try {
          structuredClone(entry.wire);
          return true;
        } catch (cloneError) {
          const error = new TaskTransferError(entry.job.key, "argument", cloneError, findUncloneableWireArgument(entry.wire));
          entry.done({ node: entry.job.node, ok: false, error, workerId: null });
          return false;
        }
      });
      if (sendable.length > 0 && sendable.length < batch.length) this.run(worker, sendable);
      return;
    }
    worker.batch = batch;
    worker.reported = 0;
    if (this.profiles.active) this.profiles.tasksSent(worker.transport, batch.map((entry) => entry.job));
  }

  /** Whether a value of `wire` holds a big plain buffer; remembered per value object (see PoolOptions.moveInputs). */
  private wireHoldsBuffers(wire: WireExpr): boolean {
    if (!Array.isArray(wire)) return this.valueHoldsBuffers(wire);
    if (wire[0] === LITERAL) return this.valueHoldsBuffers(wire[1]);
    for (let i = wire[0] === CALL ? 2 : 1; i < wire.length; i++) if (this.wireHoldsBuffers(wire[i])) return true;
    return false;
  }

  private valueHoldsBuffers(value: unknown): boolean {
    if (value === null || typeof value !== "object") return false;
    let holds = this.holdsBuffers.get(value);
    if (holds === undefined) {
      holds = holdsBigBuffer(value);
      this.holdsBuffers.set(value, holds);
    }
    return holds;
  }

  onMessage(worker: PoolWorker, message: WorkerMessage): void {
    if (!Array.isArray(message)) {
      if (message.type === "ready") {
        worker.ready = true;
        this.onReady(message);
        this.profiles.workerReady(worker.transport);
      } else if (message.type === "profile") {
        this.profiles.onMessage(worker.transport, message);
      } else {
        worker.crash = `crashed (${message.message})`;
      }
      return;
    }
    const batch = worker.batch;
    if (batch === undefined || worker.retired) return;
    const workerId = worker.transport.workerId;
    for (let i = 0; i < message.length; i += RESULT_SIZE) {
      const entry = batch[worker.reported++];
      entry.done(this.outcome(entry, message, i, workerId));
    }
    if (worker.reported === batch.length) {
      worker.batch = undefined;
      if (this.queue.length > 0) this.flush();
      else this.updateKeepAlive();
    }
  }

  private onReady(message: ReadyMessage): void {
    if (this.functions.shipper !== undefined) return;
    this.resolveShipper(this.functions.setWorkerGlobals(message.globals));
  }

  /** The outcome at `results[at …]` (see ResultsMessage). */
  private outcome(entry: Entry, results: ResultsMessage, at: number, workerId: number): TaskOutcome {
    const ok = results[at] as number;
    const value = results[at + 1];
    const start = results[at + 2] as number;
    const end = results[at + 3] as number;
    const cpu = results[at + 4] as number;
    const bytesIn = results[at + 5] as number;
    const bytesOut = results[at + 6] as number;
    const metered = results[at + 7] as Metric[] | null;
    const awaited = results[at + 8] === 1;
    const standIns = results[at + 9] as SharedArrayBuffer[] | null;
    if (standIns !== null) markPlainStandIns(standIns);
    entry.client.recordDuration(end - start);
    const measured = this.metrics;
    const timing: TaskTiming = {
      startTime: start / 1000,
      endTime: end / 1000,
      cpuTime: Number.isNaN(cpu) ? undefined : cpu / 1000,
      bytesIn,
      bytesOut,
      metrics: measured ? (metered ?? executeMetrics((end - start) / 1000, cpu / 1000, null)) : undefined,
      postSeconds: measured && entry.postMs !== undefined ? entry.postMs / 1000 : undefined,
      awaited,
    };
    const node = entry.job.node;
    if (ok === 1) return { node, ok: true, value, workerId, timing };
    const error = value as PackedError;
    if (error.kind === "error" && error.unsendableResult !== undefined) {
      const where = error.unsendableResult === true ? undefined : error.unsendableResult;
      return { node, ok: false, error: new TaskTransferError(entry.job.key, "result", unpackError(error), where), workerId, timing };
    }
    return { node, ok: false, error: unpackError(error), workerId, timing };
  }

  onExit(worker: PoolWorker, how: string): void {
    const slot = this.workers.indexOf(worker);
    this.profiles.workerGone(worker.transport);
    if (worker.retired || slot < 0) return;
    if (!worker.ready) {
      // It never started: respawning would fail the same way.
      this.close(new Error(`The ${this.kind} pool cannot start workers: a worker ${how}`));
      return;
    }
    this.workers[slot] = new PoolWorker(this, this.kind, this.keepsAlive);
    const batch = worker.batch;
    if (batch !== undefined) {
      // The task that was running fails; the batch's later tasks never started and go back in line.
      const [running, ...notStarted] = batch.slice(worker.reported);
      this.queue.unshift(...notStarted);
      const workerId = worker.transport.workerId;
      running.done({ node: running.job.node, ok: false, error: new WorkerDiedError(running.job.key, workerId, how), workerId });
      if (this.queue.length > 0) this.flush();
    }
    this.updateKeepAlive();
  }

  /** Workers keep the process alive only while tasks are queued or running. */
  private updateKeepAlive(): void {
    const busy = this.waitingForReady > 0 || this.queue.length > 0 || this.workers.some((worker) => worker.batch !== undefined);
    if (busy === this.keepsAlive) return;
    this.keepsAlive = busy;
    for (const worker of this.workers) worker.transport.setKeepsAlive(busy);
  }
}

/** `wire` with the values of its literals and arguments rebuilt by `mover`; a value too deep to walk goes as it is. */
function movedWire(wire: WireExpr, mover: BufferMover): WireExpr {
  if (!Array.isArray(wire)) return moved(wire, mover);
  if (wire[0] === LITERAL) return [LITERAL, moved(wire[1], mover)];
  const first = wire[0] === CALL ? 2 : 1;
  const rebuilt: unknown[] = wire.slice(0, first);
  for (let i = first; i < wire.length; i++) rebuilt.push(movedWire(wire[i], mover));
  return rebuilt;
}

function moved(value: unknown, mover: BufferMover): unknown {
  try {
    return mover.move(value);
  } catch (error) {
    if (error instanceof RangeError) return value;
    throw error;
  }
}
