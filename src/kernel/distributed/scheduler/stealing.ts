// Work stealing, the layer of the scheduler state over placement (./placement) and under the
// transitions (./state): Dask's WorkStealing (distributed/stealing.py). Placement decides where a
// task goes once, when it is ready; durations are estimates, so a worker may end up with tasks
// queued behind a long one while another sits idle. `balance()` (the driver calls it every
// 100 ms, Dask's work-stealing-interval) moves such tasks, by Dask's rules:
// - thieves are idle workers (fewer tasks than threads, or under half the mean occupancy);
//   victims are saturated workers, else the busiest ones with more tasks than threads;
// - a task's cost level is how long moving its inputs takes against computing it (level 0: no
//   inputs; past level 14 it never moves), cheapest levels first;
// - a task moves when the thief would still finish it sooner: thief occupancy + transfer +
//   compute ≤ victim occupancy − (victim transfer + compute) / 2.
// A move is a handshake, so a task never runs twice: steal-request to the victim, which gives the
// task up only if it has not started it (steal-response "released"); only then is the task sent
// to the thief. Until the answer, the move's occupancy counts on both sides (Dask's in-flight
// occupancy) and the task is not stolen again.

import { TaskPlacement } from "./placement";
import { MEMORY, PROCESSING, type SchedulerOptions } from "./task-table";
import type { WorkerState } from "./workers";

/** Dask's LATENCY: seconds a steal costs besides moving inputs (round trips, sending the task again). */
const STEAL_LATENCY = 0.1;
/** Dask's cost levels 0 … 14 (level 0: tasks without inputs). */
const LEVELS = 15;
/** When no worker is saturated, the busiest this many are the candidate victims (Dask's topk(10, …)). */
const TOP_VICTIMS = 10;
/** A victim's occupancy must pass this (seconds) to be stolen from when it is not saturated. */
const MIN_VICTIM_OCCUPANCY = 0.2;

/** A steal request waiting for the victim's answer (Dask's InFlightInfo). */
interface StealInFlight {
  readonly stimulusId: string;
  readonly victim: WorkerState;
  readonly thief: WorkerState;
  readonly victimDuration: number;
  readonly thiefDuration: number;
}

export abstract class WorkStealing extends TaskPlacement {
  /** Dask's `distributed.scheduler.work-stealing` (locality placement only: queue workers pull their tasks). */
  readonly workStealing: boolean;
  /** Steal requests sent, in all (Dask's WorkStealing.count counts balance rounds; this counts moves asked). */
  stealRequests = 0;
  private readonly steals = new Map<number, StealInFlight>();
  private readonly inFlightOccupancy = new Map<WorkerState, number>();
  private readonly inFlightTasks = new Map<WorkerState, number>();

  constructor(options: SchedulerOptions) {
    super(options);
    this.workStealing = (options.workStealing ?? true) && this.placement === "locality";
  }

  protected isBeingStolen(slot: number): boolean {
    return this.steals.size > 0 && this.steals.has(slot);
  }

  /** Steal requests not answered yet. */
  get stealsInFlight(): number {
    return this.steals.size;
  }

  /**
   * Dask's WorkStealing.balance: sends steal requests for tasks queued on busy workers that an
   * idle worker would finish sooner. Instructions go out with the other messages (takeMessages).
   */
  balance(): void {
    if (this.workStealing) this.event(() => this.balanceWork());
  }

  private balanceWork(): void {
    if (this.workers.size < 2) return;
    let totalOccupancy = 0;
    let totalThreads = 0;
    let anyProcessing = false;
    for (const ws of this.workers.values()) {
      // Recomputed from the prefixes' current estimates (Dask recomputes occupancy from its
      // prefix counts): what was learnt since the tasks were assigned counts now.
      ws.occupancy = this.occupancyOf(ws);
      totalOccupancy += ws.occupancy;
      totalThreads += ws.nthreads;
      if (ws.processing.size > 0) anyProcessing = true;
    }
    if (!anyProcessing || totalThreads === 0) return;
    const meanOccupancy = totalOccupancy / totalThreads;
    const thieves = new Set<WorkerState>();
    for (const ws of this.workers.values()) {
      if (ws.status === "running" && isUnoccupied(ws, ws.occupancy, ws.runnable, meanOccupancy)) thieves.add(ws);
    }
    if (thieves.size === 0 || thieves.size === this.workers.size) return;
    const victims = this.victims(thieves, meanOccupancy);
    if (victims.length === 0) return;
    const levelsOf = new Map<WorkerState, number[][]>();
    for (let level = 0; level < LEVELS && thieves.size > 0; level++) {
      for (const victim of victims) {
        if (thieves.size === 0) break;
        let levels = levelsOf.get(victim);
        if (levels === undefined) levelsOf.set(victim, (levels = this.stealable(victim)));
        for (const slot of levels[level]) {
          if (thieves.size === 0) break;
          if (this.steals.has(slot) || this.processingOn[slot] !== victim) continue;
          const thief = this.thiefFor(slot, thieves);
          if (thief === undefined) continue;
          const compute = this.estimatedDuration(slot);
          const thiefCost = this.commCost(slot, thief);
          const victimCost = this.commCost(slot, victim);
          if (this.combinedOccupancy(thief) + thiefCost + compute > this.combinedOccupancy(victim) - (victimCost + compute) / 2) continue;
          this.requestSteal(slot, victim, thief, compute + victimCost, compute + thiefCost);
          if (!isUnoccupied(thief, this.combinedOccupancy(thief), thief.runnable + (this.inFlightTasks.get(thief) ?? 0), meanOccupancy)) {
            thieves.delete(thief);
          }
        }
      }
    }
  }

  /** Saturated workers (Dask's check_idle_saturated), else the busiest with more tasks than threads; busiest first. */
  private victims(thieves: ReadonlySet<WorkerState>, meanOccupancy: number): WorkerState[] {
    const saturated: WorkerState[] = [];
    for (const ws of this.workers.values()) {
      const tasks = ws.runnable;
      if (ws.status !== "running" || thieves.has(ws) || tasks <= ws.nthreads) continue;
      const pending = (ws.occupancy * (tasks - ws.nthreads)) / (tasks * ws.nthreads);
      if (pending > 0.4 && pending > 1.9 * meanOccupancy) saturated.push(ws);
    }
    const byOccupancy = (a: WorkerState, b: WorkerState): number => this.combinedOccupancy(b) - this.combinedOccupancy(a);
    if (saturated.length > 0) return saturated.sort(byOccupancy);
    return [...this.workers.values()]
      .sort(byOccupancy)
      .slice(0, TOP_VICTIMS)
      .filter((ws) => this.combinedOccupancy(ws) > MIN_VICTIM_OCCUPANCY && ws.runnable + (this.inFlightTasks.get(ws) ?? 0) > ws.nthreads && !thieves.has(ws));
  }

  /**
   * The victim's tasks by cost level (Dask's stealable sets), each level latest in the worker's
   * order first: those are the least likely to have started. Tasks sent ahead (waiting there for
   * inputs being computed) and tasks whose dependents wait there for them stay.
   */
  private stealable(victim: WorkerState): number[][] {
    const levels = Array.from({ length: LEVELS }, () => [] as number[]);
    for (const slot of victim.processing) {
      if (this.waitingLocally[slot] === 1 || this.hasDependentWaitingOn(slot, victim)) continue;
      const level = this.stealLevel(slot);
      if (level >= 0) levels[level].push(slot);
    }
    for (const level of levels) level.sort((a, b) => this.priority[b] - this.priority[a]);
    return levels;
  }

  private hasDependentWaitingOn(slot: number, ws: WorkerState): boolean {
    for (const dependent of this.dependents[slot]) if (this.processingOn[dependent] === ws) return true;
    return false;
  }

  /** Dask's steal_time_ratio: the task's cost level, or -1 when it is never stolen. */
  protected stealLevel(slot: number): number {
    const deps = this.dependencies[slot];
    if (deps.length === 0) return 0;
    const compute = this.estimatedDuration(slot);
    if (!(compute > 0)) return -1;
    let nbytes = 0;
    for (const dep of deps) nbytes += this.nbytes[dep];
    const costMultiplier = (nbytes / this.bandwidth.total + STEAL_LATENCY) / compute;
    const level = Math.round(Math.log2(costMultiplier) + 6);
    if (level >= LEVELS) return -1;
    return Math.max(1, level);
  }

  /** Dask's _get_thief: the thief where the task would start soonest, among those its restriction allows. */
  private thiefFor(slot: number, thieves: ReadonlySet<WorkerState>): WorkerState | undefined {
    let candidates: Iterable<WorkerState> = thieves;
    const restriction = this.restrictions.get(slot);
    if (restriction !== undefined) {
      const allowed = this.allowedWorkers(slot);
      const valid = allowed === undefined ? [] : [...thieves].filter((ws) => allowed.has(ws));
      if (valid.length > 0) candidates = valid;
      else if (!restriction.allowOtherWorkers) return undefined;
    }
    let best: WorkerState | undefined;
    let bestStart = Infinity;
    for (const ws of candidates) {
      const start = this.combinedOccupancy(ws) / ws.nthreads + this.commCost(slot, ws);
      if (best === undefined || start < bestStart || (start === bestStart && ws.nbytes < best.nbytes)) {
        best = ws;
        bestStart = start;
      }
    }
    return best;
  }

  /** Dask's get_comm_cost: seconds to bring the inputs `ws` lacks. */
  private commCost(slot: number, ws: WorkerState): number {
    return this.transferBytes(slot, ws) / this.bandwidth.total;
  }

  /** Dask's occupancy: the estimated compute of its tasks, plus moving the inputs they need and it lacks (each once). */
  private occupancyOf(ws: WorkerState): number {
    let occupancy = 0;
    let needed: Set<number> | undefined;
    for (const slot of ws.processing) {
      occupancy += this.estimatedDuration(slot);
      for (const dep of this.dependencies[slot]) if (this.state[dep] === MEMORY && !ws.hasWhat.has(dep)) (needed ??= new Set()).add(dep);
    }
    if (needed !== undefined) for (const dep of needed) occupancy += this.nbytes[dep] / this.bandwidth.total;
    return occupancy;
  }

  private combinedOccupancy(ws: WorkerState): number {
    return ws.occupancy + (this.inFlightOccupancy.get(ws) ?? 0);
  }

  /** Dask's move_task_request: the victim is asked to give the task up. */
  private requestSteal(slot: number, victim: WorkerState, thief: WorkerState, victimDuration: number, thiefDuration: number): void {
    const stimulusId = `steal-${this.stealRequests++}`;
    this.steals.set(slot, { stimulusId, victim, thief, victimDuration, thiefDuration });
    this.adjustInFlight(victim, -victimDuration, -1);
    this.adjustInFlight(thief, thiefDuration, 1);
    this.outboxOf(victim).push({ op: "steal-request", key: this.keys[slot], stimulusId });
  }

  private adjustInFlight(ws: WorkerState, occupancy: number, tasks: number): void {
    this.inFlightOccupancy.set(ws, (this.inFlightOccupancy.get(ws) ?? 0) + occupancy);
    this.inFlightTasks.set(ws, (this.inFlightTasks.get(ws) ?? 0) + tasks);
  }

  /** The steal request for `slot` is over (answered, or the task left the victim). */
  private endSteal(slot: number): StealInFlight | undefined {
    const steal = this.steals.get(slot);
    if (steal === undefined) return undefined;
    this.steals.delete(slot);
    if (this.steals.size === 0) {
      this.inFlightOccupancy.clear();
      this.inFlightTasks.clear();
    } else {
      this.adjustInFlight(steal.victim, steal.victimDuration, 1);
      this.adjustInFlight(steal.thief, -steal.thiefDuration, -1);
    }
    return steal;
  }

  protected override unassign(slot: number, ws: WorkerState): void {
    super.unassign(slot, ws);
    if (this.steals.size > 0) this.endSteal(slot);
  }

  /**
   * Dask's move_task_confirm: the victim's answer. "released": it gave the task up, which goes to
   * the thief (or is placed again if the thief left meanwhile); null: it did not know the task,
   * which is placed again; any other state: it had started or finished it, and it stays.
   * Answers to requests that are over (the task finished, failed or moved since) are ignored.
   */
  protected stealResponse(victim: WorkerState, key: string, state: string | null, stimulusId: string): void {
    const slot = this.slotOf(key);
    if (slot === undefined || this.steals.get(slot)?.stimulusId !== stimulusId) return;
    const steal = this.endSteal(slot)!;
    if (this.state[slot] !== PROCESSING || this.processingOn[slot] !== victim) return;
    if (state !== "released" && state !== null) return;
    const { thief } = steal;
    if (state === null || this.workers.get(thief.address) !== thief || thief.status !== "running") {
      this.placeAgain(slot, victim);
      return;
    }
    this.unassign(slot, victim);
    this.sendTask(slot, thief, false);
  }

  /** Takes the task off `ws` and decides again where it runs (Dask's _reschedule). */
  protected abstract placeAgain(slot: number, ws: WorkerState): void;
}

/** Dask's is_unoccupied: fewer tasks than threads, or under half the cluster's mean occupancy per thread. */
function isUnoccupied(ws: WorkerState, occupancy: number, tasks: number, meanOccupancy: number): boolean {
  return tasks < ws.nthreads || occupancy < (ws.nthreads * meanOccupancy) / 2;
}
