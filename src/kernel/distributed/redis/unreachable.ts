// Data addresses that could not be reached: while one is, the values kept there come through
// Redis (./fallback). In the background it is tried again every few seconds, so that a peer that
// was frozen for a moment, or cut off by a network blip, serves its values directly once more
// rather than through Redis for good; nobody's fetch waits on those tries.

/** Ms between the end of one try and the start of the next. */
const RETRY_INTERVAL_MS = 5000;
/**
 * Tries before the address is left alone (about two minutes of tries, more with slow failures):
 * a worker that died is tried no longer, and a fetch that wants the address later tries it itself.
 */
const MAX_TRIES = 24;

interface Unreached {
  readonly tryAgain: () => Promise<unknown>;
  timer: NodeJS.Timeout | undefined;
  tries: number;
}

export class UnreachableAddresses {
  /** Each address not reached: how to try it, its pending retry (undefined while a try is under way), how many tries were made. */
  private readonly pending = new Map<string, Unreached>();
  private closed = false;

  constructor(
    /** Hears of an address that answers again. */
    private readonly answered: (address: string) => void,
    private readonly retryIntervalMs = RETRY_INTERVAL_MS,
    private readonly maxTries = MAX_TRIES,
  ) {}

  has(address: string): boolean {
    return this.pending.has(address);
  }

  /**
   * `address` could not be reached: values there go through Redis until `tryAgain` (which
   * resolves if the address answers now, rejects if not) reaches it.
   */
  add(address: string, tryAgain: () => Promise<unknown>): void {
    if (this.closed || this.pending.has(address)) return;
    const entry: Unreached = { tryAgain, timer: undefined, tries: 0 };
    this.pending.set(address, entry);
    this.scheduleTry(address, entry);
  }

  /** Stops trying; tries under way are ignored when they end. */
  close(): void {
    this.closed = true;
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }

  private scheduleTry(address: string, entry: Unreached): void {
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      entry.tries++;
      entry.tryAgain().then(
        () => {
          if (this.pending.get(address) !== entry) return;
          this.pending.delete(address);
          this.answered(address);
        },
        () => {
          if (this.pending.get(address) !== entry) return;
          if (entry.tries >= this.maxTries) this.pending.delete(address);
          else this.scheduleTry(address, entry);
        },
      );
    }, this.retryIntervalMs);
    // Tries never keep a process alive.
    entry.timer.unref();
  }
}
