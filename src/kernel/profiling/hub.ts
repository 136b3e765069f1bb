// This process's statistical profiling: who wants profiles (leases), which threads sample
// (sources: the main thread, each pool's workers), and the windows they deliver (a bounded
// history for queries, plus listeners such as a StatisticalProfiler recording a block).

import type { ProfileWindow } from "../../protocol/profile";

export interface ProfilingOptions {
  /** Seconds between samples (Dask's profile-interval, 10 ms). */
  readonly interval: number;
  /** Seconds per window (Dask's profile-cycle-interval, 1 s). */
  readonly cycle: number;
}

export const DEFAULT_PROFILING: ProfilingOptions = { interval: 0.01, cycle: 1 };

/**
 * `options` checked and completed with Dask's defaults; errors name the option as
 * `${label} ${name}` (label: "StatisticalProfiler option", "LocalCluster profile option").
 */
export function checkProfilingOptions(options: Partial<ProfilingOptions>, label: string): ProfilingOptions {
  for (const name of Object.keys(options)) {
    if (name !== "interval" && name !== "cycle") throw new TypeError(`Unknown ${label} "${name}"; known: interval, cycle`);
  }
  const { interval = DEFAULT_PROFILING.interval, cycle = DEFAULT_PROFILING.cycle } = options;
  for (const [name, value, least] of [["interval", interval, 1e-4], ["cycle", cycle, 0.01]] as const) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < least) {
      throw new TypeError(`${label} ${name} must be a number of seconds ≥ ${least}, got ${String(value)}`);
    }
  }
  if (cycle < interval) throw new TypeError(`${label} cycle (${cycle} s) must be at least the interval (${interval} s)`);
  return { interval, cycle };
}

/** Threads that sample while profiling is on, and hand their windows to the hub. */
export interface ProfileSource {
  start(options: ProfilingOptions): void;
  /** Stops sampling; what was sampled is delivered first. */
  stop(): void;
  /** Delivers everything sampled so far; resolves once it has been added (or could not be, within `timeoutMs`). */
  collect(timeoutMs: number): void | Promise<void>;
}

export interface ProfilingLease {
  /** The options in force (the first lease's, while leases overlap). */
  readonly options: ProfilingOptions;
  release(): void;
}

/** Windows kept per source for queries (Dask's low-level-log-length: ~17 minutes at 1 s cycles). */
export const HISTORY_PER_SOURCE = 1000;
/** Longest a collect waits for a busy thread (one running someone else's long task). */
export const COLLECT_TIMEOUT_MS = 2000;

export class ProfileHub {
  private readonly sources = new Set<ProfileSource>();
  private readonly leases = new Set<ProfilingLease>();
  private options: ProfilingOptions | undefined;
  private readonly listeners = new Set<(windows: readonly ProfileWindow[]) => void>();
  private readonly history = new Map<string, ProfileWindow[]>();

  /** The options in force, or undefined when nobody profiles. */
  get active(): ProfilingOptions | undefined {
    return this.options;
  }

  register(source: ProfileSource): void {
    this.sources.add(source);
    if (this.options !== undefined) source.start(this.options);
  }

  unregister(source: ProfileSource): void {
    if (this.sources.delete(source) && this.options !== undefined) source.stop();
  }

  /** Turns profiling on (if it was off) until the lease is released. */
  acquire(options: ProfilingOptions = DEFAULT_PROFILING): ProfilingLease {
    const first = this.options === undefined;
    if (first) this.options = options;
    const lease: ProfilingLease = {
      options: this.options!,
      release: () => {
        if (!this.leases.delete(lease) || this.leases.size > 0) return;
        for (const source of this.sources) source.stop();
        this.options = undefined;
      },
    };
    this.leases.add(lease);
    if (first) for (const source of this.sources) source.start(options);
    return lease;
  }

  /** Asks every source for what it has sampled so far. */
  async collect(timeoutMs = COLLECT_TIMEOUT_MS): Promise<void> {
    if (this.options === undefined) return;
    await Promise.all([...this.sources].map((source) => source.collect(timeoutMs)));
  }

  /** Called by sources with freshly folded windows. */
  add(windows: readonly ProfileWindow[]): void {
    if (windows.length === 0) return;
    for (const window of windows) {
      let kept = this.history.get(window.source);
      if (kept === undefined) this.history.set(window.source, (kept = []));
      kept.push(window);
      if (kept.length > 2 * HISTORY_PER_SOURCE) kept.splice(0, kept.length - HISTORY_PER_SOURCE);
    }
    for (const listener of this.listeners) listener(windows);
  }

  /** Calls `listener` with every window added from now on; returns the function that stops it. */
  listen(listener: (windows: readonly ProfileWindow[]) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The windows kept (the last HISTORY_PER_SOURCE per source at least), oldest first per source. */
  windows(): ProfileWindow[] {
    return [...this.history.values()].flatMap((kept) => kept.slice(-HISTORY_PER_SOURCE));
  }
}

/** The process's hub: sources register with it, profilers lease from it. */
export const profiling = new ProfileHub();
