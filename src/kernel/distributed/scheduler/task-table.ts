// The scheduler state's task table: every task in a slot of growable columns (typed arrays
// indexed by slot), so per-task work is a few array writes and a million-task graph costs tens
// of bytes per task. Also what a slot's holders are, the per-state counts, and the listeners'
// notices, delivered once each event is carried out. The layers above add placement
// (./placement: which worker runs a ready task), work stealing (./stealing) and the transitions
// (./state: events in, instructions out).

import type { TaskStateCounts } from "../../../protocol/records";
import { SPAN_STATES, type SpanTasks } from "../../metrics/spans-state";
import type { SpanPath } from "../../metrics/spans";
import type { FnSpec } from "../../execution/wire";
import type { TaskErredMessage, TaskFinishedMessage, WireTask, WorkerAddress } from "../messages";
import { type NumberColumn, grownColumn } from "./columns";
import { type TaskFailure, type TaskListener, TaskListeners, type TransitionObserver } from "./listeners";
import { PrefixLedger, type PrefixTotals } from "./prefixes";
import type { Placement } from "./transport";
import type { WorkerState } from "./workers";

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
/** The state names by number (PrefixTotals.states is indexed by them). */
export const TASK_STATE_NAMES: readonly TaskStateName[] = STATE_NAMES;
/** Each state's index in a span's counts (Dask's TaskGroup states): no-worker tasks are queued there. */
const SPAN_STATE = Uint8Array.from(STATE_NAMES, (name) => SPAN_STATES.indexOf(name === "no-worker" ? "queued" : name));

/**
 * A graph to add, in columns: entry i is a task (`tasks[i]` set) or a key the scheduler must
 * already know (a Future's key the graph refers to; `tasks[i]` undefined).
 */
export interface GraphSubmission {
  /** Key ids (graph/keys.ts `keyId`). */
  readonly keys: readonly string[];
  /** Dask's repr of each key (graph/keys.ts `formatKey`), for records and messages. */
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
  /** The id of the client that submitted it (scheduler plugins' updateGraph hears it). */
  readonly client?: string;
  /** Only when a collection tagged some tasks (`spanOfSpec`): entry i's own span where it has one. */
  readonly taskSpans?: readonly (SpanPath | undefined)[];
  /** Dask's worker restrictions (`workers=`, `allow_other_workers=`), for every new task of the submission. */
  readonly restriction?: WorkerRestriction;
}

/**
 * Where a task may run (Dask's worker and host restrictions): on a worker whose address, name or
 * host is in `workers`. Strict: while no such worker is running the task waits (no-worker), as in
 * Dask. `allowOtherWorkers` (Dask's loose restrictions): other workers are used when none of
 * those is running, and work stealing may move the task anywhere.
 */
export interface WorkerRestriction {
  readonly workers: ReadonlySet<string>;
  readonly allowOtherWorkers: boolean;
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
  /** Dask's `work-stealing`: move tasks queued on busy workers to idle ones (locality placement only; default true). */
  readonly workStealing?: boolean;
  /** Dask's `default-task-durations`: seconds a task of a prefix is expected to take before one has finished. */
  readonly defaultTaskDurations?: Readonly<Record<string, number>>;
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
export const SUBMISSION_SPAN = 2 ** 31;

/** The static order within its submission of a task whose priority (ComputeTaskMessage.priority) is `priority`. */
export function staticOrderOf(priority: number): number {
  return priority % SUBMISSION_SPAN;
}

interface GroupStats {
  /** Live tasks in the group. */
  size: number;
  /** Other groups its tasks depend on. */
  readonly dependencies: Set<string>;
  /** The span of the group's first task: every task of the group is accounted there (Dask's TaskGroup.span_id). */
  readonly span: SpanTasks;
}

/** Shared by every task without dependencies or dependents. */
export const EMPTY: readonly number[] = [];
/** No workers: shared by lookups that find none. */
export const NO_ADDRESSES: readonly WorkerAddress[] = [];

export abstract class TaskTable {
  readonly metrics: boolean;
  /** Each prefix's transitions and phase seconds since the start (Prometheus reads them). */
  readonly prefixTotals = new PrefixLedger(STATE_NAMES.length);

  // ---- The task table: columns indexed by slot -------------------------------------------------
  // Typed-array columns are typed as written: inferred, TypeScript 5.9 writes `Uint8Array<ArrayBuffer>`
  // into the .d.ts, which tslab's TypeScript 5.0 cannot read.
  private capacity = 0;
  protected state: Uint8Array = new Uint8Array(0);
  /** Inputs not in memory yet. */
  protected waitingOn: Int32Array = new Int32Array(0);
  /** Dependents waiting, queued or processing: they will need this result. */
  protected pendingDependents: Int32Array = new Int32Array(0);
  /** Holds by clients (computations, Futures). */
  protected wants: Int32Array = new Int32Array(0);
  protected priority: Float64Array = new Float64Array(0);
  protected nbytes: Float64Array = new Float64Array(0);
  /** Workers that died while this task could run on them. */
  protected suspicious: Uint8Array = new Uint8Array(0);
  /** Sent ahead and still waiting on its worker for inputs. */
  protected waitingLocally: Uint8Array = new Uint8Array(0);
  protected readonly keys: string[] = [];
  protected readonly names: string[] = [];
  protected readonly prefixes: string[] = [];
  protected readonly groups: string[] = [];
  /** Each task's span (its group's). */
  protected readonly spanTasks: SpanTasks[] = [];
  /** Each task's prefix totals. */
  protected readonly totalsOf: PrefixTotals[] = [];
  protected readonly tasks: (WireTask | undefined)[] = [];
  protected readonly functionIds: (readonly number[])[] = [];
  protected readonly dependencies: (readonly number[])[] = [];
  /** Shared EMPTY until a first dependent arrives (most tasks have one or none). */
  protected readonly dependents: (readonly number[])[] = [];
  protected readonly processingOn: (WorkerState | undefined)[] = [];
  /** The first worker holding the result; further holders in `replicas`. */
  protected readonly holder: (WorkerState | undefined)[] = [];
  protected readonly replicas = new Map<number, WorkerState[]>();
  protected readonly failures = new Map<number, TaskFailure>();
  protected readonly slotByKey = new Map<string, number>();
  private readonly freeSlots: number[] = [];
  /** Slots freed by the event under way: reused only after its listeners have been told about them. */
  private freedSlots: number[] = [];
  protected readonly listeners: TaskListeners;
  /** Events under way (one may cause another: a worker registering again leaves first). */
  private eventDepth = 0;
  private readonly counts = new Int32Array(STATE_NAMES.length);

  protected readonly groupStats = new Map<string, GroupStats>();
  /** The few restricted tasks' restrictions (most tasks may run anywhere). */
  protected readonly restrictions = new Map<number, WorkerRestriction>();

  constructor(options: SchedulerOptions) {
    this.metrics = options.metrics ?? true;
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
  /** Dask's priority tuple: [submission, static order within it]. */
  priorityOf(slot: number): [number, number] {
    const priority = this.priority[slot];
    return [Math.floor(priority / SUBMISSION_SPAN), priority % SUBMISSION_SPAN];
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
  /** Task groups with live tasks (Dask's task_groups). */
  get taskGroupCount(): number {
    return this.groupStats.size;
  }
  /** Result bytes in memory by prefix, each result once (Dask's TaskPrefix nbytes_total). */
  memoryByPrefix(): Map<string, number> {
    const bytes = new Map<string, number>();
    for (const slot of this.slotByKey.values()) {
      if (this.state[slot] === MEMORY) bytes.set(this.prefixes[slot], (bytes.get(this.prefixes[slot]) ?? 0) + this.nbytes[slot]);
    }
    return bytes;
  }
  /** Live tasks in each state (no-worker apart, forgotten left out: its count is of free slots). */
  tasksByState(): Map<TaskStateName, number> {
    return new Map(STATE_NAMES.filter((_, state) => state !== FORGOTTEN).map((name) => [name, this.counts[STATE_NAMES.indexOf(name)]]));
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

  /** `observer` hears every task's every state change from now on (scheduler plugins); undefined: nobody. */
  observeTransitions(observer: TransitionObserver | undefined): void {
    this.listeners.observeTransitions(observer);
  }

  /**
   * Runs one event (every public method that changes the state goes through here); once the
   * outermost is done, listeners hear what happened, and only then are freed slots reused.
   */
  protected event<T>(handle: () => T): T {
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

  // ---- Slots -----------------------------------------------------------------------------------

  protected addDependent(slot: number, dependent: number): void {
    const users = this.dependents[slot];
    if (users === EMPTY) this.dependents[slot] = [dependent];
    else (users as number[]).push(dependent);
  }

  protected allocate(key: string, name: string, prefix: string, group: string, spanOf: (entry: number) => SpanTasks, entry: number): number {
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
    this.totalsOf[slot] = this.prefixTotals.of(prefix);
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

  /** `worker` and `report`: the report that caused the change, for those who observe transitions. */
  protected setState(slot: number, state: number, worker?: WorkerState, report?: TaskFinishedMessage | TaskErredMessage): void {
    const from = this.state[slot];
    this.counts[from]--;
    this.counts[state]++;
    this.state[slot] = state;
    this.totalsOf[slot].states[state]++;
    if (this.metrics) {
      const span = this.spanTasks[slot].counts;
      span[SPAN_STATE[from]]--;
      span[SPAN_STATE[state]]++;
    }
    if (this.listeners.observed) this.listeners.transitioned(this.keys[slot], STATE_NAMES[from], STATE_NAMES[state], worker, report);
  }

  protected isNeeded(slot: number): boolean {
    return this.wants[slot] > 0 || this.pendingDependents[slot] > 0;
  }

  protected free(slot: number): void {
    this.setState(slot, FORGOTTEN);
    this.slotByKey.delete(this.keys[slot]);
    const group = this.groupStats.get(this.groups[slot])!;
    if (--group.size === 0) this.groupStats.delete(this.groups[slot]);
    this.tasks[slot] = undefined;
    this.functionIds[slot] = EMPTY;
    this.dependencies[slot] = EMPTY;
    this.failures.delete(slot);
    this.restrictions.delete(slot);
    this.freedSlots.push(slot);
  }

  // ---- Holders ---------------------------------------------------------------------------------


  protected addHolder(slot: number, ws: WorkerState, nbytes: number): void {
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

  protected dropHolder(slot: number, ws: WorkerState): void {
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

  protected addressesOf(slot: number): readonly WorkerAddress[] {
    const more = this.replicas.get(slot);
    if (more === undefined) return this.holder[slot]?.addressList ?? NO_ADDRESSES;
    return [this.holder[slot]!.address, ...more.map((ws) => ws.address)];
  }
}
