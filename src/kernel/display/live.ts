// A display that can be updated at any rate but sends at a bounded one.
// tslab hands every message straight to its zeromq socket without waiting; a few hundred sends in
// one event-loop turn overrun it (EBUSY) and messages are dropped, the cell's idle status included.

import type { MimeBundle } from "../../protocol";
import type { OutputSlot } from "./tslab";

/** One output area that can be replaced in place. */
export interface LiveDisplay {
  /**
   * Replaces the output. The first call sends at once; later calls are coalesced to at most one
   * send per interval, the last bundle wins.
   */
  update(bundle: MimeBundle): void;
  /**
   * Sends the last bundle now, if one is waiting, on a later event-loop turn (so that a loop of
   * `update` + `await flush()` never floods the kernel); resolves when it has been handed to the
   * kernel. Rejects with the error of a failed send.
   */
  flush(): Promise<void>;
  /**
   * Shows `bundle` as the output's last state at once, whatever the interval. A frontend stops
   * listening to a cell once it is idle, so a closing state left to a timer or a later turn is
   * lost when the cell's code returns right after. Resolves when the bundle has been handed to
   * the kernel; a busy socket is retried as by flush().
   */
  finish(bundle: MimeBundle): Promise<void>;
  /** Messages sent so far (display_data, then update_display_data). */
  readonly sends: number;
}

export interface LiveDisplayOptions {
  /** The shortest time between two sends, in ms; default 125 (8 sends/s at most). */
  readonly minIntervalMs?: number;
}

export const DEFAULT_MIN_INTERVAL_MS = 125;
/** Below this, a display updated from a fast loop would send fast enough to overrun tslab. */
const MIN_INTERVAL_FLOOR_MS = 20;
/** How long flush() keeps retrying while the socket is busy before it gives up. */
const BUSY_RETRY_MS = 10;
const BUSY_RETRIES = 100;

/** The clock and timers a LiveDisplay runs on: real ones, or a fake in unit tests. */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Runs `fn` after `ms` without keeping the process alive; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
  /** Resolves on a later turn of the event loop (after I/O), letting the socket drain. */
  nextTurn(): Promise<void>;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
  nextTurn: () => new Promise((resolve) => setImmediate(resolve)),
};

export function checkOptions(options: LiveDisplayOptions): number {
  const interval = options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS;
  if (typeof interval !== "number" || !Number.isFinite(interval) || interval < MIN_INTERVAL_FLOOR_MS) {
    throw new RangeError(
      `newLiveDisplay: minIntervalMs must be a number ≥ ${MIN_INTERVAL_FLOOR_MS} (faster sends overrun tslab), got ${String(interval)}`,
    );
  }
  return interval;
}

function isBusy(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "EBUSY";
}

export class ThrottledDisplay implements LiveDisplay {
  private pending: MimeBundle | undefined;
  private lastSentAt = -Infinity;
  private cancelTimer: (() => void) | undefined;
  /** A failed send from a timer, reported by the next flush(). */
  private failure: unknown;
  private sent = 0;

  constructor(
    private readonly slot: OutputSlot,
    private readonly intervalMs: number,
    private readonly clock: Clock = realClock,
  ) {}

  get sends(): number {
    return this.sent;
  }

  update(bundle: MimeBundle): void {
    this.pending = bundle;
    if (this.cancelTimer !== undefined) return;
    const wait = this.lastSentAt + this.intervalMs - this.clock.now();
    if (wait > 0) {
      this.schedule(wait);
      return;
    }
    // Sending in the caller's turn keeps the output in order with what the cell prints next.
    const error = this.trySend();
    if (error !== undefined && !isBusy(error)) throw error;
  }

  async flush(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await (attempt === 0 ? this.clock.nextTurn() : this.sleep(BUSY_RETRY_MS));
      this.stopTimer();
      const failure = this.failure;
      this.failure = undefined;
      const error = this.trySend();
      if (error === undefined && failure === undefined) return;
      if (error === undefined) throw failure;
      if (!isBusy(error)) throw error;
      if (attempt === BUSY_RETRIES) {
        throw new Error(`tslab's output socket stayed busy for ${BUSY_RETRIES * BUSY_RETRY_MS} ms; display update dropped`, { cause: error });
      }
    }
  }

  finish(bundle: MimeBundle): Promise<void> {
    this.stopTimer();
    this.pending = bundle;
    const error = this.trySend();
    if (error === undefined) return Promise.resolve();
    return isBusy(error) ? this.flush() : Promise.reject(error);
  }

  /** Sends the pending bundle, if any; returns the error instead of throwing it. */
  private trySend(): unknown {
    const bundle = this.pending;
    if (bundle === undefined) return undefined;
    try {
      this.slot.show(bundle);
    } catch (error) {
      // Busy: keep the bundle (unless a newer one replaces it) and try again an interval later.
      if (isBusy(error)) this.schedule(this.intervalMs);
      else this.pending = undefined;
      return error;
    }
    this.pending = undefined;
    this.lastSentAt = this.clock.now();
    this.sent++;
    return undefined;
  }

  private schedule(ms: number): void {
    this.stopTimer();
    this.cancelTimer = this.clock.setTimer(ms, () => {
      this.cancelTimer = undefined;
      const error = this.trySend();
      if (error !== undefined && !isBusy(error)) this.failure = error;
    });
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimer(ms, resolve));
  }
}
