// Placement, the middle layer of the scheduler state (over ./task-table, under ./state): which
// worker runs a ready task. Dask's decide_worker, root-ish tasks queued on the scheduler until a
// worker has room (worker-saturation), tasks sent ahead to the worker computing their inputs,
// and the instructions (compute-task, free-keys) that collect in workers' outboxes.

import type { ClusterMemory } from "../../../protocol/records";
import type { FnSpec } from "../../execution/wire";
import type { ComputeTaskMessage, DependencyInfo, ToWorker, WorkerAddress } from "../messages";
import { BandwidthEstimate, clusterMemory } from "./heartbeats";
import { SlotHeap } from "./queue";
import { MEMORY, NO_ADDRESSES, NO_WORKER, PROCESSING, QUEUED, type SchedulerOptions, TaskTable, WAITING, type WorkerRestriction } from "./task-table";
import type { Placement } from "./transport";
import type { WorkerState } from "./workers";

/** Dask's `distributed.scheduler.default-task-durations` fallback (`unknown-task-duration`). */
const UNKNOWN_TASK_SECONDS = 0.5;
/**
 * Root tasks per thread are raised above worker-saturation for tasks known to be tiny, so a
 * worker has this much queued work while the scheduler's next tasks are on their way (a Dask
 * worker gets 2 one-microsecond root tasks per round trip and idles in between).
 */
const QUEUED_WORK_SECONDS = 0.005;
const MAX_ROOTS_PER_THREAD = 1000;
/**
 * Tasks sent ahead and waiting on one worker at most: a chain goes out in windows this long (the
 * next one when its first task becomes ready), so cancelling it never leaves a worker more than
 * this many tasks to drop (a million sent at once kept a worker busy for a minute).
 */
const MAX_SENT_AHEAD = 1000;
/** Root tasks in flight may hold at most this share of a worker's memory limit (by their group's mean size). */
const QUEUED_MEMORY_SHARE = 0.1;

interface PrefixStats {
  /** Mean compute seconds (exponentially weighted), or -1 before any finished. */
  duration: number;
  /** Mean result bytes, or -1 before any finished. */
  nbytes: number;
}

const EMPTY_WORKERS: readonly WorkerState[] = [];
/** A strict restriction that names no running worker. */
const NO_VALID_WORKER: ReadonlySet<WorkerState> = new Set();

/** What queue placement asks of the transport: consecutive tasks to enqueue, or keys to forget. */
export type QueueInstruction = { readonly op: "enqueue"; readonly tasks: ComputeTaskMessage[] } | { readonly op: "forget"; readonly keys: string[] };

/** Whether `ws` is one of the workers a restriction names (by address, name or host, as Dask's worker and host restrictions). */
export function matchesRestriction(ws: WorkerState, restriction: WorkerRestriction): boolean {
  return restriction.workers.has(ws.address) || restriction.workers.has(ws.name) || restriction.workers.has(ws.registration.host);
}

export abstract class TaskPlacement extends TaskTable {
  readonly placement: Placement;
  readonly workerSaturation: number;
  readonly sendAhead: boolean;
  readonly bandwidth = new BandwidthEstimate();
  private readonly defaultTaskDurations: Readonly<Record<string, number>>;
  protected readonly prefixStats = new Map<string, PrefixStats>();
  protected readonly rootQueue: SlotHeap;
  /** Ready tasks no worker could take (none running). */
  protected noWorker: number[] = [];

  // ---- Workers and instructions ---------------------------------------------------------------
  readonly workers = new Map<WorkerAddress, WorkerState>();
  protected workerCount = 0;
  protected totalThreads = 0;
  /** Workers with messages in their outbox. */
  protected dirty: WorkerState[] = [];
  /** Queue placement: tasks for the shared queue and keys to drop from the store, in the order the events asked. */
  private queueInstructions: QueueInstruction[] = [];
  /** Queue placement: tasks enqueued or running, against the cluster's slots. */
  protected inFlight = 0;
  protected readonly functionSpec: (id: number) => FnSpec;

  constructor(options: SchedulerOptions) {
    super(options);
    this.placement = options.placement;
    this.workerSaturation = options.workerSaturation ?? 1.1;
    if (!(this.workerSaturation > 0)) throw new RangeError(`workerSaturation must be > 0 (Infinity: no queuing), got ${this.workerSaturation}`);
    this.sendAhead = options.sendAhead ?? options.placement === "locality";
    this.functionSpec = options.functionSpec;
    this.defaultTaskDurations = options.defaultTaskDurations ?? {};
    this.rootQueue = new SlotHeap((slot) => this.priority[slot]);
  }

  memory(): ClusterMemory {
    return clusterMemory([...this.workers.values()].map((ws) => ws.memory));
  }
  get threads(): number {
    return this.totalThreads;
  }

  // ---- Instructions ----------------------------------------------------------------------------

  /** Workers with messages, each with its batch (the outboxes are emptied). */
  takeMessages(): [WorkerState, ToWorker[]][] {
    this.event(() => this.scheduleQueued());
    const out: [WorkerState, ToWorker[]][] = [];
    for (const ws of this.dirty) {
      if (ws.outbox.length === 0) continue;
      out.push([ws, ws.outbox]);
      ws.outbox = [];
    }
    this.dirty = [];
    return out;
  }

  /**
   * Queue placement: tasks for the shared queue and keys to drop from the store, to be carried out
   * in this order. The order matters when a key is released and submitted again between two
   * takes: its old value must go before its new task is queued, not after (which would drop the
   * new task's job and leave it processing forever).
   */
  takeQueueInstructions(): QueueInstruction[] {
    this.event(() => this.scheduleQueued());
    const out = this.queueInstructions;
    this.queueInstructions = [];
    return out;
  }

  /** Queue placement: `key`'s job leaves the queue (unless running) and its value the store. */
  protected forgetQueued(key: string): void {
    const last = this.queueInstructions[this.queueInstructions.length - 1];
    if (last?.op === "forget") last.keys.push(key);
    else this.queueInstructions.push({ op: "forget", keys: [key] });
  }

  // ---- Placing ready tasks ---------------------------------------------------------------------

  /** Tasks that found no running worker try again (one joined, or one resumed). */
  protected retryStranded(): void {
    const stranded = this.noWorker;
    this.noWorker = [];
    for (const slot of stranded) if (this.state[slot] === NO_WORKER) this.ready(slot);
  }

  /** All inputs are in memory: queue it, send it, or wait for a worker. */
  protected ready(slot: number): void {
    if (this.workerSaturation !== Infinity && this.isRootish(slot)) {
      this.setState(slot, QUEUED);
      this.rootQueue.push(slot);
      return;
    }
    if (this.placement === "queue") {
      this.enqueue(slot);
      return;
    }
    const ws = this.decideWorker(slot);
    if (ws === undefined) {
      this.setState(slot, NO_WORKER);
      this.noWorker.push(slot);
      return;
    }
    this.sendTask(slot, ws, false);
  }

  /**
   * Dask's root-ish test: a task of a large group (more than twice the cluster's threads) that
   * depends on few tasks outside it. Such tasks are queued on the scheduler and handed out as
   * workers have room, so a million of them never flood the workers. A task that depends on its
   * own group (a chain) is not root-ish: it goes where its input is.
   */
  protected isRootish(slot: number): boolean {
    if (this.restrictions.has(slot)) return false;
    const group = this.groupStats.get(this.groups[slot])!;
    if (group.size <= 2 * this.totalThreads) return false;
    for (const dep of this.dependencies[slot]) if (this.groups[dep] === this.groups[slot]) return false;
    if (group.dependencies.size >= 5) return false;
    let inputs = 0;
    for (const name of group.dependencies) inputs += this.groupStats.get(name)?.size ?? 0;
    return inputs < 5;
  }

  /** How many root tasks a worker may have running or ready at once. */
  protected rootSlots(ws: WorkerState, head: number): number {
    const dask = Math.max(1, Math.ceil(this.workerSaturation * ws.nthreads));
    const stats = this.prefixStats.get(this.prefixes[head]);
    if (stats === undefined || stats.duration < 0) return dask;
    let allowance = Math.min(MAX_ROOTS_PER_THREAD * ws.nthreads, Math.floor((QUEUED_WORK_SECONDS * ws.nthreads) / Math.max(stats.duration, 1e-7)));
    if (stats.nbytes > 0 && ws.memoryLimit > 0) allowance = Math.min(allowance, Math.floor((QUEUED_MEMORY_SHARE * ws.memoryLimit) / stats.nbytes));
    return Math.max(dask, allowance);
  }

  /** Hands queued root tasks to workers with room, in priority order, a run of neighbours per worker. */
  protected scheduleQueued(): void {
    if (this.rootQueue.size === 0) return;
    if (this.placement === "queue") {
      let room = 0;
      for (const ws of this.workers.values()) if (ws.status === "running") room += this.rootSlots(ws, this.rootQueue.peek());
      while (this.inFlight < room && this.rootQueue.size > 0) {
        const slot = this.rootQueue.pop();
        if (this.state[slot] === QUEUED) this.enqueue(slot);
      }
      return;
    }
    const first = this.nextQueued();
    if (first < 0) return;
    const perThread = this.queuedShare(first);
    // Each worker takes one run per call: with a short queue, the first would otherwise take all.
    const served = new Set<WorkerState>();
    for (;;) {
      const head = this.nextQueued();
      if (head < 0) return;
      let best: WorkerState | undefined;
      let bestRoom = 0;
      for (const ws of this.workers.values()) {
        if (ws.status !== "running" || served.has(ws)) continue;
        const room = this.rootSlots(ws, head) - ws.runnable;
        if (room > bestRoom || (room === bestRoom && best !== undefined && ws.occupancy < best.occupancy)) {
          best = ws;
          bestRoom = room;
        }
      }
      if (best === undefined) return;
      served.add(best);
      // Consecutive root tasks often feed the same reduction: keep them together.
      const run = Math.min(bestRoom, perThread * best.nthreads);
      for (let given = 0; given < run; given++) {
        const slot = this.nextQueued();
        if (slot < 0) return;
        this.rootQueue.pop();
        this.sendTask(slot, best, false);
      }
    }
  }

  /**
   * Queued root tasks each thread with room takes now: all it has room for, or, when the queue
   * is shorter than the room the workers have (tiny tasks, known to be quick, get up to a
   * thousand slots a thread), an even share, so every worker starts at once.
   */
  private queuedShare(head: number): number {
    let room = 0;
    let threads = 0;
    for (const ws of this.workers.values()) {
      const free = ws.status === "running" ? this.rootSlots(ws, head) - ws.runnable : 0;
      if (free <= 0) continue;
      room += free;
      threads += ws.nthreads;
    }
    return this.rootQueue.size >= room || threads === 0 ? Infinity : Math.ceil(this.rootQueue.size / threads);
  }

  /** The queue's head, dropping entries that left the queued state meanwhile; -1 if empty. */
  protected nextQueued(): number {
    for (;;) {
      const slot = this.rootQueue.peek();
      if (slot < 0 || this.state[slot] === QUEUED) return slot;
      this.rootQueue.pop();
    }
  }

  /**
   * Dask's decide_worker with its worker_objective: among the workers holding an input that the
   * task may run on (or, when none does, every worker it may run on), the one where it would start
   * soonest: bytes to fetch / bandwidth + occupancy / threads; ties to fewer tasks, then less data.
   * A busy holder keeps the task; work stealing moves it if another worker idles meanwhile.
   * Undefined: no running worker may take it (it waits for one).
   */
  protected decideWorker(slot: number): WorkerState | undefined {
    const allowed = this.allowedWorkers(slot);
    if (allowed === NO_VALID_WORKER) return undefined;
    let best: WorkerState | undefined;
    let bestCost = Infinity;
    const consider = (ws: WorkerState): void => {
      if (ws.status !== "running" || (allowed !== undefined && !allowed.has(ws))) return;
      const cost = this.transferBytes(slot, ws) / this.bandwidth.total + ws.occupancy / ws.nthreads;
      if (
        best === undefined ||
        cost < bestCost ||
        (cost === bestCost && (ws.processing.size < best.processing.size || (ws.processing.size === best.processing.size && ws.nbytes < best.nbytes)))
      ) {
        best = ws;
        bestCost = cost;
      }
    };
    for (const dep of this.dependencies[slot]) {
      const first = this.holder[dep];
      if (first !== undefined) consider(first);
      for (const ws of this.replicas.get(dep) ?? EMPTY_WORKERS) consider(ws);
    }
    if (best === undefined) for (const ws of allowed ?? this.workers.values()) consider(ws);
    return best;
  }

  /**
   * Dask's valid_workers: the running workers a restricted task may use; undefined when any may
   * (no restriction, or a loose one that names no running worker); NO_VALID_WORKER when a strict
   * restriction names none.
   */
  protected allowedWorkers(slot: number): ReadonlySet<WorkerState> | undefined {
    const restriction = this.restrictions.get(slot);
    if (restriction === undefined) return undefined;
    const valid = new Set<WorkerState>();
    for (const ws of this.workers.values()) {
      if (ws.status === "running" && matchesRestriction(ws, restriction)) valid.add(ws);
    }
    if (valid.size > 0) return valid;
    return restriction.allowOtherWorkers ? undefined : NO_VALID_WORKER;
  }

  protected transferBytes(slot: number, ws: WorkerState): number {
    let bytes = 0;
    for (const dep of this.dependencies[slot]) if (!ws.hasWhat.has(dep)) bytes += this.nbytes[dep];
    return bytes;
  }

  protected estimatedDuration(slot: number): number {
    const stats = this.prefixStats.get(this.prefixes[slot]);
    if (stats !== undefined && stats.duration >= 0) return stats.duration;
    return this.defaultTaskDurations[this.prefixes[slot]] ?? UNKNOWN_TASK_SECONDS;
  }

  /** PROCESSING on `ws`: the compute-task goes in its outbox. `ahead`: some inputs are still being computed there. */
  protected sendTask(slot: number, ws: WorkerState, ahead: boolean): void {
    this.setState(slot, PROCESSING);
    this.processingOn[slot] = ws;
    ws.processing.add(slot);
    ws.occupancy += this.estimatedDuration(slot);
    if (ahead) {
      this.waitingLocally[slot] = 1;
      ws.waitingLocally++;
    }
    this.defineFunctions(ws, slot);
    this.outboxOf(ws).push(this.computeTask(slot, ws));
    if (!ahead) this.listeners.dispatched(slot, ws);
    if (this.sendAhead) this.sendDependentsAhead(slot, ws);
  }

  /**
   * Dependents of a task just sent to `ws` go there too, before it finishes, when `ws` holds or
   * is computing every input they have and each input still being computed feeds only them (no
   * fan-out: those dependents are better placed once the input exists). A chain or a tree
   * reduction then runs on one worker without a round trip to the scheduler per task.
   */
  protected sendDependentsAhead(sent: number, ws: WorkerState): void {
    const stack = [sent];
    while (stack.length > 0) {
      const slot = stack.pop()!;
      for (const dependent of this.dependents[slot]) {
        if (ws.waitingLocally >= MAX_SENT_AHEAD) return;
        if (this.state[dependent] !== WAITING || !this.mayGoAhead(dependent, ws)) continue;
        this.sendTaskAhead(dependent, ws);
        stack.push(dependent);
      }
    }
  }

  /**
   * Whether `slot` may be sent ahead to `ws`: it may run there, and `ws` holds or is computing
   * every input (an input being stolen from it is not counted: it may leave).
   */
  protected mayGoAhead(slot: number, ws: WorkerState): boolean {
    for (const dep of this.dependencies[slot]) {
      const state = this.state[dep];
      if (state === MEMORY) {
        if (!ws.hasWhat.has(dep)) return false;
      } else if (state !== PROCESSING || this.processingOn[dep] !== ws || this.dependents[dep].length !== 1 || this.isBeingStolen(dep)) {
        return false;
      }
    }
    return this.mayRunOn(slot, ws);
  }

  /** Whether a restriction lets `slot` run on `ws`. */
  protected mayRunOn(slot: number, ws: WorkerState): boolean {
    if (!this.restrictions.has(slot)) return true;
    const allowed = this.allowedWorkers(slot);
    return allowed === undefined || allowed.has(ws);
  }

  /** A steal request for `slot` is out (./stealing). */
  protected abstract isBeingStolen(slot: number): boolean;

  protected sendTaskAhead(slot: number, ws: WorkerState): void {
    this.setState(slot, PROCESSING);
    this.processingOn[slot] = ws;
    ws.processing.add(slot);
    ws.occupancy += this.estimatedDuration(slot);
    this.waitingLocally[slot] = 1;
    ws.waitingLocally++;
    this.defineFunctions(ws, slot);
    this.outboxOf(ws).push(this.computeTask(slot, ws));
  }

  protected defineFunctions(ws: WorkerState, slot: number): void {
    let missing: (readonly [number, FnSpec])[] | undefined;
    for (const id of this.functionIds[slot]) {
      if (ws.knownFunctions.has(id)) continue;
      ws.knownFunctions.add(id);
      (missing ??= []).push([id, this.functionSpec(id)]);
    }
    if (missing !== undefined) this.outboxOf(ws).push({ op: "define-functions", functions: missing });
  }

  protected computeTask(slot: number, ws: WorkerState | undefined): ComputeTaskMessage {
    const deps = this.dependencies[slot];
    const dependencies = new Array<DependencyInfo>(deps.length);
    for (let i = 0; i < deps.length; i++) {
      const dep = deps[i];
      if (this.state[dep] === MEMORY) {
        const whoHas = this.placement === "queue" ? NO_ADDRESSES : this.addressesOf(dep);
        dependencies[i] = { key: this.keys[dep], nbytes: this.nbytes[dep], whoHas };
      } else {
        // Being computed on the same worker (sent ahead).
        dependencies[i] = { key: this.keys[dep], nbytes: 0, whoHas: NO_ADDRESSES, local: ws !== undefined };
      }
    }
    const key = this.keys[slot];
    const name = this.names[slot];
    const prefix = this.prefixes[slot];
    const task = this.tasks[slot]!;
    const priority = this.priority[slot];
    const spanId = this.spanOf(slot);
    // A result a client holds comes back with its report when small: its gather needs no round trip.
    // (Written out twice rather than copied with the flag added: thousands are made per graph.)
    if (this.placement === "locality" && this.wants[slot] > 0) {
      return { op: "compute-task", key, name, prefix, task, dependencies, priority, spanId, returnsResult: true };
    }
    return { op: "compute-task", key, name, prefix, task, dependencies, priority, spanId };
  }

  protected enqueue(slot: number): void {
    this.setState(slot, PROCESSING);
    this.inFlight++;
    const task = this.computeTask(slot, undefined);
    const last = this.queueInstructions[this.queueInstructions.length - 1];
    if (last?.op === "enqueue") last.tasks.push(task);
    else this.queueInstructions.push({ op: "enqueue", tasks: [task] });
    this.listeners.dispatched(slot, undefined);
  }

  /** Tells `ws` to drop `key`; consecutive frees share one message. */
  protected freeOn(ws: WorkerState, key: string): void {
    const outbox = this.outboxOf(ws);
    const last = outbox[outbox.length - 1];
    if (last?.op === "free-keys") (last.keys as string[]).push(key);
    else outbox.push({ op: "free-keys", keys: [key] });
  }

  protected outboxOf(ws: WorkerState): ToWorker[] {
    if (ws.outbox.length === 0) this.dirty.push(ws);
    return ws.outbox;
  }

  /** Takes a processing task off its worker (finished, failed, cancelled or lost). */
  protected unassign(slot: number, ws: WorkerState): void {
    ws.processing.delete(slot);
    ws.occupancy = ws.processing.size === 0 ? 0 : Math.max(0, ws.occupancy - this.estimatedDuration(slot));
    if (this.waitingLocally[slot] === 1) {
      this.waitingLocally[slot] = 0;
      ws.waitingLocally--;
    }
    this.processingOn[slot] = undefined;
  }

  /** A task that became waiting after its inputs were sent: it may follow them to their worker. */
  protected trySendingAhead(slot: number): void {
    const first = this.dependencies[slot][0];
    const ws = this.processingOn[first] ?? this.holder[first];
    if (ws === undefined || ws.status !== "running" || ws.waitingLocally >= MAX_SENT_AHEAD || !this.mayGoAhead(slot, ws)) return;
    this.sendTaskAhead(slot, ws);
    this.sendDependentsAhead(slot, ws);
  }
}
