// A Future: a key on the cluster and a hold on its result. The result stays on the worker that
// computed it while any Future holds it; `release()` (or the garbage collector, for a Future
// nobody references any more) drops the hold, and the last one dropped frees the data.

import { inspect } from "node:util";
import { type Key, formatKey } from "../../graph/keys";
import { keyOfCollection } from "../../graph/spec";
import type { Scheduler } from "../scheduler/scheduler";
import type { TaskListener } from "../scheduler/state";
import { failureError } from "./errors";

/** Dask's Future.status: "pending" until the result is in memory ("finished") or the task failed ("error"); "cancelled" once released. */
export type FutureStatus = "pending" | "finished" | "error" | "cancelled";

/**
 * What the scheduler and the client know of one Future, apart from the Future object itself, so
 * that a forgotten Future can be collected and its hold dropped (FinalizationRegistry).
 */
export class FutureHold {
  released = false;

  constructor(
    readonly scheduler: Scheduler,
    /** The Client that made the Future (Dask's `future.client`). */
    readonly client: FutureClient,
    readonly slot: number,
    readonly keyId: string,
    private readonly onRelease: (hold: FutureHold) => void,
  ) {}

  get status(): FutureStatus {
    if (this.released) return "cancelled";
    if (this.scheduler.isClosed) return "cancelled";
    const state = this.scheduler.state.stateOf(this.slot);
    return state === "memory" ? "finished" : state === "erred" ? "error" : "pending";
  }

  /**
   * Resolves once the task finished or failed (or the scheduler closed). The process stays alive
   * while someone waits.
   */
  settled(): Promise<void> {
    if (this.status !== "pending") return Promise.resolve();
    const state = this.scheduler.state;
    const release = this.scheduler.hold();
    return new Promise((resolve) => {
      const listener: TaskListener = {
        finished: () => done(),
        erred: () => done(),
      };
      const done = (): void => {
        state.removeListener(this.slot, listener);
        stopWatching();
        release();
        resolve();
      };
      state.addListener(this.slot, listener);
      const stopWatching = this.scheduler.onClose(done);
    });
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.scheduler.unwant(this.slot);
    this.onRelease(this);
  }
}

const forgotten = new FinalizationRegistry<FutureHold>((hold) => hold.release());

/**
 * The Client, as a Future sees it: the Client class implements it (declared here rather than
 * imported, as the client module imports this one).
 */
export interface FutureClient {
  readonly description: string;
  gather(futures: unknown, options?: { readonly errors?: "raise" | "skip" }): Promise<unknown>;
}

export class Future<T = unknown> {
  readonly [keyOfCollection]: Key;
  readonly #hold: FutureHold;

  /** Made by a Client (submit, map, compute); holds `hold` until released. */
  constructor(
    /** The task's key (Dask's `future.key`). */
    readonly key: Key,
    hold: FutureHold,
  ) {
    this[keyOfCollection] = key;
    this.#hold = hold;
    forgotten.register(this, hold, hold);
  }

  /** The Client that made this Future (Dask's `future.client`). */
  get client(): FutureClient {
    return this.#hold.client;
  }

  /** "pending", "finished", "error", or "cancelled" (released). */
  get status(): FutureStatus {
    return this.#hold.status;
  }

  /** True once the task finished or failed. */
  done(): boolean {
    const status = this.status;
    return status === "finished" || status === "error";
  }

  /** The result, fetched from the worker holding it; the task's error if it failed. */
  async result(): Promise<T> {
    const hold = this.#hold;
    await hold.settled();
    this.checkUsable();
    const failure = hold.scheduler.state.failureOf(hold.slot);
    if (failure !== undefined) throw failureError(failure);
    const values = await hold.scheduler.gather([hold.keyId]);
    return values.get(hold.keyId) as T;
  }

  /** The task's error once it failed; undefined if it succeeded. */
  async exception(): Promise<unknown> {
    const hold = this.#hold;
    await hold.settled();
    this.checkUsable();
    const failure = hold.scheduler.state.failureOf(hold.slot);
    return failure === undefined ? undefined : failureError(failure);
  }

  /** Drops this Future's hold on the result; the last hold dropped frees it on the cluster. */
  release(): void {
    forgotten.unregister(this.#hold);
    this.#hold.release();
  }

  /** For `using` blocks (TypeScript ≥ 5.2). */
  [Symbol.dispose](): void {
    this.release();
  }

  toString(): string {
    return `<Future: ${this.status}, key: ${formatKey(this.key)}>`;
  }

  [inspect.custom](): string {
    return this.toString();
  }

  /** @internal The hold, for the client that made this Future. */
  static holdOf(future: Future): FutureHold {
    return future.#hold;
  }

  private checkUsable(): void {
    const hold = this.#hold;
    // A cluster that failed (its Redis lost) released every hold as it closed: its error says why.
    const failure = hold.scheduler.closedBy;
    if (failure !== undefined) throw failure;
    if (hold.released) throw new Error(`Future ${String(this.key)} was released; its result is gone`);
    if (hold.scheduler.isClosed) throw new Error(`Future ${String(this.key)}: the cluster is closed`);
  }
}
