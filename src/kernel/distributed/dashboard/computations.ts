// Cluster computations on the dashboard's Progress panel: every graph submitted to the scheduler
// (a `get`, `client.compute`, `submit`, `map`) is one computation, its tasks counted by key prefix.
// Nothing runs per task: finished tasks are counted from the scheduler's task-stream ring when a
// snapshot is built, and a computation ends when its requested keys are in memory, when one fails,
// or when nothing it asked for is still active (released: cancelled).

import { randomUUID } from "node:crypto";
import type { ProgressState } from "../../../protocol";
import { type ComputationProgress, DASHBOARD_LIMITS } from "../../../protocol/dashboard";
import { now } from "../../clock";
import type { Scheduler } from "../scheduler/scheduler";
import type { GraphSubmission, TaskListener, TaskStateName } from "../scheduler/state";

const ACTIVE: ReadonlySet<TaskStateName> = new Set(["waiting", "queued", "processing", "no-worker"]);
/** A computation whose count has not moved for this long is checked for requested keys still active. */
const STALL_CHECK_SECONDS = 2;
/** Prefixes named in a computation's label before "+ N more". */
const LABEL_PREFIXES = 3;

interface Group {
  readonly name: string;
  done: number;
  total: number;
}

/** One submitted graph as the Progress panel follows it. */
class ClusterComputation implements TaskListener {
  readonly id = randomUUID();
  readonly started = now();
  ended: number | undefined;
  outcome: ProgressState = "running";
  done = 0;
  /** `done` when the last stall check ran, and when that was. */
  private checkedDone = 0;
  private checkedAt = now();

  constructor(
    private readonly scheduler: Scheduler,
    readonly label: string,
    readonly total: number,
    readonly groups: ReadonlyMap<string, Group>,
    /** Task-stream records from this position on may be this computation's. */
    readonly streamStart: number,
    /** Requested keys not in memory yet: slot → key (a slot is reused once its key is forgotten). */
    private readonly pending: Map<number, string>,
    private readonly onEnd: (computation: ClusterComputation) => void,
  ) {
    for (const slot of pending.keys()) scheduler.state.addListener(slot, this);
  }

  /** Counts one finished task of `prefix`, if this computation still expects one. */
  count(prefix: string): boolean {
    const group = this.groups.get(prefix);
    if (group === undefined || group.done >= group.total) return false;
    group.done++;
    this.done++;
    return true;
  }

  /** Counts up to `n` finished tasks whose prefixes are unknown; returns how many it took. */
  countAny(n: number): number {
    let taken = 0;
    for (const group of this.groups.values()) {
      const room = Math.min(n - taken, group.total - group.done);
      group.done += room;
      taken += room;
    }
    this.done += taken;
    return taken;
  }

  finished(slot: number): void {
    if (!this.pending.delete(slot)) return;
    this.scheduler.state.removeListener(slot, this);
    if (this.pending.size === 0) this.end("finished");
  }

  erred(): void {
    this.end("errored");
  }

  /** Ends it if nothing it asked for is active any more: its keys were released before they were computed. */
  checkStalled(idle: boolean): void {
    if (this.outcome !== "running") return;
    const time = now();
    if (!idle) {
      if (this.done !== this.checkedDone) {
        this.checkedDone = this.done;
        this.checkedAt = time;
        return;
      }
      if (time - this.checkedAt < STALL_CHECK_SECONDS) return;
      this.checkedAt = time;
      const state = this.scheduler.state;
      for (const [slot, key] of this.pending) if (state.keyOf(slot) === key && ACTIVE.has(state.stateOf(slot))) return;
    }
    // Requested keys that were all in memory already (nothing pending) make a finished computation.
    this.end(this.pending.size === 0 ? "finished" : "cancelled");
  }

  end(outcome: ProgressState): void {
    if (this.outcome !== "running") return;
    this.outcome = outcome;
    this.ended = now();
    if (outcome === "finished") {
      this.done = this.total;
      for (const group of this.groups.values()) group.done = group.total;
    }
    const state = this.scheduler.state;
    for (const [slot, key] of this.pending) if (state.keyOf(slot) === key) state.removeListener(slot, this);
    this.pending.clear();
    this.onEnd(this);
  }

  progress(): ComputationProgress {
    const groups = [...this.groups.values()]
      .sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, DASHBOARD_LIMITS.progressGroups)
      .map(({ name, done, total }) => ({ name, done, total }));
    return {
      id: this.id,
      label: this.label,
      started: this.started,
      done: this.done,
      total: this.total,
      elapsed: (this.ended ?? now()) - this.started,
      state: this.outcome,
      groups,
    };
  }
}

/** The computations of one scheduler: those running, and the few that ended last. */
export class ClusterComputations {
  /** Oldest first: a finished task whose prefix several expect counts for the oldest. */
  private readonly running: ClusterComputation[] = [];
  /** Newest last, at most DASHBOARD_LIMITS.computations. */
  private readonly recent: ClusterComputation[] = [];
  /** The task-stream position counted up to. */
  private streamIndex: number;

  constructor(
    private readonly scheduler: Scheduler,
    /** Called when a computation ends (a snapshot should say so). */
    private readonly onEnd: () => void,
  ) {
    this.streamIndex = scheduler.taskStream.index;
  }

  get isRunning(): boolean {
    return this.running.length > 0;
  }

  /** A graph reached the scheduler: its new, active tasks make a computation (none: nothing to show). */
  submitted(graph: GraphSubmission, slots: Int32Array): void {
    const state = this.scheduler.state;
    const groups = new Map<string, Group>();
    let total = 0;
    for (let i = 0; i < slots.length; i++) {
      // Futures it refers to, results already in memory and entries nobody needs are not its work.
      if (graph.tasks[i] === undefined || !ACTIVE.has(state.stateOf(slots[i]))) continue;
      const name = graph.prefixes[i];
      let group = groups.get(name);
      if (group === undefined) groups.set(name, (group = { name, done: 0, total: 0 }));
      group.total++;
      total++;
    }
    if (total === 0) return;
    const pending = new Map<number, string>();
    const requested = new Set<string>();
    for (const i of graph.wanted) {
      requested.add(graph.prefixes[i]);
      const slot = slots[i];
      if (ACTIVE.has(state.stateOf(slot))) pending.set(slot, state.keyOf(slot));
    }
    const names = [...requested];
    const label = names.length > LABEL_PREFIXES ? `${names.slice(0, LABEL_PREFIXES).join(", ")} + ${names.length - LABEL_PREFIXES} more` : names.join(", ");
    const computation = new ClusterComputation(this.scheduler, label, total, groups, this.scheduler.taskStream.index, pending, (ended) => this.ended(ended));
    this.running.push(computation);
  }

  /** Running computations first (newest first), then the last ended; counts brought up to date. */
  progress(): ComputationProgress[] {
    this.countFinishedTasks();
    const counts = this.scheduler.taskCounts();
    const idle = (counts.waiting ?? 0) + (counts.queued ?? 0) + (counts.processing ?? 0) === 0;
    for (const computation of [...this.running]) computation.checkStalled(idle);
    const shown = [...this.running.slice().reverse(), ...this.recent.slice().reverse()].slice(0, DASHBOARD_LIMITS.computations);
    return shown.map((computation) => computation.progress());
  }

  /** Stops following every running computation (the dashboard stopped listening). */
  clear(): void {
    for (const computation of [...this.running]) computation.end("cancelled");
    this.recent.length = 0;
  }

  /** Task-stream records since the last look, each counted for the oldest computation expecting its prefix. */
  private countFinishedTasks(): void {
    const ring = this.scheduler.taskStream;
    const index = ring.index;
    if (index < this.streamIndex) this.streamIndex = 0; // the ring was cleared
    if (index === this.streamIndex) return;
    const { first, prefixes } = ring.prefixesSince(this.streamIndex);
    // Records that left the ring before anyone looked: counted where there is room, oldest first.
    let missed = first - this.streamIndex;
    for (const computation of this.running) {
      if (missed === 0 || computation.streamStart > first) break;
      missed -= computation.countAny(missed);
    }
    for (let i = 0; i < prefixes.length; i++) this.countFor(prefixes[i], first + i);
    this.streamIndex = index;
  }

  private countFor(prefix: string, position: number): void {
    for (const computation of this.running) {
      if (computation.streamStart > position || computation.count(prefix)) return;
    }
  }

  private ended(computation: ClusterComputation): void {
    const at = this.running.indexOf(computation);
    if (at >= 0) this.running.splice(at, 1);
    this.recent.push(computation);
    if (this.recent.length > DASHBOARD_LIMITS.computations) this.recent.shift();
    this.onEnd();
  }
}
