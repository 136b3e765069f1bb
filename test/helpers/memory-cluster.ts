// A cluster in one process for the unit tier: the real Scheduler (and its ClusterState) behind a
// Transport whose workers are the real worker state machine (WorkerStateMachine) with a map for data.
// Batches travel as microtasks, so a computation runs in milliseconds and in the same order on
// every run. A worker runs a task on the calling thread the moment its state machine starts it;
// a task whose function returns a promise stays executing until that settles (the gates of
// test/fixtures/memory-tasks.ts stand in for Dask's distributed.Event). Workers fetch inputs
// from each other's maps. Nothing here spills, heartbeats, measures or profiles, and no process
// dies: the process-based tests (cluster.test.ts, worker.test.ts, redis-*.test.ts) cover those.

import { now } from "../../src/kernel/clock";
import { ClusterCard } from "../../src/kernel/distributed/display";
import type { FromWorker, GatherReplyMessage, RegisterMessage, ToWorker, WorkerAddress } from "../../src/kernel/distributed/messages";
import { Scheduler, type SchedulerSettings } from "../../src/kernel/distributed/scheduler/scheduler";
import type { Transport, TransportEvents } from "../../src/kernel/distributed/scheduler/transport";
import type { WorkerState } from "../../src/kernel/distributed/scheduler/workers";
import { mapWireTask } from "../../src/kernel/distributed/worker/execute";
import { typeName } from "../../src/kernel/distributed/worker/names";
import { EventFeed, type WorkerEvent, type WorkerInstruction, WorkerStateMachine } from "../../src/kernel/distributed/worker/state";
import { type AnyFunction, resolveFunction } from "../../src/kernel/execution/functions";
import { packError } from "../../src/kernel/execution/wire";
import { type Expr, evaluate, isThenable } from "../../src/kernel/graph/spec";
import { nbytes as sizeOf } from "../../src/kernel/metrics/nbytes";
import { DEFAULT_PROFILING } from "../../src/kernel/profiling/hub";
import { packProfile } from "../../src/protocol/profile";

export interface MemoryClusterOptions extends SchedulerSettings {
  /** Threads of each worker started with the cluster, one entry per worker. Default [1, 1]. */
  readonly workers?: readonly number[];
  /** Each worker's memory limit in bytes, as its registration reports it. Default 1 GB. */
  readonly memoryLimit?: number;
}

/** Told when a worker starts a task, before it runs: a test may remove the worker there (a task that kills its worker). */
export type TaskStartedHook = (worker: MemoryWorker, key: string) => void;

/** The names on this process's globalThis: a shipped source may use them (as a real worker reports at register). */
function globalNames(): string[] {
  const names = new Set<string>();
  for (let scope: object | null = globalThis; scope !== null; scope = Object.getPrototypeOf(scope)) {
    for (const name of Object.getOwnPropertyNames(scope)) names.add(name);
  }
  return [...names];
}

/** A worker in this process: the worker state machine, a map for its data, tasks run on the calling thread. */
export class MemoryWorker {
  readonly address: WorkerAddress;
  readonly state: WorkerStateMachine;
  /** The values it holds, by key id. */
  readonly data = new Map<string, unknown>();
  /** Keys of the tasks it started, in order. */
  readonly started: string[] = [];
  private readonly functions = new Map<number, AnyFunction>();
  private readonly feed: EventFeed;
  private outbox: FromWorker[] = [];
  private closed = false;

  constructor(
    readonly registration: RegisterMessage,
    private readonly transport: MemoryTransport,
  ) {
    this.address = registration.address;
    this.state = new WorkerStateMachine({ address: this.address, nthreads: registration.nthreads });
    this.feed = new EventFeed(this.state, (instruction) => this.carryOut(instruction));
  }

  get name(): string {
    return this.registration.name;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Keys executing now. */
  get executing(): string[] {
    return [...this.state.executing].map((task) => task.key);
  }

  /** Stops taking part: later outcomes of its running tasks are thrown away, as a dead process's would be. */
  close(): void {
    this.closed = true;
  }

  /** A batch from the scheduler. */
  receive(messages: readonly ToWorker[]): void {
    for (const message of messages) {
      if (this.closed) return;
      switch (message.op) {
        case "compute-task":
          this.apply({ type: "compute-task", message });
          break;
        case "define-functions":
          for (const [id, spec] of message.functions) this.functions.set(id, resolveFunction(spec));
          break;
        case "free-keys":
          this.apply({ type: "free-keys", keys: message.keys });
          break;
        case "run":
          this.runFunction(message.requestId, message.fn);
          break;
        case "profile":
          this.send({ op: "profile-reply", requestId: message.requestId, enabled: false, profile: packProfile([], DEFAULT_PROFILING.interval) });
          break;
        case "heartbeat-reply":
          break;
        case "close":
          this.transport.removeWorker(this.address, `the scheduler asked it to (${message.reason})`);
          break;
      }
    }
  }

  /** The scheduler pauses or resumes it (Dask's worker status). */
  setPaused(paused: boolean): void {
    this.send({ op: "worker-status-change", status: paused ? "paused" : "running" });
    this.apply({ type: paused ? "pause" : "unpause" });
  }

  /** Drops a value behind the scheduler's back (a lost replica: the next reader finds it missing). */
  lose(key: string): void {
    this.data.delete(key);
  }

  /** Feeds an event to the state machine and carries out its instructions (see EventFeed). */
  private apply(event: WorkerEvent): void {
    this.feed.apply(event);
  }

  private carryOut(instruction: WorkerInstruction): void {
    // A closed worker's process would be gone: nothing it decides happens.
    if (this.closed) return;
    switch (instruction.op) {
      case "execute":
        this.execute(instruction.key);
        return;
      case "cancel-execute":
        // A task on the calling thread cannot be stopped; the state machine throws its outcome away.
        return;
      case "gather-dep":
        queueMicrotask(() => this.gatherDep(instruction.worker, instruction.keys));
        return;
      case "release-data":
        this.data.delete(instruction.key);
        return;
      case "send":
        this.send(instruction.message);
        return;
    }
  }

  private execute(key: string): void {
    const task = this.state.tasks.get(key)!;
    this.started.push(key);
    this.transport.taskStarted(this, key);
    if (this.closed) return;
    const start = now();
    const done = (ok: boolean, result: unknown): void => {
      if (this.closed) return;
      const startstops = [{ action: "compute" as const, start, stop: now() }];
      if (ok) {
        const kept = this.state.tasks.get(key);
        if (kept !== undefined && (kept.state === "executing" || (kept.state === "cancelled" && kept.dependents.size > 0))) this.data.set(key, result);
        this.apply({ type: "execute-success", key, nbytes: sizeOf(result), resultType: typeName(result), thread: 0, startstops });
      } else {
        this.apply({ type: "execute-failure", key, error: packError(result), thread: 0, startstops });
      }
    };
    let value: unknown;
    try {
      const inputs = new Map(task.dependencies.map((dependency) => [dependency.key, this.data.get(dependency.key)]));
      const expr = mapWireTask<Expr, AnyFunction>(task.run!, { key, name: task.name, task: task.run!, inputs }, {
        fn: (id) => this.functions.get(id),
        value: (literal) => ({ kind: "literal", value: literal }),
        call: (fn, args) => ({ kind: "call", fn, args }),
        list: (items) => ({ kind: "list", items }),
      });
      value = evaluate(expr, []);
    } catch (error) {
      done(false, error);
      return;
    }
    if (isThenable(value)) value.then((result) => done(true, result), (error: unknown) => done(false, error));
    else done(true, value);
  }

  private gatherDep(peerAddress: WorkerAddress, keys: readonly string[]): void {
    if (this.closed) return;
    const peer = this.transport.worker(peerAddress);
    if (peer === undefined) {
      this.apply({ type: "gather-dep-failure", worker: peerAddress, keys });
      return;
    }
    const received: { key: string; nbytes: number; type: string }[] = [];
    const missing: string[] = [];
    for (const key of keys) {
      if (!peer.data.has(key)) {
        missing.push(key);
        continue;
      }
      const value = peer.data.get(key);
      received.push({ key, nbytes: sizeOf(value), type: typeName(value) });
      // Only what is still awaited is kept; the rest was released while it travelled.
      if (this.state.tasks.get(key)?.state === "flight") this.data.set(key, value);
    }
    const at = now();
    this.apply({ type: "gather-dep-success", worker: peerAddress, received, missing, transfer: [{ action: "transfer", start: at, stop: at, source: peerAddress }] });
  }

  private runFunction(requestId: number, spec: Parameters<typeof resolveFunction>[0]): void {
    const reply = (ok: boolean, result: unknown): void => {
      this.send(ok ? { op: "run-reply", requestId, ok, value: result } : { op: "run-reply", requestId, ok, error: packError(result) });
    };
    try {
      const value = resolveFunction(spec)(this);
      if (isThenable(value)) value.then((result) => reply(true, result), (error: unknown) => reply(false, error));
      else reply(true, value);
    } catch (error) {
      reply(false, error);
    }
  }

  /** Queues a message; the queue goes to the scheduler as one batch at the end of this microtask run. */
  private send(message: FromWorker): void {
    this.outbox.push(message);
    if (this.outbox.length > 1) return;
    queueMicrotask(() => {
      const batch = this.outbox;
      this.outbox = [];
      if (!this.closed) this.transport.report(this, batch);
    });
  }
}

/** The Transport: workers in a map, batches as microtasks. */
class MemoryTransport implements Transport {
  readonly placement = "locality" as const;
  readonly description = "memory (one process)";
  /** Batches delivered so far either way: `settled` waits until a turn delivers none. */
  deliveries = 0;
  taskStartedHook: TaskStartedHook | undefined;
  private events: TransportEvents | undefined;
  private readonly workers = new Map<WorkerAddress, MemoryWorker>();

  async start(events: TransportEvents): Promise<void> {
    this.events = events;
  }

  worker(address: WorkerAddress): MemoryWorker | undefined {
    return this.workers.get(address);
  }

  get running(): MemoryWorker[] {
    return [...this.workers.values()];
  }

  join(worker: MemoryWorker): void {
    if (this.workers.has(worker.address)) throw new Error(`A worker at ${worker.address} is running already`);
    this.workers.set(worker.address, worker);
    this.events!.workerJoined(worker.registration);
  }

  removeWorker(address: WorkerAddress, reason: string): void {
    const worker = this.workers.get(address);
    if (worker === undefined) throw new Error(`No worker at ${address} to remove`);
    this.workers.delete(address);
    worker.close();
    this.events!.workerLeft(address, reason);
  }

  taskStarted(worker: MemoryWorker, key: string): void {
    this.taskStartedHook?.(worker, key);
  }

  send(address: WorkerAddress, messages: readonly ToWorker[]): void {
    const worker = this.workers.get(address);
    if (worker === undefined) return;
    this.deliveries++;
    queueMicrotask(() => worker.receive(messages));
  }

  /** A worker's batch for the scheduler; dropped if the worker left meanwhile. */
  report(worker: MemoryWorker, messages: readonly FromWorker[]): void {
    if (this.workers.get(worker.address) !== worker) return;
    this.deliveries++;
    this.events!.received(worker.address, messages);
  }

  async gather(address: WorkerAddress, keys: readonly string[]): Promise<Pick<GatherReplyMessage, "values" | "missing">> {
    const worker = this.workers.get(address);
    if (worker === undefined) throw new Error(`Worker ${address} is not running`);
    const values: Record<string, unknown> = {};
    const missing: string[] = [];
    for (const key of keys) {
      if (worker.data.has(key)) values[key] = worker.data.get(key);
      else missing.push(key);
    }
    return { values, missing };
  }

  setKeepsAlive(): void {
    // Nothing here keeps the process alive.
  }

  async close(): Promise<void> {
    for (const worker of this.workers.values()) worker.close();
    this.workers.clear();
  }
}

/** A cluster in this process (see the top of this file); a Client connects to it like to a LocalCluster. */
export class MemoryCluster extends ClusterCard {
  readonly name = "memory";
  readonly dashboardLink = null;
  readonly description = "MemoryCluster";
  protected readonly cardTitle = "MemoryCluster";
  protected readonly transportDescription: string;
  private nextWorker = 0;
  private closed = false;

  private constructor(
    readonly scheduler: Scheduler,
    private readonly transport: MemoryTransport,
    private readonly memoryLimit: number,
  ) {
    super();
    this.transportDescription = transport.description;
  }

  static async start(options: MemoryClusterOptions = {}): Promise<MemoryCluster> {
    const { workers = [1, 1], memoryLimit = 1e9, ...settings } = options;
    const transport = new MemoryTransport();
    const scheduler = new Scheduler(transport, settings);
    await scheduler.start();
    const cluster = new MemoryCluster(scheduler, transport, memoryLimit);
    for (const nthreads of workers) cluster.addWorker(nthreads);
    await cluster.settled();
    return cluster;
  }

  /** The workers as the scheduler sees them, by address. */
  get workers(): ReadonlyMap<WorkerAddress, WorkerState> {
    return this.scheduler.workers;
  }

  get status(): "running" | "closed" {
    return this.closed ? "closed" : "running";
  }

  /** Starts a worker named `worker-<n>` (n counting up, never reused) and registers it at once. */
  addWorker(nthreads = 1): MemoryWorker {
    const name = `worker-${this.nextWorker++}`;
    const registration: RegisterMessage = {
      op: "register",
      address: `memory://${name}`,
      name,
      host: "localhost",
      pid: process.pid,
      nthreads,
      memoryLimit: this.memoryLimit,
      globals: globalNames(),
      now: now(),
    };
    const worker = new MemoryWorker(registration, this.transport);
    this.transport.join(worker);
    return worker;
  }

  /** The running worker called `name`. */
  worker(name: string): MemoryWorker {
    const found = this.transport.running.find((worker) => worker.name === name);
    if (found === undefined) throw new Error(`No running worker is called ${JSON.stringify(name)} (running: ${this.transport.running.map((w) => w.name).join(", ") || "none"})`);
    return found;
  }

  /** Running workers, oldest first. */
  get running(): MemoryWorker[] {
    return this.transport.running;
  }

  /** The worker leaves at once, as if its process died: the scheduler hears workerLeft; its data is gone. */
  removeWorker(name: string, reason = "the test removed it"): void {
    this.transport.removeWorker(this.worker(name).address, reason);
  }

  /** `hook` hears every task a worker starts (undefined: none). */
  onTaskStarted(hook: TaskStartedHook | undefined): void {
    this.transport.taskStartedHook = hook;
  }

  /**
   * Resolves once the scheduler and the workers have nothing left to say to each other: every
   * batch delivered and answered, only tasks waiting on something outside (a gate) still running.
   */
  async settled(): Promise<void> {
    let before: number;
    do {
      before = this.transport.deliveries;
      // The scheduler sends once per event-loop turn (setImmediate); microtasks run in between.
      await new Promise<void>((resolve) => setImmediate(resolve));
    } while (this.transport.deliveries !== before);
  }

  /** The tasks each worker holds now, by worker name: where results landed. */
  holdings(): Record<string, string[]> {
    return Object.fromEntries(this.running.map((worker) => [worker.name, [...worker.data.keys()].sort()]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.scheduler.close();
  }
}
