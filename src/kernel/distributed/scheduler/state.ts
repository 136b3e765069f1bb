// The cluster scheduler's state machine (Dask's SchedulerState): task and worker state, events
// in, instructions out, no I/O. Events are method calls (a graph submitted, a key wanted or
// released, a worker joined or left, messages from a worker); instructions collect in each
// worker's outbox and, with queue placement, in a list of tasks for the shared queue, until the
// driver takes them once per event-loop turn. Listeners hear about the tasks they watch once
// the event is handled (./listeners). Walks over the graph use work lists, never recursion: a
// chain of a million tasks is a million steps, not a million stack frames.
//
// Tasks live in slots of a growable table (columns indexed by slot) so that per-task work is a
// few array writes: a million-task graph costs tens of bytes per task here.

import type { ClusterMemory, MetricRecord, TaskStateCounts, TaskStreamRecord } from "../../../protocol/records";
import { now as machineNow } from "../../clock";
import type { SpanPath } from "../../metrics/spans";
import { SPAN_STATES, type SpanTasks, SpansState } from "../../metrics/spans-state";
import type { FnSpec } from "../../execution/wire";
import type {
  ComputeTaskMessage,
  DependencyInfo,
  FromWorker,
  HeartbeatMessage,
  RegisterMessage,
  TaskErredMessage,
  TaskFinishedMessage,
  ToWorker,
  WireTask,
  WorkerAddress,
} from "../messages";
import { type NumberColumn, grownColumn } from "./columns";
import { BandwidthEstimate, CumulativeMetrics, SystemHistory, clusterMemory } from "./heartbeats";
import { type TaskFailure, type TaskListener, TaskListeners } from "./listeners";
import { SlotHeap } from "./queue";
import { TaskStreamRing } from "./task-stream";
import type { Placement } from "./transport";
import { WorkerState } from "./workers";

export type { TaskFailure, TaskListener } from "./listeners";

// Task states, Dask's names. A free slot is FORGOTTEN.
export const RELEASED = 0;
export const WAITING = 1;
export const QUEUED = 2;
export const PROCESSING = 3;
export const MEMORY = 4;
export const ERRED = 5;
export const FORGOTTEN = 6;
/** Ready, but no worker can take it (none running): waits for one to join. */
export const NO_WORKER = 7;
const STATE_NAMES = ["released", "waiting", "queued", "processing", "memory", "erred", "forgotten", "no-worker"] as const;
export type TaskStateName = (typeof STATE_NAMES)[number];
/** Each state's index in a span's counts (Dask's TaskGroup states): no-worker tasks are queued there. */
const SPAN_STATE = Uint8Array.from(STATE_NAMES, (name) => SPAN_STATES.indexOf(name === "no-worker" ? "queued" : name));

/**
 * A graph to add, in columns: entry i is a task (`tasks[i]` set) or a key the scheduler must
 * already know (a Future's key the graph refers to; `tasks[i]` undefined).
 */
export interface GraphSubmission {
  /** Key ids (graph/keys.ts `keyId`). */
  readonly keys: readonly string[];
  /** Dask's repr of each key, for records and messages. */
  readonly names: readonly string[];
  readonly prefixes: readonly string[];
  /** Dask's task group (key_split_group): tuple keys' first element, else the prefix. */
  readonly groups: readonly string[];
  readonly tasks: readonly (WireTask | undefined)[];
  /** Function ids each task calls (see FunctionTable). */
  readonly functions: readonly (readonly number[])[];
  /** Entry i depends on entries `dependencies[dependencyStart[i] … dependencyStart[i+1])`. */
  readonly dependencyStart: Int32Array;
  readonly dependencies: Int32Array;
  /** Static order within the graph: lower runs first; dependencies before dependents. */
  readonly order: Int32Array;
  /** Entries the submitter wants kept (each gets one want, released with `unwant`). */
  readonly wanted: readonly number[];
  /** The span the graph was submitted in (the client's `currentSpan()`); absent: the default span. */
  readonly span?: SpanPath;
  /** Only when a collection tagged some tasks (`spanOfSpec`): entry i's own span where it has one. */
  readonly taskSpans?: readonly (SpanPath | undefined)[];
}

export interface SchedulerOptions {
  readonly placement: Placement;
  /** Dask's `worker-saturation`: root tasks in flight per thread; Infinity sends them all at once. */
  readonly workerSaturation?: number;
  /** Dask's `allowed-failures`: workers a task may see die under it before it errs with KilledWorker. */
  readonly allowedFailures?: number;
  /** Send a task ahead to the worker computing all its inputs (it starts it when they finish). */
  readonly sendAhead?: boolean;
  readonly taskStreamLength?: number;
  /**
   * Keep fine performance metrics and spans (default true). Off only to measure what they cost
   * (bench/cluster-fpm.ts, through LocalCluster's TSDASK_METRICS=off): tasks then all count in one
   * untracked span and heartbeats' digests are dropped.
   */
  readonly metrics?: boolean;
  /** Function specs by id, for define-functions. */
  readonly functionSpec: (id: number) => FnSpec;
  /**
   * Where a listener's error goes (the state is whole again by then, and the other listeners
   * told). Without it, the event that caused the notice throws the first such error at its end.
   */
  readonly listenerFailed?: (error: unknown) => void;
}

/** A task's priority is (submission, static order) as one number: submission × this + order. */
const SUBMISSION_SPAN = 2 ** 31;

/** The static order within its submission of a task whose priority (ComputeTaskMessage.priority) is `priority`. */
export function staticOrderOf(priority: number): number {
  return priority % SUBMISSION_SPAN;
}

/** The span of every task when metrics are off (it counts nothing). */
const UNTRACKED_SPAN: SpanTasks = {
  id: "default",
  counts: new Float64Array(SPAN_STATES.length),
  ran() {},
};
/** The heartbeat interval a hurried worker is told: its next heartbeat goes out at once. */
const HURRIED_HEARTBEAT_SECONDS = 0.001;
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

interface GroupStats {
  /** Live tasks in the group. */
  size: number;
  /** Other groups its tasks depend on. */
  readonly dependencies: Set<string>;
  /** The span of the group's first task: every task of the group is accounted there (Dask's TaskGroup.span_id). */
  readonly span: SpanTasks;
}

interface PrefixStats {
  /** Mean compute seconds (exponentially weighted), or -1 before any finished. */
  duration: number;
  /** Mean result bytes, or -1 before any finished. */
  nbytes: number;
}

const EMPTY: readonly number[] = [];

export class ClusterState {
  readonly placement: Placement;
  readonly workerSaturation: number;
  readonly allowedFailures: number;
  readonly sendAhead: boolean;
  readonly metrics: boolean;
  readonly taskStream: TaskStreamRing;
  readonly bandwidth = new BandwidthEstimate();
  /** The cluster's CPU and memory over time, from heartbeats. */
  readonly system = new SystemHistory();
  readonly cumulativeMetrics = new CumulativeMetrics();
  /** Dask's spans extension: spans, their tasks' counts and times, their metrics, the cluster's threads over time. */
  readonly spans = new SpansState();

  // ---- The task table: columns indexed by slot -------------------------------------------------
  private capacity = 0;
  private state = new Uint8Array(0);
  /** Inputs not in memory yet. */
  private waitingOn = new Int32Array(0);
  /** Dependents waiting, queued or processing: they will need this result. */
  private pendingDependents = new Int32Array(0);
  /** Holds by clients (computations, Futures). */
  private wants = new Int32Array(0);
  private priority = new Float64Array(0);
  private nbytes = new Float64Array(0);
  /** Workers that died while this task could run on them. */
  private suspicious = new Uint8Array(0);
  /** Sent ahead and still waiting on its worker for inputs. */
  private waitingLocally = new Uint8Array(0);
  private readonly keys: string[] = [];
  private readonly names: string[] = [];
  private readonly prefixes: string[] = [];
  private readonly groups: string[] = [];
  /** Each task's span (its group's). */
  private readonly spanTasks: SpanTasks[] = [];
  private readonly tasks: (WireTask | undefined)[] = [];
  private readonly functionIds: (readonly number[])[] = [];
  private readonly dependencies: (readonly number[])[] = [];
  /** Shared EMPTY until a first dependent arrives (most tasks have one or none). */
  private readonly dependents: (readonly number[])[] = [];
  private readonly processingOn: (WorkerState | undefined)[] = [];
  /** The first worker holding the result; further holders in `replicas`. */
  private readonly holder: (WorkerState | undefined)[] = [];
  private readonly replicas = new Map<number, WorkerState[]>();
  private readonly failures = new Map<number, TaskFailure>();
  private readonly slotByKey = new Map<string, number>();
  private readonly freeSlots: number[] = [];
  /** Slots freed by the event under way: reused only after its listeners have been told about them. */
  private freedSlots: number[] = [];
  private readonly listeners: TaskListeners;
  /** Events under way (one may cause another: a worker registering again leaves first). */
  private eventDepth = 0;
  private readonly counts = new Int32Array(STATE_NAMES.length);

  private readonly groupStats = new Map<string, GroupStats>();
  private readonly prefixStats = new Map<string, PrefixStats>();
  private readonly rootQueue: SlotHeap;
  /** Ready tasks no worker could take (none running). */
  private noWorker: number[] = [];
  private generation = 0;

  // ---- Workers and instructions ---------------------------------------------------------------
  readonly workers = new Map<WorkerAddress, WorkerState>();
  private workerCount = 0;
  private totalThreads = 0;
  /** Workers with messages in their outbox. */
  private dirty: WorkerState[] = [];
  /** Queue placement: tasks for the shared queue, and keys to drop from the store. */
  private toQueue: ComputeTaskMessage[] = [];
  private toForget: string[] = [];
  /** Queue placement: tasks enqueued or running, against the cluster's slots. */
  private inFlight = 0;
  private readonly functionSpec: (id: number) => FnSpec;

  constructor(options: SchedulerOptions) {
    this.placement = options.placement;
    this.workerSaturation = options.workerSaturation ?? 1.1;
    if (!(this.workerSaturation > 0)) throw new RangeError(`workerSaturation must be > 0 (Infinity: no queuing), got ${this.workerSaturation}`);
    this.allowedFailures = options.allowedFailures ?? 3;
    if (!(Number.isInteger(this.allowedFailures) && this.allowedFailures >= 0)) {
      throw new RangeError(`allowedFailures must be a whole number ≥ 0, got ${this.allowedFailures}`);
    }
    this.sendAhead = options.sendAhead ?? options.placement === "locality";
    this.metrics = options.metrics ?? true;
    this.taskStream = new TaskStreamRing(options.taskStreamLength);
    this.functionSpec = options.functionSpec;
    this.rootQueue = new SlotHeap((slot) => this.priority[slot]);
    this.listeners = new TaskListeners(options.listenerFailed);
  }

  // ---- Queries ---------------------------------------------------------------------------------

  slotOf(key: string): number | undefined {
    return this.slotByKey.get(key);
  }
  keyOf(slot: number): string {
    return this.keys[slot];
  }
  nameOf(slot: number): string {
    return this.names[slot];
  }
  prefixOf(slot: number): string {
    return this.prefixes[slot];
  }
  stateOf(slot: number): TaskStateName {
    return STATE_NAMES[this.state[slot]];
  }
  nbytesOf(slot: number): number {
    return this.nbytes[slot];
  }
  failureOf(slot: number): TaskFailure | undefined {
    return this.failures.get(slot);
  }
  dependenciesOf(slot: number): readonly number[] {
    return this.dependencies[slot];
  }
  /** Workers holding the result (empty with queue placement: it is in the store). */
  whoHas(slot: number): WorkerState[] {
    const first = this.holder[slot];
    if (first === undefined) return [];
    const more = this.replicas.get(slot);
    return more === undefined ? [first] : [first, ...more];
  }
  processingWorker(slot: number): WorkerState | undefined {
    return this.processingOn[slot];
  }
  get taskCount(): number {
    return this.slotByKey.size;
  }
  /** Tasks per state (Dask's names), forgotten ones excluded; "no-worker" ones count as queued. */
  stateCounts(): TaskStateCounts {
    const counts: Record<string, number> = {};
    STATE_NAMES.forEach((name, state) => {
      if (state !== FORGOTTEN && this.counts[state] > 0) counts[name === "no-worker" ? "queued" : name] = (counts[name] ?? 0) + this.counts[state];
    });
    return counts;
  }
  get queuedCount(): number {
    return this.counts[QUEUED];
  }
  memory(): ClusterMemory {
    return clusterMemory([...this.workers.values()].map((ws) => ws.memory));
  }
  get threads(): number {
    return this.totalThreads;
  }
  /** The id of the span a task belongs to. */
  spanOf(slot: number): string {
    return this.spanTasks[slot].id;
  }

  // ---- Listeners -------------------------------------------------------------------------------

  addListener(slot: number, listener: TaskListener): void {
    this.listeners.add(slot, listener);
  }

  removeListener(slot: number, listener: TaskListener): void {
    this.listeners.remove(slot, listener);
  }

  /**
   * Runs one event (every public method that changes the state goes through here); once the
   * outermost is done, listeners hear what happened, and only then are freed slots reused.
   */
  private event<T>(handle: () => T): T {
    this.eventDepth++;
    try {
      return handle();
    } finally {
      if (--this.eventDepth === 0 && !this.listeners.busy) this.deliverNotices();
    }
  }

  private deliverNotices(): void {
    try {
      this.listeners.deliver();
    } finally {
      for (const slot of this.freedSlots) {
        this.listeners.reset(slot);
        this.freeSlots.push(slot);
      }
      this.freedSlots = [];
    }
  }

  // ---- Client events ---------------------------------------------------------------------------

  /**
   * Adds a graph: new tasks start waiting (or run), keys already known are reused as they are
   * (Dask: a key names its value). Returns each entry's slot. Throws, changing nothing, if an
   * entry without a task names a key the scheduler does not know. New tasks join their group's
   * span, or (a new group) the span the submission names for them, opened at `now`.
   */
  submit(graph: GraphSubmission, listener?: TaskListener, now: number = machineNow()): Int32Array {
    return this.event(() => this.addGraph(graph, listener, now));
  }

  private addGraph(graph: GraphSubmission, listener: TaskListener | undefined, now: number): Int32Array {
    const n = graph.keys.length;
    for (let i = 0; i < n; i++) {
      if (graph.tasks[i] === undefined && !this.slotByKey.has(graph.keys[i])) {
        throw new Error(`The scheduler does not know key ${graph.names[i]} (its Future was released?)`);
      }
    }
    const generation = ++this.generation;
    const slots = new Int32Array(n);
    const created: number[] = [];
    const spanOf = this.submissionSpans(graph, now);
    for (let i = 0; i < n; i++) {
      const key = graph.keys[i];
      const known = this.slotByKey.get(key);
      if (known !== undefined) {
        slots[i] = known;
        continue;
      }
      const slot = this.allocate(key, graph.names[i], graph.prefixes[i], graph.groups[i], spanOf, i);
      slots[i] = slot;
      this.tasks[slot] = graph.tasks[i];
      this.functionIds[slot] = graph.functions[i] ?? EMPTY;
      // Dask's (generation, static order): earlier submissions first, then the graph's own order.
      this.priority[slot] = generation * SUBMISSION_SPAN + graph.order[i];
      created.push(i);
    }
    // Edges of the new tasks (known keys keep theirs).
    for (const i of created) {
      const slot = slots[i];
      const from = graph.dependencyStart[i];
      const to = graph.dependencyStart[i + 1];
      if (to === from) continue;
      const deps = new Array<number>(to - from);
      const group = this.groupStats.get(this.groups[slot])!;
      for (let e = from; e < to; e++) {
        const dep = slots[graph.dependencies[e]];
        deps[e - from] = dep;
        this.addDependent(dep, slot);
        const depGroup = this.groups[dep];
        if (depGroup !== this.groups[slot]) group.dependencies.add(depGroup);
      }
      this.dependencies[slot] = deps;
    }
    for (const i of graph.wanted) this.wants[slots[i]]++;
    if (listener !== undefined) for (let i = 0; i < n; i++) this.addListener(slots[i], listener);
    // Start what the wanted keys need (activate puts inputs first); entries nobody needs are dropped.
    for (const i of graph.wanted) {
      const slot = slots[i];
      if (this.state[slot] === RELEASED) this.activate(slot);
    }
    for (let c = created.length - 1; c >= 0; c--) {
      const slot = slots[created[c]];
      if (this.state[slot] === RELEASED && !this.isNeeded(slot)) this.forgetIfUnneeded(slot);
    }
    return slots;
  }

  /**
   * Entry i's span, for a task starting a new group: the span is opened on first use, once per
   * submission (the default span too: its tasks are not waiting yet while the graph is added, so
   * it would look done and a second one would open).
   */
  private submissionSpans(graph: GraphSubmission, now: number): (entry: number) => SpanTasks {
    if (!this.metrics) return () => UNTRACKED_SPAN;
    const opened = new Map<SpanPath | undefined, SpanTasks>();
    return (entry) => {
      const path = graph.taskSpans?.[entry] ?? graph.span;
      let span = opened.get(path);
      if (span === undefined) opened.set(path, (span = this.spans.tasksOf(this.spans.ensureSpan(path, now))));
      return span;
    };
  }

  /** One more hold on a key's result (a Future made for an existing key). */
  want(slot: number): void {
    this.event(() => {
      this.wants[slot]++;
      if (this.state[slot] === RELEASED) this.activate(slot);
    });
  }

  /** Drops a hold; a result nobody needs any more is released, an unneeded computation cancelled. */
  unwant(slot: number): void {
    if (this.wants[slot] <= 0) return;
    this.event(() => {
      if (--this.wants[slot] === 0) this.releaseUnneeded([slot]);
    });
  }

  // ---- Worker events ---------------------------------------------------------------------------

  addWorker(registration: RegisterMessage, now: number): WorkerState {
    return this.event(() => this.registerWorker(registration, now));
  }

  private registerWorker(registration: RegisterMessage, now: number): WorkerState {
    const known = this.workers.get(registration.address);
    if (known !== undefined) this.removeWorker(registration.address, "it registered again", now);
    const ws = new WorkerState(registration, ++this.workerCount, now);
    this.workers.set(ws.address, ws);
    this.totalThreads += ws.nthreads;
    this.spans.setTotalThreads(now, this.totalThreads);
    this.reply(ws, now);
    this.retryStranded();
    return ws;
  }

  /** Tasks that found no running worker try again (one joined, or one resumed). */
  private retryStranded(): void {
    const stranded = this.noWorker;
    this.noWorker = [];
    for (const slot of stranded) if (this.state[slot] === NO_WORKER) this.ready(slot);
  }

  /**
   * A worker is gone. Its processing tasks go back to waiting (each a suspect if it could have
   * been running: too many deaths under a task and it errs with KilledWorker); results only it
   * held are recomputed if still needed.
   */
  removeWorker(address: WorkerAddress, reason: string, now: number): void {
    this.event(() => this.dropWorker(address, reason, now));
  }

  private dropWorker(address: WorkerAddress, _reason: string, now: number): void {
    const ws = this.workers.get(address);
    if (ws === undefined) return;
    this.workers.delete(address);
    this.totalThreads -= ws.nthreads;
    this.spans.setTotalThreads(now, this.totalThreads);
    ws.status = "closed";
    this.bandwidth.removeWorker(address);
    this.system.removeWorker(address);
    const processing = [...ws.processing];
    for (const slot of processing) {
      const wasRunnable = this.waitingLocally[slot] === 0;
      this.unassign(slot, ws);
      this.setState(slot, WAITING);
      if (wasRunnable && ++this.suspicious[slot] > this.allowedFailures) {
        this.fail(slot, { kind: "killed", key: this.keys[slot], name: this.names[slot], worker: address, failures: this.suspicious[slot] });
      }
    }
    const lost: number[] = [];
    for (const slot of ws.hasWhat) {
      this.dropHolder(slot, ws);
      if (this.holder[slot] === undefined) lost.push(slot);
    }
    ws.hasWhat.clear();
    // Results that lived only there: released, and recomputed if something still needs them.
    for (const slot of lost) this.loseResult(slot);
    // Its tasks back in line, inputs first.
    processing.sort((a, b) => this.priority[a] - this.priority[b]);
    for (const slot of processing) if (this.state[slot] === WAITING) this.recountInputs(slot);
    this.scheduleQueued();
  }

  /** Messages from a registered worker (gather and run replies are the driver's, not ours). */
  handle(address: WorkerAddress, messages: readonly FromWorker[], now: number): void {
    this.event(() => this.handleMessages(address, messages, now));
  }

  private handleMessages(address: WorkerAddress, messages: readonly FromWorker[], now: number): void {
    let ws = this.workers.get(address);
    if (ws === undefined) {
      // With queue placement a task's outcome stands whoever reports it (its result is in the
      // store): a worker whose registration lapsed while it ran, or the transport itself.
      if (this.placement !== "queue") return;
      ws = new WorkerState({ op: "register", address, name: address, host: "", pid: 0, nthreads: 0, memoryLimit: 0, globals: [], now }, 0, now);
      messages = messages.filter((message) => message.op === "task-finished" || message.op === "task-erred" || message.op === "missing-data");
    }
    ws.lastSeen = now;
    for (const message of messages) {
      switch (message.op) {
        case "task-finished":
          this.taskFinished(ws, message);
          break;
        case "task-erred":
          this.taskErred(ws, message);
          break;
        case "heartbeat":
          this.heartbeat(ws, message, now);
          break;
        case "missing-data":
          if (this.placement === "queue") this.missingFromStore(message.key, message.task);
          else this.missingData(ws, message.key, message.errantWorker);
          break;
        case "add-keys":
          for (const key of message.keys) this.addReplica(ws, key);
          break;
        case "release-worker-data":
          for (const key of message.keys) this.dropReplica(ws, key);
          break;
        case "worker-status-change":
          ws.status = message.status;
          if (ws.status === "running") this.retryStranded();
          break;
        default:
          break;
      }
    }
    this.scheduleQueued();
  }

  /** `address` does not hold `key` after all (a gather found it missing): a result lost with its last holder is recomputed. */
  replicaMissing(address: WorkerAddress, key: string): void {
    const ws = this.workers.get(address);
    if (ws !== undefined) this.event(() => this.dropReplica(ws, key));
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

  /** Queue placement: tasks for the shared queue, and keys to drop from the store. */
  takeQueueInstructions(): { enqueue: ComputeTaskMessage[]; forget: string[] } {
    this.event(() => this.scheduleQueued());
    const out = { enqueue: this.toQueue, forget: this.toForget };
    this.toQueue = [];
    this.toForget = [];
    return out;
  }

  // ---- Transitions -----------------------------------------------------------------------------

  private addDependent(slot: number, dependent: number): void {
    const users = this.dependents[slot];
    if (users === EMPTY) this.dependents[slot] = [dependent];
    else (users as number[]).push(dependent);
  }

  private allocate(key: string, name: string, prefix: string, group: string, spanOf: (entry: number) => SpanTasks, entry: number): number {
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      slot = this.keys.length;
      if (slot === this.capacity) this.grow();
      this.keys.push(key);
      this.names.push(name);
      this.prefixes.push(prefix);
      this.groups.push(group);
      this.tasks.push(undefined);
      this.functionIds.push(EMPTY);
      this.dependencies.push(EMPTY);
      this.dependents.push(EMPTY);
      this.processingOn.push(undefined);
      this.holder.push(undefined);
      this.listeners.reset(slot);
    } else {
      this.keys[slot] = key;
      this.names[slot] = name;
      this.prefixes[slot] = prefix;
      this.groups[slot] = group;
      this.dependencies[slot] = EMPTY;
      this.dependents[slot] = EMPTY;
      this.counts[FORGOTTEN]--;
    }
    this.state[slot] = RELEASED;
    this.counts[RELEASED]++;
    this.waitingOn[slot] = 0;
    this.pendingDependents[slot] = 0;
    this.wants[slot] = 0;
    this.nbytes[slot] = 0;
    this.suspicious[slot] = 0;
    this.waitingLocally[slot] = 0;
    this.slotByKey.set(key, slot);
    let stats = this.groupStats.get(group);
    if (stats === undefined) this.groupStats.set(group, (stats = { size: 0, dependencies: new Set(), span: spanOf(entry) }));
    stats.size++;
    // A reused slot's earlier task stays counted as forgotten in its own span.
    this.spanTasks[slot] = stats.span;
    if (this.metrics) stats.span.counts[SPAN_STATE[RELEASED]]++;
    return slot;
  }

  private grow(): void {
    const capacity = Math.max(1024, this.capacity * 2);
    const grown = <T extends NumberColumn>(old: T, make: new (length: number) => T): T => grownColumn(old, make, capacity);
    this.state = grown(this.state, Uint8Array);
    this.waitingOn = grown(this.waitingOn, Int32Array);
    this.pendingDependents = grown(this.pendingDependents, Int32Array);
    this.wants = grown(this.wants, Int32Array);
    this.priority = grown(this.priority, Float64Array);
    this.nbytes = grown(this.nbytes, Float64Array);
    this.suspicious = grown(this.suspicious, Uint8Array);
    this.waitingLocally = grown(this.waitingLocally, Uint8Array);
    this.capacity = capacity;
  }

  private setState(slot: number, state: number): void {
    const from = this.state[slot];
    this.counts[from]--;
    this.counts[state]++;
    this.state[slot] = state;
    if (this.metrics) {
      const span = this.spanTasks[slot].counts;
      span[SPAN_STATE[from]]--;
      span[SPAN_STATE[state]]++;
    }
  }

  private isNeeded(slot: number): boolean {
    return this.wants[slot] > 0 || this.pendingDependents[slot] > 0;
  }

  /** RELEASED → WAITING for `root` and, first, for the released inputs it needs (no recursion: chains may be long). */
  private activate(root: number): void {
    const stack = [root];
    while (stack.length > 0) {
      const slot = stack[stack.length - 1];
      if (this.state[slot] !== RELEASED) {
        stack.pop();
        continue;
      }
      let pushed = false;
      for (const dep of this.dependencies[slot]) {
        if (this.state[dep] === RELEASED) {
          stack.push(dep);
          pushed = true;
        }
      }
      if (pushed) continue;
      stack.pop();
      this.becomeWaiting(slot);
    }
  }

  private becomeWaiting(slot: number): void {
    if (this.tasks[slot] === undefined) {
      // Only a key whose task is gone (never happens while its holders keep it) lands here.
      throw new Error(`Internal: task ${this.names[slot]} has no spec to run`);
    }
    this.setState(slot, WAITING);
    let waiting = 0;
    let failed: TaskFailure | undefined;
    for (const dep of this.dependencies[slot]) {
      this.pendingDependents[dep]++;
      const depState = this.state[dep];
      if (depState === ERRED) failed ??= this.failures.get(dep);
      else if (depState !== MEMORY) waiting++;
    }
    this.waitingOn[slot] = waiting;
    if (failed !== undefined) this.fail(slot, failed);
    else if (waiting === 0) this.ready(slot);
    else if (this.sendAhead) this.trySendingAhead(slot);
  }

  /** A task that became waiting after its inputs were sent: it may follow them to their worker. */
  private trySendingAhead(slot: number): void {
    const first = this.dependencies[slot][0];
    const ws = this.processingOn[first] ?? this.holder[first];
    if (ws === undefined || ws.status !== "running" || ws.waitingLocally >= MAX_SENT_AHEAD || !this.allInputsOn(slot, ws)) return;
    this.sendTaskAhead(slot, ws);
    this.sendDependentsAhead(slot, ws);
  }

  /** After a worker loss: a waiting task's inputs counted afresh, released ones restarted. */
  private recountInputs(slot: number): void {
    let waiting = 0;
    for (const dep of this.dependencies[slot]) {
      if (this.state[dep] === RELEASED) this.activate(dep);
      if (this.state[dep] !== MEMORY) waiting++;
    }
    this.waitingOn[slot] = waiting;
    if (waiting === 0 && this.state[slot] === WAITING) this.ready(slot);
  }

  /** All inputs are in memory: queue it, send it, or wait for a worker. */
  private ready(slot: number): void {
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
  private isRootish(slot: number): boolean {
    const group = this.groupStats.get(this.groups[slot])!;
    if (group.size <= 2 * this.totalThreads) return false;
    for (const dep of this.dependencies[slot]) if (this.groups[dep] === this.groups[slot]) return false;
    if (group.dependencies.size >= 5) return false;
    let inputs = 0;
    for (const name of group.dependencies) inputs += this.groupStats.get(name)?.size ?? 0;
    return inputs < 5;
  }

  /** How many root tasks a worker may have running or ready at once. */
  private rootSlots(ws: WorkerState, head: number): number {
    const dask = Math.max(1, Math.ceil(this.workerSaturation * ws.nthreads));
    const stats = this.prefixStats.get(this.prefixes[head]);
    if (stats === undefined || stats.duration < 0) return dask;
    let allowance = Math.min(MAX_ROOTS_PER_THREAD * ws.nthreads, Math.floor((QUEUED_WORK_SECONDS * ws.nthreads) / Math.max(stats.duration, 1e-7)));
    if (stats.nbytes > 0 && ws.memoryLimit > 0) allowance = Math.min(allowance, Math.floor((QUEUED_MEMORY_SHARE * ws.memoryLimit) / stats.nbytes));
    return Math.max(dask, allowance);
  }

  /** Hands queued root tasks to workers with room, in priority order, a run of neighbours per worker. */
  private scheduleQueued(): void {
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
  private nextQueued(): number {
    for (;;) {
      const slot = this.rootQueue.peek();
      if (slot < 0 || this.state[slot] === QUEUED) return slot;
      this.rootQueue.pop();
    }
  }

  /**
   * Dask's decide_worker with its worker_objective: among the workers holding an input (and the
   * least busy worker, standing in for work stealing), the one where the task would start
   * soonest: bytes to fetch / bandwidth + occupancy / threads; ties to fewer tasks, then less data.
   */
  private decideWorker(slot: number): WorkerState | undefined {
    let best: WorkerState | undefined;
    let bestCost = Infinity;
    const consider = (ws: WorkerState): void => {
      if (ws.status !== "running") return;
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
    let idlest: WorkerState | undefined;
    for (const ws of this.workers.values()) {
      if (ws.status === "running" && (idlest === undefined || ws.occupancy / ws.nthreads < idlest.occupancy / idlest.nthreads)) idlest = ws;
    }
    if (idlest !== undefined) consider(idlest);
    return best;
  }

  private transferBytes(slot: number, ws: WorkerState): number {
    let bytes = 0;
    for (const dep of this.dependencies[slot]) if (!ws.hasWhat.has(dep)) bytes += this.nbytes[dep];
    return bytes;
  }

  private estimatedDuration(slot: number): number {
    const stats = this.prefixStats.get(this.prefixes[slot]);
    return stats === undefined || stats.duration < 0 ? UNKNOWN_TASK_SECONDS : stats.duration;
  }

  /** PROCESSING on `ws`: the compute-task goes in its outbox. `ahead`: some inputs are still being computed there. */
  private sendTask(slot: number, ws: WorkerState, ahead: boolean): void {
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
  private sendDependentsAhead(sent: number, ws: WorkerState): void {
    const stack = [sent];
    while (stack.length > 0) {
      const slot = stack.pop()!;
      for (const dependent of this.dependents[slot]) {
        if (ws.waitingLocally >= MAX_SENT_AHEAD) return;
        if (this.state[dependent] !== WAITING || !this.allInputsOn(dependent, ws)) continue;
        this.sendTaskAhead(dependent, ws);
        stack.push(dependent);
      }
    }
  }

  private allInputsOn(slot: number, ws: WorkerState): boolean {
    for (const dep of this.dependencies[slot]) {
      const state = this.state[dep];
      if (state === MEMORY) {
        if (!ws.hasWhat.has(dep)) return false;
      } else if (state !== PROCESSING || this.processingOn[dep] !== ws || this.dependents[dep].length !== 1) {
        return false;
      }
    }
    return true;
  }

  private sendTaskAhead(slot: number, ws: WorkerState): void {
    this.setState(slot, PROCESSING);
    this.processingOn[slot] = ws;
    ws.processing.add(slot);
    ws.occupancy += this.estimatedDuration(slot);
    this.waitingLocally[slot] = 1;
    ws.waitingLocally++;
    this.defineFunctions(ws, slot);
    this.outboxOf(ws).push(this.computeTask(slot, ws));
  }

  private defineFunctions(ws: WorkerState, slot: number): void {
    let missing: (readonly [number, FnSpec])[] | undefined;
    for (const id of this.functionIds[slot]) {
      if (ws.knownFunctions.has(id)) continue;
      ws.knownFunctions.add(id);
      (missing ??= []).push([id, this.functionSpec(id)]);
    }
    if (missing !== undefined) this.outboxOf(ws).push({ op: "define-functions", functions: missing });
  }

  private computeTask(slot: number, ws: WorkerState | undefined): ComputeTaskMessage {
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
    const message: ComputeTaskMessage = {
      op: "compute-task",
      key: this.keys[slot],
      name: this.names[slot],
      prefix: this.prefixes[slot],
      task: this.tasks[slot]!,
      dependencies,
      priority: this.priority[slot],
      spanId: this.spanOf(slot),
    };
    // A result a client holds comes back with its report when small: its gather needs no round trip.
    return this.placement === "locality" && this.wants[slot] > 0 ? { ...message, returnsResult: true } : message;
  }

  private addressesOf(slot: number): readonly WorkerAddress[] {
    const more = this.replicas.get(slot);
    if (more === undefined) return this.holder[slot]?.addressList ?? NO_ADDRESSES;
    return [this.holder[slot]!.address, ...more.map((ws) => ws.address)];
  }

  private enqueue(slot: number): void {
    this.setState(slot, PROCESSING);
    this.inFlight++;
    this.toQueue.push(this.computeTask(slot, undefined));
    this.listeners.dispatched(slot, undefined);
  }

  /** Tells `ws` to drop `key`; consecutive frees share one message. */
  private freeOn(ws: WorkerState, key: string): void {
    const outbox = this.outboxOf(ws);
    const last = outbox[outbox.length - 1];
    if (last?.op === "free-keys") (last.keys as string[]).push(key);
    else outbox.push({ op: "free-keys", keys: [key] });
  }

  private outboxOf(ws: WorkerState): ToWorker[] {
    if (ws.outbox.length === 0) this.dirty.push(ws);
    return ws.outbox;
  }

  /** Takes a processing task off its worker (finished, failed, cancelled or lost). */
  private unassign(slot: number, ws: WorkerState): void {
    ws.processing.delete(slot);
    ws.occupancy = ws.processing.size === 0 ? 0 : Math.max(0, ws.occupancy - this.estimatedDuration(slot));
    if (this.waitingLocally[slot] === 1) {
      this.waitingLocally[slot] = 0;
      ws.waitingLocally--;
    }
    this.processingOn[slot] = undefined;
  }

  private taskFinished(ws: WorkerState, report: TaskFinishedMessage): void {
    const slot = this.slotByKey.get(report.key);
    if (slot === undefined) {
      this.freeOn(ws, report.key);
      return;
    }
    const state = this.state[slot];
    if (state === MEMORY) {
      // A second copy (it was recomputed meanwhile): keep it if needed. (The store keeps one copy.)
      if (this.placement === "locality") this.addHolder(slot, ws, report.nbytes);
      if (!this.isNeeded(slot)) this.release(slot);
      return;
    }
    if (state !== PROCESSING) {
      this.freeOn(ws, report.key);
      return;
    }
    const assigned = this.processingOn[slot];
    if (assigned !== undefined) {
      this.unassign(slot, assigned);
      if (assigned !== ws) this.freeOn(assigned, report.key);
    } else {
      this.inFlight--;
    }
    this.setState(slot, MEMORY);
    this.nbytes[slot] = report.nbytes;
    if (this.placement === "locality") this.addHolder(slot, ws, report.nbytes);
    this.learn(slot, report);
    if (report.digests !== undefined) this.addDigests(report.digests);
    this.spanRan(slot, report);
    const record = this.streamRecord(slot, ws, report);
    this.taskStream.push(record);
    this.listeners.finished(slot, ws, report, record);
    // Dependents: one input fewer to wait for.
    for (const dependent of this.dependents[slot]) {
      if (--this.waitingOn[dependent] !== 0) continue;
      const dependentState = this.state[dependent];
      if (dependentState === WAITING) this.ready(dependent);
      else if (dependentState === PROCESSING && this.waitingLocally[dependent] === 1) {
        const on = this.processingOn[dependent]!;
        this.waitingLocally[dependent] = 0;
        on.waitingLocally--;
        this.listeners.dispatched(dependent, on);
      }
    }
    // Its inputs, then itself, if nobody needs them any more.
    this.releaseUnneeded(this.dropInputs(slot, [slot]));
  }

  /** `slot` left the active states: its inputs have one user fewer; those left with none join `work`. */
  private dropInputs(slot: number, work: number[]): number[] {
    for (const dep of this.dependencies[slot]) {
      if (--this.pendingDependents[dep] === 0 && this.wants[dep] === 0) work.push(dep);
    }
    return work;
  }

  private taskErred(ws: WorkerState, report: TaskErredMessage): void {
    const slot = this.slotByKey.get(report.key);
    if (slot === undefined || this.state[slot] !== PROCESSING) return;
    if (report.digests !== undefined) this.addDigests(report.digests);
    this.taskStream.push({
      key: this.names[slot],
      prefix: this.prefixes[slot],
      worker: ws.address,
      thread: report.thread,
      status: "error",
      nbytes: 0,
      type: "",
      startstops: report.startstops,
      span: this.spanOf(slot),
    });
    this.fail(slot, { kind: "error", key: this.keys[slot], name: this.names[slot], error: report.error });
  }

  /** `root` fails, and every dependent still to run fails with it. */
  private fail(root: number, failure: TaskFailure): void {
    const stack = [root];
    const failed: number[] = [];
    const unusedInputs: number[] = [];
    while (stack.length > 0) {
      const slot = stack.pop()!;
      const state = this.state[slot];
      const active = state === WAITING || state === QUEUED || state === PROCESSING || state === NO_WORKER;
      if (!active) continue;
      if (state === PROCESSING) {
        const ws = this.processingOn[slot];
        if (ws !== undefined) {
          this.unassign(slot, ws);
          // A dependent sent ahead: its worker must not run it (the root's worker knows it failed).
          if (slot !== root) this.freeOn(ws, this.keys[slot]);
        } else {
          this.inFlight--;
          if (slot !== root) this.toForget.push(this.keys[slot]);
        }
      }
      this.setState(slot, ERRED);
      this.failures.set(slot, failure);
      this.dropInputs(slot, unusedInputs);
      this.listeners.erred(slot, failure);
      failed.push(slot);
      for (const dependent of this.dependents[slot]) stack.push(dependent);
    }
    this.releaseUnneeded(unusedInputs);
    // Failures nobody holds are dropped, dependents first.
    for (let i = failed.length - 1; i >= 0; i--) if (!this.isNeeded(failed[i])) this.forgetIfUnneeded(failed[i]);
  }

  /**
   * Of `work`, the tasks nobody needs go: a result in memory is released, an active task is
   * cancelled, and the inputs a cancelled task leaves without users follow (added to `work`).
   */
  private releaseUnneeded(work: number[]): void {
    while (work.length > 0) {
      const slot = work.pop()!;
      if (this.isNeeded(slot)) continue;
      const state = this.state[slot];
      if (state === MEMORY) {
        this.release(slot);
      } else if (state === WAITING || state === QUEUED || state === PROCESSING || state === NO_WORKER) {
        this.cancel(slot);
        this.dropInputs(slot, work);
        this.forgetIfUnneeded(slot);
      } else {
        this.forgetIfUnneeded(slot);
      }
    }
  }

  /** MEMORY → RELEASED: workers drop the result; forgotten too if no dependent could need it again. */
  private release(slot: number): void {
    if (this.placement === "queue") this.toForget.push(this.keys[slot]);
    const first = this.holder[slot];
    if (first !== undefined) {
      this.dropResult(first, slot);
      const more = this.replicas.get(slot);
      if (more !== undefined) for (const ws of more) this.dropResult(ws, slot);
    }
    this.holder[slot] = undefined;
    this.replicas.delete(slot);
    this.setState(slot, RELEASED);
    this.forgetIfUnneeded(slot);
  }

  private dropResult(ws: WorkerState, slot: number): void {
    this.freeOn(ws, this.keys[slot]);
    ws.hasWhat.delete(slot);
    ws.nbytes -= this.nbytes[slot];
  }

  /** An active task nobody needs: its worker stops it (its inputs are the caller's to let go). */
  private cancel(slot: number): void {
    const state = this.state[slot];
    if (state === PROCESSING) {
      const ws = this.processingOn[slot];
      if (ws !== undefined) {
        this.unassign(slot, ws);
        this.freeOn(ws, this.keys[slot]);
      } else {
        this.inFlight--;
        this.toForget.push(this.keys[slot]);
      }
    }
    this.setState(slot, RELEASED);
  }

  /**
   * Frees the slot of a released or erred task that nobody wants and whose dependents are all
   * gone (while a dependent lives, its worker may die and this task be needed to recompute it).
   * Inputs left without dependents go the same way.
   */
  private forgetIfUnneeded(root: number): void {
    const stack = [root];
    while (stack.length > 0) {
      const slot = stack.pop()!;
      const state = this.state[slot];
      if ((state !== RELEASED && state !== ERRED) || this.wants[slot] > 0 || this.dependents[slot].length > 0) continue;
      for (const dep of this.dependencies[slot]) {
        const users = this.dependents[dep] as number[];
        const at = users.indexOf(slot);
        if (at >= 0) {
          users[at] = users[users.length - 1];
          users.pop();
        }
        if (users.length === 0) stack.push(dep);
      }
      this.free(slot);
    }
  }

  private free(slot: number): void {
    this.setState(slot, FORGOTTEN);
    this.slotByKey.delete(this.keys[slot]);
    const group = this.groupStats.get(this.groups[slot])!;
    if (--group.size === 0) this.groupStats.delete(this.groups[slot]);
    this.tasks[slot] = undefined;
    this.functionIds[slot] = EMPTY;
    this.dependencies[slot] = EMPTY;
    this.failures.delete(slot);
    this.freedSlots.push(slot);
  }

  /** A result lost with every holder: recomputed if needed, else released. */
  private loseResult(slot: number): void {
    if (this.state[slot] !== MEMORY) return;
    this.setState(slot, RELEASED);
    if (this.isNeeded(slot)) {
      // Dependents already waiting on it now wait again.
      for (const dependent of this.dependents[slot]) {
        const state = this.state[dependent];
        if (state === WAITING || state === QUEUED || state === NO_WORKER) {
          if (state !== WAITING) this.setState(dependent, WAITING);
          this.waitingOn[dependent]++;
        }
      }
      this.activate(slot);
    } else {
      this.forgetIfUnneeded(slot);
    }
  }

  /**
   * Queue placement: `key` was not in the store when `task` wanted it (its job is over). The key's
   * result is lost: recomputed, as it is still needed; `task` waits for it again.
   */
  private missingFromStore(key: string, task: string | undefined): void {
    const slot = this.slotByKey.get(key);
    if (slot !== undefined) this.loseResult(slot);
    const dependent = task === undefined ? undefined : this.slotByKey.get(task);
    if (dependent === undefined || this.state[dependent] !== PROCESSING) return;
    this.inFlight--;
    this.setState(dependent, WAITING);
    this.recountInputs(dependent);
  }

  /** `ws` could not fetch `key` from `errant`: that holder is dropped, and `ws`'s tasks needing it start over. */
  private missingData(ws: WorkerState, key: string, errant: WorkerAddress): void {
    const slot = this.slotByKey.get(key);
    if (slot === undefined) return;
    const errantWorker = this.workers.get(errant);
    if (errantWorker !== undefined && errantWorker.hasWhat.has(slot)) this.dropHolder(slot, errantWorker);
    const lost = this.state[slot] === MEMORY && this.holder[slot] === undefined;
    // The worker dropped its tasks that needed the key; they go back to waiting.
    const again: number[] = [];
    for (const dependent of this.dependents[slot]) {
      if (this.state[dependent] === PROCESSING && this.processingOn[dependent] === ws) {
        this.unassign(dependent, ws);
        this.setState(dependent, WAITING);
        again.push(dependent);
      }
    }
    if (lost) this.loseResult(slot);
    for (const dependent of again) this.recountInputs(dependent);
  }

  private addHolder(slot: number, ws: WorkerState, nbytes: number): void {
    if (ws.hasWhat.has(slot)) return;
    ws.hasWhat.add(slot);
    ws.nbytes += nbytes;
    if (this.holder[slot] === undefined) this.holder[slot] = ws;
    else {
      const more = this.replicas.get(slot);
      if (more === undefined) this.replicas.set(slot, [ws]);
      else more.push(ws);
    }
  }

  private addReplica(ws: WorkerState, key: string): void {
    const slot = this.slotByKey.get(key);
    if (slot !== undefined && this.state[slot] === MEMORY) this.addHolder(slot, ws, this.nbytes[slot]);
    else this.freeOn(ws, key);
  }

  private dropReplica(ws: WorkerState, key: string): void {
    const slot = this.slotByKey.get(key);
    if (slot === undefined || !ws.hasWhat.has(slot)) return;
    this.dropHolder(slot, ws);
    if (this.holder[slot] === undefined && this.state[slot] === MEMORY) this.loseResult(slot);
  }

  private dropHolder(slot: number, ws: WorkerState): void {
    if (!ws.hasWhat.delete(slot)) return;
    ws.nbytes -= this.nbytes[slot];
    const more = this.replicas.get(slot);
    if (this.holder[slot] === ws) {
      this.holder[slot] = more?.shift();
    } else if (more !== undefined) {
      const at = more.indexOf(ws);
      if (at >= 0) more.splice(at, 1);
    }
    if (more !== undefined && more.length === 0) this.replicas.delete(slot);
  }

  /** What a finished task teaches about its prefix: mean duration and result size. */
  private learn(slot: number, report: TaskFinishedMessage): void {
    let duration = -1;
    for (const startstop of report.startstops) if (startstop.action === "compute") duration = startstop.stop - startstop.start;
    let stats = this.prefixStats.get(this.prefixes[slot]);
    if (stats === undefined) this.prefixStats.set(this.prefixes[slot], (stats = { duration: -1, nbytes: -1 }));
    if (duration >= 0) stats.duration = stats.duration < 0 ? duration : 0.5 * stats.duration + 0.5 * duration;
    stats.nbytes = stats.nbytes < 0 ? report.nbytes : 0.5 * stats.nbytes + 0.5 * report.nbytes;
  }

  /** The span learns when its task ran (its compute phase) and how big its result is. */
  private spanRan(slot: number, report: TaskFinishedMessage): void {
    for (const startstop of report.startstops) {
      if (startstop.action === "compute") this.spanTasks[slot].ran(startstop.start, startstop.stop, report.nbytes);
    }
  }

  private streamRecord(slot: number, ws: WorkerState, report: TaskFinishedMessage): TaskStreamRecord {
    return {
      key: this.names[slot],
      prefix: this.prefixes[slot],
      worker: ws.address,
      thread: report.thread,
      status: "OK",
      nbytes: report.nbytes,
      type: report.type,
      startstops: report.startstops,
      span: this.spanOf(slot),
    };
  }

  private heartbeat(ws: WorkerState, message: HeartbeatMessage, now: number): void {
    const { metrics } = message;
    ws.metrics = metrics;
    ws.lastHeartbeat = now;
    ws.heartbeats++;
    ws.cpu = metrics.cpu;
    // The worker's own estimate (from round trips) beats one taken from a single message.
    ws.clockOffset = message.clockOffset ?? message.now - now;
    ws.memory.update(metrics, now);
    ws.transferredIn += metrics.transfer.incomingBytes;
    ws.transferredOut += metrics.transfer.outgoingBytes;
    this.bandwidth.update(ws.address, metrics.bandwidth, this.workers.size);
    this.addDigests(metrics.digests);
    this.system.add(now, ws.address, metrics.cpu, metrics.memory);
    this.reply(ws, now);
  }

  /** Fine performance metrics from a worker (a heartbeat's, or a task's own). */
  private addDigests(digests: readonly MetricRecord[]): void {
    if (!this.metrics) return;
    this.cumulativeMetrics.add(digests);
    this.spans.addMetrics(digests);
  }

  /** Dask's heartbeat interval: 0.5 s for up to 10 workers, 1 s below 50, 2 s below 200. */
  heartbeatInterval(): number {
    const n = this.workers.size;
    return n <= 10 ? 0.5 : n < 50 ? 1 : n < 200 ? 2 : n / 200 + 1;
  }

  private reply(ws: WorkerState, now: number): void {
    const heartbeatInterval = ws.hurried ? HURRIED_HEARTBEAT_SECONDS : this.heartbeatInterval();
    ws.hurried = false;
    this.outboxOf(ws).push({ op: "heartbeat-reply", time: now, heartbeatInterval });
  }
}

const EMPTY_WORKERS: readonly WorkerState[] = [];
const NO_ADDRESSES: readonly WorkerAddress[] = [];
