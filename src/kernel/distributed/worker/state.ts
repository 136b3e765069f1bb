// The worker's state machine, without I/O (Dask's worker_state_machine.py in spirit): events in
// (the scheduler's messages, outcomes of tasks and fetches, memory pressure), instructions out
// (run a task, fetch keys from a peer, drop data, tell the scheduler). The runtime (./worker)
// carries out the instructions and feeds back what happened.

import { Heap } from "heap-js";
import type { PackedError } from "../../execution/wire";
import type { StartStop } from "../../../protocol/records";
import type { ComputeTaskMessage, DependencyInfo, FromWorker, WireTask, WorkerAddress } from "../messages";

export type WorkerTaskState =
  /** To compute here; some inputs are not here yet. */
  | "waiting"
  /** To compute here; inputs here, queued for a thread by priority. */
  | "ready"
  | "executing"
  /** Freed by the scheduler while executing: its outcome will be thrown away. */
  | "cancelled"
  /** An input held by peers, to fetch. */
  | "fetch"
  /** Being fetched. */
  | "flight"
  /** An input no known peer holds (momentarily: reported with missing-data, then let go). */
  | "missing"
  | "memory"
  | "error";

export interface WorkerTask {
  readonly key: string;
  /** Dask's repr of the key. */
  name: string;
  prefix: string;
  spanId: string;
  /** Lower runs (and is fetched) first. */
  priority: number;
  state: WorkerTaskState;
  /** The expression, for tasks to compute here. */
  run: WireTask | undefined;
  /** The scheduler asked this worker to compute it and has not freed it. */
  wanted: boolean;
  /** Its compute-task asked for the result with the report (a client holds it; see ComputeTaskMessage.returnsResult). */
  returnsResult: boolean;
  /** The scheduler believes this worker holds it (told by task-finished or add-keys, until free-keys). */
  held: boolean;
  dependencies: readonly WorkerTask[];
  /** Tasks here that still need this one (waiting, ready, executing). */
  dependents: Set<WorkerTask>;
  /** Dependencies not in memory yet. */
  waitingFor: Set<WorkerTask>;
  /** Peers holding it (never this worker). */
  whoHas: Set<WorkerAddress>;
  /** Holders that turned out not to have it (this worker included, if the scheduler listed it). */
  errant: Set<WorkerAddress>;
  nbytes: number;
  type: string;
  /** Phases reported with the task: the transfers that brought its inputs. */
  startstops: readonly StartStop[];
  /** Order of arrival, to break priority ties first come, first served. */
  sequence: number;
  /** A compute-task that came while the key was arriving from a peer: run if the fetch fails. */
  deferred: ComputeTaskMessage | undefined;
}

export type WorkerEvent =
  | { readonly type: "compute-task"; readonly message: ComputeTaskMessage }
  | { readonly type: "free-keys"; readonly keys: readonly string[] }
  /** Dask's steal-request: give the task up unless it has started; answered with steal-response. */
  | { readonly type: "steal-request"; readonly key: string; readonly stimulusId: string }
  | {
      readonly type: "execute-success";
      readonly key: string;
      readonly nbytes: number;
      readonly resultType: string;
      readonly thread: number;
      /** disk-read, compute, disk-write (scheduler clock); the state adds the transfers. */
      readonly startstops: readonly StartStop[];
    }
  | {
      readonly type: "execute-failure";
      readonly key: string;
      readonly error: PackedError;
      readonly thread: number;
      readonly startstops: readonly StartStop[];
    }
  | {
      /** A peer answered a get-data request: the values are stored (by the runtime) for `received`. */
      readonly type: "gather-dep-success";
      readonly worker: WorkerAddress;
      readonly received: readonly { readonly key: string; readonly nbytes: number; readonly type: string }[];
      /** Keys the peer does not hold. */
      readonly missing: readonly string[];
      /**
       * The transfer's phases (scheduler clock): "transfer" (source = the peer), then
       * "deserialize" when decoding the reply was measured apart.
       */
      readonly transfer: readonly StartStop[];
    }
  | {
      /** The peer could not be reached, or the connection broke: it is taken to be gone. */
      readonly type: "gather-dep-failure";
      readonly worker: WorkerAddress;
      readonly keys: readonly string[];
    }
  | { readonly type: "pause" }
  | { readonly type: "unpause" };

export type WorkerInstruction =
  /** Run the task on a thread; feed back execute-success or execute-failure. */
  | { readonly op: "execute"; readonly key: string }
  /** Stop the task if possible; its outcome (whatever it is) is still fed back. */
  | { readonly op: "cancel-execute"; readonly key: string }
  /** Ask `worker` for `keys`; feed back gather-dep-success or gather-dep-failure. */
  | { readonly op: "gather-dep"; readonly worker: WorkerAddress; readonly keys: readonly string[]; readonly nbytes: number }
  /** Drop the stored value of `key`. */
  | { readonly op: "release-data"; readonly key: string }
  | { readonly op: "send"; readonly message: FromWorker };

export interface WorkerStateMachineOptions {
  /** This worker's address (never fetched from). */
  readonly address: WorkerAddress;
  /** Tasks executing at once. */
  readonly nthreads: number;
  /** Peers fetched from at once (Dask: distributed.worker.connections.outgoing). */
  readonly transferCountLimit?: number;
  /** A fetch from one peer stops adding keys past this many bytes; it always has one (Dask: 50 MB). */
  readonly transferMessageBytesLimit?: number;
  /** Bytes in flight from all peers; one fetch may always run (Dask: 10 % of the memory limit). */
  readonly transferBytesLimit?: number;
}

/** States of a task being computed here. */
const COMPUTING: ReadonlySet<WorkerTaskState> = new Set(["waiting", "ready", "executing", "cancelled"]);
const FETCHING: ReadonlySet<WorkerTaskState> = new Set(["fetch", "flight", "missing"]);

export class WorkerStateMachine {
  readonly tasks = new Map<string, WorkerTask>();
  readonly address: WorkerAddress;
  readonly nthreads: number;
  /**
   * Tasks handed to threads at once ("executing"): `nthreads`, or more when the runtime batches
   * very short tasks (the extra ones wait in the thread pool's queue).
   */
  slots: number;
  paused = false;
  /** Tasks that ran here to an outcome (success or failure, cancelled ones too): Dask's `executed_count`. */
  executedCount = 0;
  /**
   * Ready tasks, lowest (priority, sequence) first. A task forgotten while ready stays in the heap
   * until it comes up and is skipped (no longer in `tasks`).
   */
  private readonly ready = new Heap<WorkerTask>((a, b) => a.priority - b.priority || a.sequence - b.sequence);
  readonly executing = new Set<WorkerTask>();
  /** Tasks in "fetch" state. */
  private readonly toFetch = new Set<WorkerTask>();
  /** Peer → the fetch from it (one request per peer at a time). */
  readonly inFlight = new Map<WorkerAddress, { readonly keys: readonly string[]; readonly nbytes: number }>();
  private bytesInFlight = 0;
  private sequence = 0;
  /**
   * Record each task's state changes for takeTransitions (worker plugins watch them): off unless
   * a plugin does, so the state machine pays nothing otherwise.
   */
  recordTransitions = false;
  private transitions: [key: string, start: string, finish: string][] = [];
  /** Tasks created since transitions are recorded and not yet moved: their first change starts from "released" (Dask's). */
  private readonly fresh = new WeakSet<WorkerTask>();
  private readonly transferCountLimit: number;
  private readonly transferMessageBytesLimit: number;
  private readonly transferBytesLimit: number;

  constructor(options: WorkerStateMachineOptions) {
    this.address = options.address;
    this.nthreads = options.nthreads;
    this.slots = options.nthreads;
    this.transferCountLimit = options.transferCountLimit ?? 50;
    this.transferMessageBytesLimit = options.transferMessageBytesLimit ?? 50e6;
    this.transferBytesLimit = options.transferBytesLimit ?? Infinity;
  }

  /** Handles one event; returns what to do, in order. */
  handle(event: WorkerEvent): WorkerInstruction[] {
    const out: WorkerInstruction[] = [];
    switch (event.type) {
      case "compute-task":
        this.computeTask(event.message, out);
        break;
      case "free-keys":
        this.freeKeys(event.keys, out);
        break;
      case "steal-request":
        this.stealRequest(event.key, event.stimulusId, out);
        break;
      case "execute-success":
        this.executeSuccess(event, out);
        break;
      case "execute-failure":
        this.executeFailure(event, out);
        break;
      case "gather-dep-success":
        this.gatherSuccess(event, out);
        break;
      case "gather-dep-failure":
        this.gatherFailure(event.worker, event.keys, out);
        break;
      case "pause":
        this.paused = true;
        break;
      case "unpause":
        this.paused = false;
        break;
    }
    this.ensureCommunicating(out);
    this.ensureComputing(out);
    return out;
  }

  /** Bytes of the results this worker has told the scheduler it holds (which the scheduler counts itself). */
  reportedResultBytes(): number {
    let bytes = 0;
    for (const task of this.tasks.values()) if (task.held && task.state === "memory") bytes += task.nbytes;
    return bytes;
  }

  /** Task counts by state, for heartbeats. */
  taskCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const task of this.tasks.values()) counts[task.state] = (counts[task.state] ?? 0) + 1;
    return counts;
  }

  // ---- Scheduler requests ----------------------------------------------------------------------

  private computeTask(message: ComputeTaskMessage, out: WorkerInstruction[]): void {
    const task = this.ensureTask(message.key, message.name);
    task.prefix = message.prefix;
    task.spanId = message.spanId;
    task.wanted = true;
    task.returnsResult = message.returnsResult === true;
    switch (task.state) {
      case "memory":
        // Fetched here already (or computed twice): report it as done.
        task.held = true;
        out.push({ op: "send", message: this.finished(task, -1, []) });
        return;
      case "ready":
      case "executing":
        return;
      case "cancelled":
        // Freed, then wanted again before it finished: its outcome counts after all.
        this.setState(task, "executing");
        return;
      case "waiting":
        // Asked again: the holders may have changed.
        for (const info of message.dependencies) if (this.tasks.has(info.key)) this.updateDependency(task, info);
        this.giveUpOnMissing(task, out);
        return;
      case "flight":
        // Arriving from a peer anyway: reported as finished when it lands, computed if it does not.
        task.deferred = message;
        return;
      case "fetch":
      case "missing":
        this.toFetch.delete(task);
        break;
      case "error":
        break;
    }
    this.startCompute(task, message.task, message.priority, message.dependencies, out);
  }

  private startCompute(
    task: WorkerTask,
    run: WireTask,
    priority: number,
    dependencies: readonly DependencyInfo[],
    out: WorkerInstruction[],
  ): void {
    task.run = run;
    task.priority = priority;
    task.sequence = this.sequence++;
    this.setState(task, "waiting");
    for (const dependency of task.dependencies) dependency.dependents.delete(task);
    task.waitingFor.clear();
    const inputs = dependencies.length === 0 ? NO_TASKS : new Array<WorkerTask>(dependencies.length);
    task.dependencies = inputs;
    for (let i = 0; i < dependencies.length; i++) {
      const info = dependencies[i];
      const dependency = this.ensureTask(info.key, undefined);
      (inputs as WorkerTask[])[i] = dependency;
      (dependency.dependents = own(dependency.dependents)).add(task);
      this.updateDependency(task, info);
    }
    if (task.waitingFor.size === 0) this.toReady(task);
    else this.giveUpOnMissing(task, out);
  }

  /** Records what the scheduler says of one of `task`'s inputs, and starts getting it if needed. */
  private updateDependency(task: WorkerTask, info: DependencyInfo): void {
    const dependency = this.tasks.get(info.key)!;
    if (dependency.state !== "memory" && dependency.nbytes === 0) dependency.nbytes = info.nbytes;
    dependency.priority = Math.min(dependency.priority, task.priority);
    if (dependency.state === "memory") return;
    (task.waitingFor = own(task.waitingFor)).add(dependency);
    for (const worker of info.whoHas) {
      // Listed as a holder of what it does not hold (any more): reported if no one else has it.
      if (worker === this.address) (dependency.errant = own(dependency.errant)).add(worker);
      else (dependency.whoHas = own(dependency.whoHas)).add(worker);
    }
    // Being computed here (`info.local`, or holders kept in case that fails), or on its way.
    if (COMPUTING.has(dependency.state) || dependency.state === "flight") return;
    this.fetchOrMissing(dependency);
  }

  /**
   * Inputs of `task` that no known peer holds: each is reported with missing-data (one message per
   * holder that lacked it), and the tasks here that needed it are dropped as if freed; the
   * scheduler sends them again with fresh holders, after recomputing the input if it was lost.
   */
  private giveUpOnMissing(task: WorkerTask, out: WorkerInstruction[]): void {
    for (const dependency of [...task.waitingFor]) if (dependency.state === "missing") this.giveUp(dependency, out);
  }

  private giveUp(task: WorkerTask, out: WorkerInstruction[]): void {
    const errant = task.errant.size > 0 ? [...task.errant] : [this.address];
    task.errant.clear();
    for (const worker of errant) out.push({ op: "send", message: { op: "missing-data", key: task.key, errantWorker: worker } });
    for (const dependent of [...task.dependents]) {
      dependent.wanted = false;
      this.releaseIfUnneeded(dependent, out);
    }
  }

  /** Puts `task` in line for fetching if a peer holds it, else marks it missing; true in the first case. */
  private fetchOrMissing(task: WorkerTask): boolean {
    if (task.whoHas.size > 0) {
      this.setState(task, "fetch");
      this.toFetch.add(task);
      return true;
    }
    this.setState(task, "missing");
    this.toFetch.delete(task);
    return false;
  }

  /** The scheduler no longer wants these keys here: one walk lets them go, and what only they needed. */
  private freeKeys(keys: readonly string[], out: WorkerInstruction[]): void {
    const work: WorkerTask[] = [];
    for (const key of keys) {
      const task = this.tasks.get(key);
      if (task === undefined) continue;
      task.wanted = false;
      task.held = false;
      work.push(task);
    }
    this.releaseUnneeded(work, out);
  }

  /**
   * Dask's handle_steal_request: a task not started yet (waiting for inputs, or ready) is given up
   * as if freed, and the answer says so ("released"); one running or done stays, and the answer
   * gives its state. A task that tasks here wait on stays too: they need its result here.
   */
  private stealRequest(key: string, stimulusId: string, out: WorkerInstruction[]): void {
    const task = this.tasks.get(key);
    let state: string | null = task?.state ?? null;
    if (task !== undefined && (task.state === "waiting" || task.state === "ready") && task.dependents.size === 0) {
      task.wanted = false;
      this.releaseIfUnneeded(task, out);
      state = "released";
    }
    out.push({ op: "send", message: { op: "steal-response", key, stimulusId, state } });
  }

  // ---- Task outcomes ---------------------------------------------------------------------------

  private executeSuccess(event: Extract<WorkerEvent, { type: "execute-success" }>, out: WorkerInstruction[]): void {
    const task = this.tasks.get(event.key);
    if (task === undefined || (task.state !== "executing" && task.state !== "cancelled")) return;
    this.executedCount++;
    this.executing.delete(task);
    task.nbytes = event.nbytes;
    task.type = event.resultType;
    if (task.state === "cancelled") {
      task.startstops = NO_PHASES;
      if (task.dependents.size === 0) {
        out.push({ op: "release-data", key: task.key });
        this.forget(task, out);
        return;
      }
      // Needed here again since it was freed: kept for those tasks, unknown to the scheduler.
      this.setState(task, "memory");
    } else {
      this.setState(task, "memory");
      task.held = true;
      out.push({ op: "send", message: this.finished(task, event.thread, event.startstops) });
    }
    this.doneWithInputs(task, out);
    for (const dependent of task.dependents) this.inputArrived(dependent, task);
  }

  private executeFailure(event: Extract<WorkerEvent, { type: "execute-failure" }>, out: WorkerInstruction[]): void {
    const task = this.tasks.get(event.key);
    if (task === undefined || (task.state !== "executing" && task.state !== "cancelled")) return;
    this.executedCount++;
    this.executing.delete(task);
    if (task.state === "cancelled") {
      task.startstops = NO_PHASES;
      if (task.dependents.size === 0) {
        this.forget(task, out);
        return;
      }
      if (!this.fetchOrMissing(task)) this.giveUp(task, out);
      return;
    }
    this.setState(task, "error");
    out.push({
      op: "send",
      message: { op: "task-erred", key: task.key, error: event.error, thread: event.thread, startstops: [...task.startstops, ...event.startstops] },
    });
    task.startstops = NO_PHASES;
    this.doneWithInputs(task, out);
  }

  private finished(task: WorkerTask, thread: number, startstops: readonly StartStop[]): FromWorker {
    const message: FromWorker = {
      op: "task-finished",
      key: task.key,
      nbytes: task.nbytes,
      type: task.type,
      thread,
      startstops: task.startstops.length === 0 ? startstops : [...task.startstops, ...startstops],
    };
    task.startstops = NO_PHASES;
    return message;
  }

  /** `task` no longer needs its inputs: those nothing else needs are let go. */
  private doneWithInputs(task: WorkerTask, out: WorkerInstruction[]): void {
    this.releaseUnneeded(this.dropInputs(task, []), out);
  }

  private inputArrived(task: WorkerTask, input: WorkerTask): void {
    task.waitingFor.delete(input);
    if (task.state === "waiting" && task.waitingFor.size === 0) this.toReady(task);
  }

  // ---- Fetching ------------------------------------------------------------------------------

  private gatherSuccess(event: Extract<WorkerEvent, { type: "gather-dep-success" }>, out: WorkerInstruction[]): void {
    const requested = this.endFlight(event.worker);
    const added: string[] = [];
    const arrived = new Set<string>();
    let transferShown = false;
    for (const { key, nbytes, type } of event.received) {
      arrived.add(key);
      const task = this.tasks.get(key);
      if (task === undefined || task.state !== "flight") {
        // Nobody here needs it any more (or it is here already).
        if (task === undefined || task.state !== "memory") out.push({ op: "release-data", key });
        continue;
      }
      (task.whoHas = own(task.whoHas)).add(event.worker);
      task.deferred = undefined;
      if (task.dependents.size === 0 && !task.wanted) {
        out.push({ op: "release-data", key });
        this.forget(task, out);
        continue;
      }
      this.setState(task, "memory");
      task.nbytes = nbytes;
      task.type = type;
      task.held = true;
      added.push(key);
      if (task.wanted) out.push({ op: "send", message: this.finished(task, -1, []) });
      // The task stream shows a transfer once, on the first task it served (Dask's way).
      const first = this.firstDependent(task);
      if (!transferShown && first !== undefined) {
        first.startstops = [...first.startstops, ...event.transfer];
        transferShown = true;
      }
      for (const dependent of task.dependents) this.inputArrived(dependent, task);
    }
    if (added.length > 0) out.push({ op: "send", message: { op: "add-keys", keys: added } });
    const missing = new Set(event.missing);
    for (const key of requested) if (!arrived.has(key)) missing.add(key);
    for (const key of missing) this.peerLacks(key, event.worker, out);
    for (const key of added) this.tasks.get(key)?.errant.clear();
  }

  private gatherFailure(worker: WorkerAddress, keys: readonly string[], out: WorkerInstruction[]): void {
    const requested = this.endFlight(worker);
    for (const key of new Set([...requested, ...keys])) {
      if (this.tasks.get(key)?.state === "flight") this.peerLacks(key, worker, out);
    }
    // The peer is gone: nothing it held can be fetched from it.
    for (const task of this.tasks.values()) {
      if (!task.whoHas.has(worker)) continue;
      if (task.state === "fetch" || task.state === "missing") this.peerLacks(task.key, worker, out);
      else task.whoHas.delete(worker);
    }
  }

  /** `worker` does not have `key` (or is gone): another holder is tried, and when none is left the key is given up. */
  private peerLacks(key: string, worker: WorkerAddress, out: WorkerInstruction[]): void {
    const task = this.tasks.get(key);
    if (task === undefined) return;
    task.whoHas.delete(worker);
    if (!FETCHING.has(task.state)) return;
    (task.errant = own(task.errant)).add(worker);
    if (task.dependents.size === 0 && !task.wanted) {
      this.forget(task, out);
      return;
    }
    const deferred = task.deferred;
    if (task.state === "flight" && deferred !== undefined && task.whoHas.size === 0) {
      // It was to be computed here as well: do that instead.
      task.deferred = undefined;
      task.errant.clear();
      this.startCompute(task, deferred.task, deferred.priority, deferred.dependencies, out);
      return;
    }
    if (!this.fetchOrMissing(task)) this.giveUp(task, out);
  }

  /** The keys that were requested from `worker`. */
  private endFlight(worker: WorkerAddress): readonly string[] {
    const flight = this.inFlight.get(worker);
    if (flight === undefined) return [];
    this.inFlight.delete(worker);
    this.bytesInFlight -= flight.nbytes;
    return flight.keys;
  }

  private firstDependent(task: WorkerTask): WorkerTask | undefined {
    let first: WorkerTask | undefined;
    for (const dependent of task.dependents) if (first === undefined || before(dependent, first)) first = dependent;
    return first;
  }

  /** Starts fetches while limits allow: the most urgent input first, batched with more keys from the same peer. */
  private ensureCommunicating(out: WorkerInstruction[]): void {
    if (this.paused || this.toFetch.size === 0) return;
    const candidates = [...this.toFetch].sort((a, b) => a.priority - b.priority || a.sequence - b.sequence);
    for (const task of candidates) {
      if (this.inFlight.size >= this.transferCountLimit) return;
      if (this.inFlight.size > 0 && this.bytesInFlight >= this.transferBytesLimit) return;
      if (task.state !== "fetch") continue;
      const worker = this.pickPeer(task);
      if (worker === undefined) continue;
      const keys: string[] = [];
      let nbytes = 0;
      for (const other of candidates) {
        if (other.state !== "fetch" || !other.whoHas.has(worker)) continue;
        if (keys.length > 0 && nbytes + other.nbytes > this.transferMessageBytesLimit) continue;
        keys.push(other.key);
        nbytes += other.nbytes;
        this.setState(other, "flight");
        this.toFetch.delete(other);
      }
      this.inFlight.set(worker, { keys, nbytes });
      this.bytesInFlight += nbytes;
      out.push({ op: "gather-dep", worker, keys, nbytes });
    }
  }

  /** The holder of `task` not busy with another fetch of ours that has the most bytes for us. */
  private pickPeer(task: WorkerTask): WorkerAddress | undefined {
    let best: WorkerAddress | undefined;
    let bestBytes = -1;
    for (const worker of task.whoHas) {
      if (this.inFlight.has(worker)) continue;
      let bytes = 0;
      for (const other of this.toFetch) if (other.whoHas.has(worker)) bytes += other.nbytes;
      if (bytes > bestBytes || (bytes === bestBytes && best !== undefined && worker < best)) {
        best = worker;
        bestBytes = bytes;
      }
    }
    return best;
  }

  // ---- Computing -----------------------------------------------------------------------------

  private toReady(task: WorkerTask): void {
    this.setState(task, "ready");
    this.ready.push(task);
  }

  private ensureComputing(out: WorkerInstruction[]): void {
    while (!this.paused && this.executing.size < this.slots) {
      const task = this.ready.pop();
      if (task === undefined) return;
      if (task.state !== "ready" || this.tasks.get(task.key) !== task) continue;
      this.setState(task, "executing");
      this.executing.add(task);
      out.push({ op: "execute", key: task.key });
    }
  }

  // ---- Releasing -----------------------------------------------------------------------------

  /** Lets `task` go if the scheduler no longer wants it here and no task here needs it. */
  private releaseIfUnneeded(task: WorkerTask, out: WorkerInstruction[]): void {
    this.releaseUnneeded([task], out);
  }

  /**
   * Of `work`, the tasks the scheduler no longer wants here and no task here needs go, and the
   * inputs they leave without users follow (added to `work`: a work list, as chains may be long).
   */
  private releaseUnneeded(work: WorkerTask[], out: WorkerInstruction[]): void {
    while (work.length > 0) {
      const task = work.pop()!;
      if (task.wanted || task.dependents.size > 0 || this.tasks.get(task.key) !== task) continue;
      switch (task.state) {
        case "memory":
          if (task.held) continue;
          out.push({ op: "release-data", key: task.key });
          this.unlink(task, work);
          continue;
        case "executing":
          this.setState(task, "cancelled");
          out.push({ op: "cancel-execute", key: task.key });
          this.dropInputs(task, work);
          continue;
        case "flight":
        case "cancelled":
          // Dealt with when the data or the outcome arrives.
          continue;
        default:
          this.unlink(task, work);
      }
    }
  }

  /** The state changes since the last call, oldest first (recorded only while recordTransitions is on). */
  takeTransitions(): [key: string, start: string, finish: string][] {
    const taken = this.transitions;
    this.transitions = [];
    return taken;
  }

  private setState(task: WorkerTask, state: WorkerTaskState): void {
    if (this.recordTransitions) {
      const start = this.fresh.delete(task) ? "released" : task.state;
      if (start !== state) this.transitions.push([task.key, start, state]);
    }
    task.state = state;
  }

  /** Forgets `task`, and the inputs it leaves without users. */
  private forget(task: WorkerTask, out: WorkerInstruction[]): void {
    this.releaseUnneeded(this.unlink(task, []), out);
  }

  /** Takes `task` out of the tables; its inputs join `work`. */
  private unlink(task: WorkerTask, work: WorkerTask[]): WorkerTask[] {
    this.tasks.delete(task.key);
    if (this.recordTransitions && !this.fresh.delete(task)) this.transitions.push([task.key, task.state, "released"], [task.key, "released", "forgotten"]);
    this.toFetch.delete(task);
    this.executing.delete(task);
    return this.dropInputs(task, work);
  }

  /** `task` no longer needs its inputs: each has one dependent fewer, and joins `work` (to go if nothing else needs it). */
  private dropInputs(task: WorkerTask, work: WorkerTask[]): WorkerTask[] {
    for (const dependency of task.dependencies) {
      dependency.dependents.delete(task);
      work.push(dependency);
    }
    task.dependencies = NO_TASKS;
    task.waitingFor.clear();
    return work;
  }

  private ensureTask(key: string, name: string | undefined): WorkerTask {
    let task = this.tasks.get(key);
    if (task === undefined) {
      task = {
        key,
        name: name ?? key,
        prefix: "",
        spanId: "",
        priority: Infinity,
        state: "missing",
        run: undefined,
        wanted: false,
        returnsResult: false,
        held: false,
        dependencies: NO_TASKS,
        dependents: EMPTY_TASKS,
        waitingFor: EMPTY_TASKS,
        whoHas: NO_WORKERS,
        errant: NO_WORKERS,
        nbytes: 0,
        type: "",
        startstops: NO_PHASES,
        sequence: this.sequence++,
        deferred: undefined,
      };
      this.tasks.set(key, task);
      if (this.recordTransitions) this.fresh.add(task);
    } else if (name !== undefined) {
      task.name = name;
    }
    return task;
  }
}

/**
 * Feeds events to a state machine and has its instructions carried out, in order. An event raised
 * while instructions are being carried out (a task that finished at once, a fetch that failed at
 * once) waits until they all are, so one event's instructions never interleave with another's.
 */
export class EventFeed {
  private readonly waiting: WorkerEvent[] = [];
  private feeding = false;

  constructor(
    private readonly machine: WorkerStateMachine,
    private readonly carryOut: (instruction: WorkerInstruction) => void,
    /** Called before a run of events is fed (the runtime updates what the machine reads of it). */
    private readonly beforeFeeding: () => void = () => {},
    /** Called once a run of events is fed and carried out (worker plugins hear what it did then, never in the middle). */
    private readonly afterFeeding: () => void = () => {},
  ) {}

  apply(event: WorkerEvent): void {
    this.waiting.push(event);
    if (this.feeding) return;
    this.feeding = true;
    this.beforeFeeding();
    try {
      for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift()) {
        for (const instruction of this.machine.handle(next)) this.carryOut(instruction);
      }
    } finally {
      this.feeding = false;
    }
    this.afterFeeding();
  }
}

/**
 * A set that stays empty, shared by tasks until they have entries of their own: most tasks never
 * have peers to fetch from or errant holders, and many have no dependents or inputs to wait for.
 */
class SharedEmptySet<T> extends Set<T> {
  override add(): this {
    throw new Error("Internal: a shared empty set was written to (use own())");
  }
}

const EMPTY_TASKS: Set<WorkerTask> = new SharedEmptySet();
const NO_WORKERS: Set<WorkerAddress> = new SharedEmptySet();
const NO_TASKS: readonly WorkerTask[] = [];
const NO_PHASES: readonly StartStop[] = [];

/** `set`, or a new set of the task's own in place of the shared empty one. */
function own<T>(set: Set<T>): Set<T> {
  return set instanceof SharedEmptySet ? new Set<T>() : set;
}

function before(a: WorkerTask, b: WorkerTask): boolean {
  return a.priority < b.priority || (a.priority === b.priority && a.sequence < b.sequence);
}
