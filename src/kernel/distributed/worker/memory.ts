// Dask's memory thresholds for one worker, as fractions of its memory limit: spill results when
// managed memory passes `target` (the data store does that as values arrive) or process memory
// passes `spill` (the memory monitor, here), pause new tasks above `pause`. Restarting a worker
// past `terminate` is the nanny's job (LocalCluster).


export interface MemoryThresholds {
  /** Fraction of the limit that managed memory (results) may use before spilling; false: never. */
  readonly target: number | false;
  /** Fraction of the limit that process memory (RSS) may reach before the monitor spills; false: never. */
  readonly spill: number | false;
  /** Fraction of the limit at which the worker stops starting tasks; false: never. */
  readonly pause: number | false;
}

/** Dask's defaults (distributed.worker.memory.*). */
export const DEFAULT_THRESHOLDS: MemoryThresholds = { target: 0.6, spill: 0.7, pause: 0.8 };

/** Dask's distributed.worker.memory.monitor-interval. */
export const MONITOR_INTERVAL_MS = 100;

/**
 * A value landing on a worker (a result, a fetched input) of at least this share of its memory
 * limit has the monitor run at once: a few such values arriving between two ticks could otherwise
 * take the process from below `spill` to past `terminate`.
 */
export const LANDING_CHECK_FRACTION = 0.01;

export interface MemoryDecision {
  /** Bytes of results to move to disk (least recently used first), 0 for none. */
  readonly spillBytes: number;
  /** The worker's status after this check. */
  readonly paused: boolean;
}

/**
 * What the monitor does about `rss` bytes of process memory: above the spill threshold, spill
 * until the process would be back under the target (Dask spills down to `target`, or to the
 * spill threshold when target is off); pause above `pause`, resume below it.
 */
export function decideMemory(rss: number, limit: number, thresholds: MemoryThresholds): MemoryDecision {
  let spillBytes = 0;
  if (thresholds.spill !== false && rss > thresholds.spill * limit) {
    const goal = (thresholds.target === false ? thresholds.spill : Math.min(thresholds.target, thresholds.spill)) * limit;
    spillBytes = rss - goal;
  }
  const pauseAt = thresholds.pause === false ? Infinity : thresholds.pause * limit;
  return { spillBytes, paused: rss > pauseAt };
}

/** Managed bytes above which a worker's store spills values (Infinity: no limit, or no target). */
export function spillTarget(memoryLimit: number, thresholds: MemoryThresholds): number {
  const limited = memoryLimit > 0 && Number.isFinite(memoryLimit);
  return limited && thresholds.target !== false ? thresholds.target * memoryLimit : Infinity;
}

/** Checks and completes thresholds given by a start config. */
export function memoryThresholds(given: Partial<Record<keyof MemoryThresholds, number | false>> | undefined): MemoryThresholds {
  const thresholds = { ...DEFAULT_THRESHOLDS, ...given };
  for (const name of ["target", "spill", "pause"] as const) {
    const value = thresholds[name];
    if (value !== false && !(typeof value === "number" && value > 0 && value <= 1)) {
      throw new TypeError(`Worker memory threshold ${name} must be a fraction in (0, 1] or false, got ${JSON.stringify(value)}`);
    }
  }
  return thresholds;
}
