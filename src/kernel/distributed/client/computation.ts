// One `get` on a cluster: the graph goes to the scheduler whole, callbacks hear about its tasks
// as the scheduler sends them and as their results land in worker memory (through a local view of
// the computation's state, so diagnostics read it as they do on the local schedulers), and the
// requested results are gathered straight from the workers holding them at the end.

import type { TaskStreamRecord } from "../../../protocol/records";
import type { Callback, TaskInfo } from "../../callbacks/callback";
import type { Graph } from "../../graph/graph";
import type { Key } from "../../graph/keys";
import { type Plan, type Request, buildPlan } from "../../graph/plan";
import type { TaskTiming } from "../../callbacks/state";
import { AbortError } from "../../scheduler/loop";
import { SchedulerState } from "../../scheduler/state";
import type { TaskFinishedMessage } from "../messages";
import type { Scheduler } from "../scheduler/scheduler";
import type { TaskFailure, TaskListener } from "../scheduler/state";
import type { WorkerState } from "../scheduler/workers";
import { failureError } from "./errors";
import { ClusterResult } from "./results";
import { type PlacementOptions, restrictionOf } from "./placement-options";
import { planSpans, planSubmission } from "./submission";

export interface GraphRequest extends PlacementOptions {
  readonly graph: Graph;
  readonly keys: Key | readonly unknown[];
  readonly callbacks: readonly Callback[];
  readonly signal?: AbortSignal;
}

/** Computes `keys` of `graph` on the cluster; the result is shaped like `keys`, as with `get`. */
export async function computeGraph(scheduler: Scheduler, request: GraphRequest, client?: string): Promise<unknown> {
  const { graph, callbacks, signal } = request;
  const restriction = restrictionOf("get", request);
  const started: Callback[] = [];
  let computation: Computation | undefined;
  let succeeded = false;
  let failure: unknown;
  const release = scheduler.hold();
  try {
    if (signal?.aborted) throw new AbortError(signal.reason);
    for (const cb of callbacks) {
      cb.start?.(graph);
      started.push(cb);
    }
    let plan = buildPlan(graph, request.keys);
    let keyIds = plan.ids;
    // Keys the cluster already holds are taken as they are (Dask: a key names its value), and what
    // only they needed is not recomputed.
    const held = heldResults(scheduler, plan, keyIds);
    if (held.size > 0) {
      plan = buildPlan(graph, request.keys, { cache: held });
      keyIds = plan.ids;
    }
    const submission = { ...planSubmission(plan, keyIds, scheduler.functions, (node) => held.has(plan.keys[node])), ...planSpans(plan), restriction, client };
    computation = new Computation(scheduler, plan, keyIds, callbacks);
    for (const cb of callbacks) cb.startState?.(graph, computation.view!);
    await computation.run(submission, signal);
    const values = await scheduler.gather(computation.outputKeys());
    succeeded = true;
    return shape(plan.request, keyIds, values);
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    computation?.end();
    release();
    let finishError: unknown;
    let finishFailed = false;
    for (const cb of started) {
      try {
        cb.finish?.(graph, computation?.view ?? new SchedulerState(buildPlan(graph, [])).view, !succeeded, failure);
      } catch (error) {
        if (!finishFailed) [finishError, finishFailed] = [error, true];
      }
    }
    if (finishFailed && succeeded) throw finishError;
  }
}

/** The plan's keys the cluster holds in memory now, as stand-ins for their values. */
function heldResults(scheduler: Scheduler, plan: Plan, keyIds: readonly string[]): Map<Key, ClusterResult> {
  const held = new Map<Key, ClusterResult>();
  const state = scheduler.state;
  if (state.taskCount === 0) return held;
  for (let node = 0; node < keyIds.length; node++) {
    const slot = state.slotOf(keyIds[node]);
    if (slot === undefined || state.stateOf(slot) !== "memory") continue;
    const holder = state.whoHas(slot)[0];
    held.set(plan.keys[node], new ClusterResult(state.nameOf(slot), state.nbytesOf(slot), "", holder?.address ?? "store"));
  }
  return held;
}

function shape(request: Request, keyIds: readonly string[], values: ReadonlyMap<string, unknown>): unknown {
  if (typeof request === "number") return values.get(keyIds[request]);
  return request.map((item) => shape(item, keyIds, values));
}

/** The computation as a listener of the scheduler's tasks; it keeps the callbacks' view of its state. */
class Computation implements TaskListener {
  /** The state callbacks see, when there are callbacks. */
  readonly view: SchedulerState["view"] | undefined;
  private readonly mirror: SchedulerState | undefined;
  private readonly pretasks: readonly Callback[];
  private readonly posttasks: readonly Callback[];
  private slots: Int32Array = new Int32Array(0);
  /** Slot → node, for the tasks callbacks hear about. */
  private readonly nodeOfSlot = new Map<number, number>();
  private readonly outputs: number[] = [];
  private readonly outputDone: Uint8Array;
  private remaining = 0;
  private readonly finishedNodes: Uint8Array;
  private settle: ((error?: unknown) => void) | undefined;
  private ended = false;
  /** A pretask or posttask hook threw: the computation failed, and no hook hears of it again. */
  private hookFailed = false;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly plan: Plan,
    private readonly keyIds: readonly string[],
    callbacks: readonly Callback[],
  ) {
    const n = plan.keys.length;
    this.outputDone = new Uint8Array(n);
    this.finishedNodes = new Uint8Array(n);
    for (let node = 0; node < n; node++) if (plan.isOutput[node] === 1) this.outputs.push(node);
    this.pretasks = callbacks.filter((cb) => cb.pretask !== undefined);
    this.posttasks = callbacks.filter((cb) => cb.posttask !== undefined);
    if (callbacks.length > 0) {
      this.mirror = new SchedulerState(plan);
      this.view = this.mirror.view;
    }
  }

  outputKeys(): string[] {
    return [...new Set(this.outputs.map((node) => this.keyIds[node]))];
  }

  /** Submits the graph; resolves when every requested key is in memory, rejects on a failure or abort. */
  run(submission: Parameters<Scheduler["submit"]>[0], signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => this.settle?.(new AbortError(signal!.reason));
      let stopWatching = (): void => {};
      this.settle = (error) => {
        this.settle = undefined;
        signal?.removeEventListener("abort", onAbort);
        stopWatching();
        if (error === undefined) resolve();
        else reject(error);
      };
      signal?.addEventListener("abort", onAbort);
      stopWatching = this.scheduler.onClose(() => this.settle?.(this.scheduler.closedBy ?? new Error("The cluster closed during the computation")));
      const watchAll = this.mirror !== undefined;
      this.slots = this.scheduler.submit(submission, watchAll ? this : undefined);
      const state = this.scheduler.state;
      if (watchAll) this.slots.forEach((slot, node) => this.nodeOfSlot.set(slot, node));
      else for (const node of this.outputs) this.nodeOfSlot.set(this.slots[node], node);
      if (!watchAll) for (const node of this.outputs) state.addListener(this.slots[node], this);
      // Requested keys that were done (or failed) before this computation asked for them.
      this.remaining = this.outputs.length;
      for (const node of this.outputs) {
        const slot = this.slots[node];
        const failure = state.failureOf(slot);
        if (failure !== undefined) return this.erred(slot, failure);
        if (state.stateOf(slot) === "memory") this.outputFinished(node);
      }
      if (this.remaining === 0) this.settle?.();
    });
  }

  /** Drops the computation's hold on its results and stops listening (on every way out). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    const state = this.scheduler.state;
    for (const [slot] of this.nodeOfSlot) state.removeListener(slot, this);
    if (this.slots.length > 0) this.scheduler.unwantAll(this.outputs.map((node) => this.slots[node]));
  }

  dispatched(slot: number): void {
    const node = this.nodeOfSlot.get(slot);
    if (node === undefined || this.mirror === undefined || this.hookFailed) return;
    this.start(node);
  }

  finished(slot: number, worker: WorkerState | undefined, report: TaskFinishedMessage | undefined, record?: TaskStreamRecord): void {
    const node = this.nodeOfSlot.get(slot);
    if (node === undefined) return;
    if (this.plan.isOutput[node] === 1) this.outputFinished(node);
    const mirror = this.mirror;
    if (mirror === undefined || this.finishedNodes[node] === 1 || this.hookFailed) return;
    // A task already running when this computation asked for it: it was never dispatched for us.
    if (!mirror.isRunning(node) && !this.start(node)) return;
    this.finishedNodes[node] = 1;
    const state = this.scheduler.state;
    const address = worker?.address ?? "";
    const result = new ClusterResult(state.nameOf(slot), report?.nbytes ?? state.nbytesOf(slot), report?.type ?? "", address);
    mirror.finishTask(node, result);
    const key = this.plan.keys[node];
    const workerId = report === undefined ? address : `${address}#${report.thread}`;
    const info: TaskInfo = report === undefined ? {} : { timing: timingOf(report), record };
    try {
      for (const cb of this.posttasks) cb.posttask!(key, result, this.plan.graph, mirror.view, workerId, info);
    } catch (error) {
      this.failHook(error);
    }
  }

  erred(_slot: number, failure: TaskFailure): void {
    this.settle?.(failureError(failure));
  }

  private start(node: number): boolean {
    const mirror = this.mirror!;
    if (!mirror.start(node)) return false;
    const key = this.plan.keys[node];
    try {
      for (const cb of this.pretasks) cb.pretask!(key, this.plan.graph, mirror.view);
    } catch (error) {
      this.failHook(error);
      return false;
    }
    return true;
  }

  /** As on the local schedulers, a hook's error is the computation's: it rejects with it (finish hooks still run). */
  private failHook(error: unknown): void {
    this.hookFailed = true;
    this.settle?.(error);
  }

  private outputFinished(node: number): void {
    if (this.outputDone[node] === 1) return;
    this.outputDone[node] = 1;
    if (--this.remaining === 0) this.settle?.();
  }
}

/** The worker's own measurements of a task, for profilers (its compute phase, on the scheduler's clock). */
function timingOf(report: TaskFinishedMessage): TaskTiming | undefined {
  for (const startstop of report.startstops) {
    if (startstop.action === "compute") return { startTime: startstop.start, endTime: startstop.stop };
  }
  return undefined;
}
