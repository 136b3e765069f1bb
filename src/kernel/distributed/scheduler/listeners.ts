// Who watches the scheduler's tasks, and when they hear about them. Transitions only queue what
// happened (a notice); the queue is delivered once the event that caused them (a message batch, a
// submission, a worker leaving) has been carried out in full. A listener therefore always sees
// a consistent state, may call back into the scheduler, and cannot leave a transition half done
// by throwing: its error goes to the state's owner, and the other listeners still hear the news.

import type { TaskStreamRecord } from "../../../protocol/records";
import type { PackedError } from "../../execution/wire";
import type { TaskErredMessage, TaskFinishedMessage, WorkerAddress } from "../messages";
import type { WorkerState } from "./workers";

/** Why a task failed; its dependents fail with the same failure. */
export type TaskFailure =
  | { readonly kind: "error"; readonly key: string; readonly name: string; readonly error: PackedError }
  /** It was running on `allowedFailures + 1` workers that died (Dask's KilledWorker). */
  | { readonly kind: "killed"; readonly key: string; readonly name: string; readonly worker: WorkerAddress; readonly failures: number };

/**
 * Watches tasks: the client's computations (callbacks, results), Futures, the dashboard. Called
 * after the event that moved the task is fully handled, so the state it reads is the one after it
 * (the task may even be forgotten by then: a finished intermediate nobody needs).
 */
export interface TaskListener {
  /** The task went to `worker` and can start there (its inputs are computed): Callback.pretask. */
  dispatched?(slot: number, worker: WorkerState | undefined): void;
  /**
   * The result is in memory (`report` is absent when it already was at submission); `record` is
   * the task-stream record the report made.
   */
  finished?(slot: number, worker: WorkerState | undefined, report: TaskFinishedMessage | undefined, record?: TaskStreamRecord): void;
  erred?(slot: number, failure: TaskFailure): void;
}

/**
 * Hears every task's every state change (scheduler plugins), after the event that caused it, in
 * order. `report` is the worker's report when one caused the change (processing → memory or erred).
 */
export interface TransitionObserver {
  transition(keyId: string, start: string, finish: string, worker: WorkerState | undefined, report: TaskFinishedMessage | TaskErredMessage | undefined): void;
}

type Notice =
  | { readonly kind: "dispatched"; readonly slot: number; readonly worker: WorkerState | undefined }
  | {
      readonly kind: "finished";
      readonly slot: number;
      readonly worker: WorkerState | undefined;
      readonly report: TaskFinishedMessage | undefined;
      readonly record: TaskStreamRecord | undefined;
    }
  | { readonly kind: "erred"; readonly slot: number; readonly failure: TaskFailure }
  | {
      readonly kind: "transition";
      readonly keyId: string;
      readonly start: string;
      readonly finish: string;
      readonly worker: WorkerState | undefined;
      readonly report: TaskFinishedMessage | TaskErredMessage | undefined;
    };

/** The listeners of each task slot, and the notices waiting for the end of the current event. */
export class TaskListeners {
  /** Per slot: none, one listener, or several (most tasks have none or one). */
  private readonly bySlot: (TaskListener | TaskListener[] | undefined)[] = [];
  private notices: Notice[] = [];
  private delivering = false;
  private observer: TransitionObserver | undefined;

  /** `failed`: where a listener's error goes; without it, the first one is thrown once all are told. */
  constructor(private readonly failed?: (error: unknown) => void) {}

  /** True while notices are being delivered (a listener is running, or may call back). */
  get busy(): boolean {
    return this.delivering;
  }

  add(slot: number, listener: TaskListener): void {
    const current = this.bySlot[slot];
    if (current === undefined) this.bySlot[slot] = listener;
    else if (Array.isArray(current)) current.includes(listener) || current.push(listener);
    else if (current !== listener) this.bySlot[slot] = [current, listener];
  }

  /** Stops `listener` hearing about `slot`, notices already queued included. */
  remove(slot: number, listener: TaskListener): void {
    const current = this.bySlot[slot];
    if (current === listener) this.bySlot[slot] = undefined;
    else if (Array.isArray(current)) {
      const rest = current.filter((l) => l !== listener);
      this.bySlot[slot] = rest.length === 0 ? undefined : rest.length === 1 ? rest[0] : rest;
    }
  }

  /** No listeners for `slot`: a new one, or one to be reused (its notices all delivered). */
  reset(slot: number): void {
    this.bySlot[slot] = undefined;
  }

  /** True while someone hears every transition: only then does a state change queue a notice. */
  get observed(): boolean {
    return this.observer !== undefined;
  }

  /** Who hears every transition from now on (undefined: nobody). */
  observeTransitions(observer: TransitionObserver | undefined): void {
    this.observer = observer;
  }

  transitioned(keyId: string, start: string, finish: string, worker?: WorkerState, report?: TaskFinishedMessage | TaskErredMessage): void {
    if (this.observer !== undefined) this.notices.push({ kind: "transition", keyId, start, finish, worker, report });
  }

  dispatched(slot: number, worker: WorkerState | undefined): void {
    if (this.bySlot[slot] !== undefined) this.notices.push({ kind: "dispatched", slot, worker });
  }

  finished(slot: number, worker: WorkerState | undefined, report: TaskFinishedMessage | undefined, record?: TaskStreamRecord): void {
    if (this.bySlot[slot] !== undefined) this.notices.push({ kind: "finished", slot, worker, report, record });
  }

  erred(slot: number, failure: TaskFailure): void {
    if (this.bySlot[slot] !== undefined) this.notices.push({ kind: "erred", slot, failure });
  }

  /**
   * Tells the listeners what was queued, in order, and what the events they cause meanwhile queue
   * (those events return without delivering: this loop does it). A listener removed meanwhile is
   * not told any more.
   */
  deliver(): void {
    if (this.delivering || this.notices.length === 0) return;
    this.delivering = true;
    let unrouted: { error: unknown } | undefined;
    try {
      for (let i = 0; i < this.notices.length; i++) {
        const notice = this.notices[i];
        if (notice.kind === "transition") {
          if (this.observer !== undefined) unrouted = this.tell(this.observer, notice, unrouted);
          continue;
        }
        const listeners = this.bySlot[notice.slot];
        if (listeners === undefined) continue;
        if (!Array.isArray(listeners)) {
          unrouted = this.tell(listeners, notice, unrouted);
          continue;
        }
        for (const listener of [...listeners]) {
          // One may remove another: only those still listening hear it.
          if (this.isListening(notice.slot, listener)) unrouted = this.tell(listener, notice, unrouted);
        }
      }
    } finally {
      this.notices = [];
      this.delivering = false;
    }
    if (unrouted !== undefined) throw unrouted.error;
  }

  private isListening(slot: number, listener: TaskListener): boolean {
    const current = this.bySlot[slot];
    return current === listener || (Array.isArray(current) && current.includes(listener));
  }

  /** Calls one listener; its error is routed, or kept (the first one) when there is nowhere to route it. */
  private tell(listener: TaskListener | TransitionObserver, notice: Notice, unrouted: { error: unknown } | undefined): { error: unknown } | undefined {
    try {
      switch (notice.kind) {
        case "dispatched":
          (listener as TaskListener).dispatched?.(notice.slot, notice.worker);
          break;
        case "finished":
          (listener as TaskListener).finished?.(notice.slot, notice.worker, notice.report, notice.record);
          break;
        case "erred":
          (listener as TaskListener).erred?.(notice.slot, notice.failure);
          break;
        case "transition":
          (listener as TransitionObserver).transition(notice.keyId, notice.start, notice.finish, notice.worker, notice.report);
          break;
      }
    } catch (error) {
      if (this.failed === undefined) return unrouted ?? { error };
      this.failed(error);
    }
    return unrouted;
  }
}
