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
//
// Four layers, each a file read top to bottom and each extending the one before: the task table
// (./task-table: slots, columns, counts, holders, listeners' notices), placement (./placement:
// decide-worker, worker restrictions, root-ish tasks and their queue, sending ahead,
// instructions), work stealing (./stealing: Dask's WorkStealing) and, here, the events and
// transitions.

import type { MetricRecord, TaskStreamRecord } from "../../../protocol/records";
import { now as machineNow } from "../../clock";
import type { SpanPath } from "../../metrics/spans";
import { SPAN_STATES, type SpanTasks, SpansState } from "../../metrics/spans-state";
import type {
  FromWorker,
  HeartbeatMessage,
  RegisterMessage,
  TaskErredMessage,
  TaskFinishedMessage,
  WorkerAddress,
} from "../messages";
import { CumulativeMetrics, SystemHistory } from "./heartbeats";
import type { TaskFailure, TaskListener } from "./listeners";
import { WorkStealing } from "./stealing";
import {
  EMPTY,
  ERRED,
  type GraphSubmission,
  MEMORY,
  NO_WORKER,
  PROCESSING,
  QUEUED,
  RELEASED,
  SUBMISSION_SPAN,
  type SchedulerOptions,
  WAITING,
} from "./task-table";
import { keyStrOfId } from "../../graph/keys";
import { TaskStreamRing } from "./task-stream";
import { WorkerState } from "./workers";

export type { TaskFailure, TaskListener, TransitionObserver } from "./listeners";
export {
  type GraphSubmission,
  type SchedulerOptions,
  type TaskStateName,
  type WorkerRestriction,
  staticOrderOf,
  TASK_STATE_NAMES,
  RELEASED,
  WAITING,
  QUEUED,
  PROCESSING,
  MEMORY,
  ERRED,
  FORGOTTEN,
  NO_WORKER,
} from "./task-table";

/** The span of every task when metrics are off (it counts nothing). */
const UNTRACKED_SPAN: SpanTasks = {
  id: "default",
  counts: new Float64Array(SPAN_STATES.length),
  ran() {},
};
/** The heartbeat interval a hurried worker is told: its next heartbeat goes out at once. */
const HURRIED_HEARTBEAT_SECONDS = 0.001;

export class ClusterState extends WorkStealing {
  readonly allowedFailures: number;
  readonly taskStream: TaskStreamRing;
  /** The cluster's CPU and memory over time, from heartbeats. */
  readonly system = new SystemHistory();
  readonly cumulativeMetrics = new CumulativeMetrics();
  /** Dask's spans extension: spans, their tasks' counts and times, their metrics, the cluster's threads over time. */
  readonly spans = new SpansState();
  private generation = 0;
  /** The worker an erred task failed on: told to free it when the task is forgotten (Dask's erred_on). */
  private readonly erredOn = new Map<number, WorkerState>();

  constructor(options: SchedulerOptions) {
    super(options);
    this.allowedFailures = options.allowedFailures ?? 3;
    if (!(Number.isInteger(this.allowedFailures) && this.allowedFailures >= 0)) {
      throw new RangeError(`allowedFailures must be a whole number ≥ 0, got ${this.allowedFailures}`);
    }
    this.taskStream = new TaskStreamRing(options.taskStreamLength);
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
    if (graph.restriction !== undefined && this.placement === "queue") {
      throw new Error("Worker restrictions (workers, allowOtherWorkers) need a cluster whose scheduler places tasks, such as LocalCluster: Redis workers take any task from a shared queue");
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
      if (graph.restriction !== undefined) this.restrictions.set(slot, graph.restriction);
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
    this.unwantAll([slot]);
  }

  /**
   * Drops one hold on each of `slots` (a computation's requested keys) in one event: as many
   * `unwant` calls in this order would, without an event and a round of notices per key.
   */
  unwantAll(slots: readonly number[]): void {
    // The work list is taken from its end: the first slot's release (and what it cancels) goes first.
    const work: number[] = [];
    for (let i = slots.length - 1; i >= 0; i--) {
      const slot = slots[i];
      if (this.wants[slot] > 0 && --this.wants[slot] === 0) work.push(slot);
    }
    if (work.length > 0) this.event(() => this.releaseUnneeded(work));
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
      messages = messages.filter((message) => message.op === "task-finished" || message.op === "task-erred" || message.op === "missing-data" || message.op === "reschedule");
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
        case "reschedule":
          if (this.placement === "queue") this.reschedule(message.key);
          break;
        case "add-keys":
          for (const key of message.keys) this.addReplica(ws, key);
          break;
        case "release-worker-data":
          for (const key of message.keys) this.dropReplica(ws, key);
          break;
        case "steal-response":
          this.stealResponse(ws, message.key, message.state, message.stimulusId);
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

  // ---- Transitions -----------------------------------------------------------------------------

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

  protected placeAgain(slot: number, ws: WorkerState): void {
    this.unassign(slot, ws);
    this.setState(slot, WAITING);
    this.recountInputs(slot);
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
    this.setState(slot, MEMORY, ws, report);
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
      key: keyStrOfId(this.keys[slot], this.names[slot]),
      prefix: this.prefixes[slot],
      worker: ws.address,
      thread: report.thread,
      status: "error",
      nbytes: 0,
      type: "",
      startstops: report.startstops,
      span: this.spanOf(slot),
    });
    this.fail(slot, { kind: "error", key: this.keys[slot], name: this.names[slot], error: report.error }, ws, report);
  }

  /** `root` fails, and every dependent still to run fails with it. */
  private fail(root: number, failure: TaskFailure, worker?: WorkerState, report?: TaskErredMessage): void {
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
          // A dependent sent ahead: its worker must not run it (the root's worker knows it failed,
          // and keeps the error until the task is forgotten, as Dask's erred_on).
          if (slot !== root) this.freeOn(ws, this.keys[slot]);
          else this.erredOn.set(slot, ws);
        } else {
          this.inFlight--;
          if (slot !== root) this.forgetQueued(this.keys[slot]);
        }
      }
      if (slot === root) this.setState(slot, ERRED, worker, report);
      else this.setState(slot, ERRED);
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
    if (this.placement === "queue") this.forgetQueued(this.keys[slot]);
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
        this.forgetQueued(this.keys[slot]);
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
    if (task !== undefined) this.reschedule(task);
  }

  /** Queue placement: `task`'s job ended without an outcome; it waits for its inputs and is queued again. */
  private reschedule(task: string): void {
    const slot = this.slotByKey.get(task);
    if (slot === undefined || this.state[slot] !== PROCESSING) return;
    this.inFlight--;
    this.setState(slot, WAITING);
    this.recountInputs(slot);
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
  /** What a finished task teaches about its prefix: mean duration and result size. */
  private learn(slot: number, report: TaskFinishedMessage): void {
    let duration = -1;
    for (const startstop of report.startstops) if (startstop.action === "compute") duration = startstop.stop - startstop.start;
    let stats = this.prefixStats.get(this.prefixes[slot]);
    if (stats === undefined) this.prefixStats.set(this.prefixes[slot], (stats = { duration: -1, nbytes: -1 }));
    if (duration >= 0) stats.duration = stats.duration < 0 ? duration : 0.5 * stats.duration + 0.5 * duration;
    stats.nbytes = stats.nbytes < 0 ? report.nbytes : 0.5 * stats.nbytes + 0.5 * report.nbytes;
  }

  /** A forgotten erred task: the worker it failed on kept its error until now. */
  protected override free(slot: number): void {
    super.free(slot);
    const erredOn = this.erredOn.get(slot);
    if (erredOn === undefined) return;
    this.erredOn.delete(slot);
    if (this.workers.get(erredOn.address) === erredOn) this.freeOn(erredOn, this.keys[slot]);
  }

  /** The span learns when its task ran (its compute phase) and how big its result is. */
  private spanRan(slot: number, report: TaskFinishedMessage): void {
    this.totalsOf[slot].addPhases(report.startstops);
    for (const startstop of report.startstops) {
      if (startstop.action === "compute") this.spanTasks[slot].ran(startstop.start, startstop.stop, report.nbytes);
    }
  }

  /** A finished task's record; its key is Python's str(key), as Dask's TaskStreamPlugin gives it (`record.key === future.key`). */
  private streamRecord(slot: number, ws: WorkerState, report: TaskFinishedMessage): TaskStreamRecord {
    return {
      key: keyStrOfId(this.keys[slot], this.names[slot]),
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
