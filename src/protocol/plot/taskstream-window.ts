// The live task stream's rolling window (Dask's dashboard TaskStream): the panel shows the most
// recent burst of work, not the kernel's whole run. Work that resumes after a long quiet stretch
// starts a new window when the quiet is long (the clear interval, 20 s) and either wider than twice
// the old work or the old work was sparse (under 5 % of the threads busy): Dask's rule, applied to
// the records' own times, so a panel opened late shows what one open all along would.

import type { TaskStreamRecord } from "../records";

export interface TaskStreamWindowOptions {
  /** Seconds of quiet after which new work may start a new window (Dask's `clear_interval`, "20s"). */
  readonly clearInterval?: number;
  /** Threads the work ran on, for the density test (default: the distinct worker threads in `records`). */
  readonly threads?: number;
}

export const TASK_STREAM_CLEAR_INTERVAL = 20;
/** Below this share of the threads busy, old work is sparse enough to drop (Dask's 0.05). */
const SPARSE = 0.05;

function span(record: TaskStreamRecord): { start: number; stop: number } {
  let start = Infinity;
  let stop = -Infinity;
  for (const phase of record.startstops) {
    start = Math.min(start, phase.start);
    stop = Math.max(stop, phase.stop);
  }
  return { start, stop };
}

/** The records of the most recent window, in their original order. */
export function recentTaskStream(records: readonly TaskStreamRecord[], options: TaskStreamWindowOptions = {}): TaskStreamRecord[] {
  const clearInterval = options.clearInterval ?? TASK_STREAM_CLEAR_INTERVAL;
  if (!(clearInterval >= 0)) throw new RangeError(`clearInterval must be a number of seconds ≥ 0, got ${String(options.clearInterval)}`);
  const threads = options.threads ?? new Set(records.map((record) => `${record.worker}\u0000${record.thread}`)).size;
  const timed = records.map((record, index) => ({ index, ...span(record) })).filter(({ start, stop }) => Number.isFinite(start) && stop >= start);
  timed.sort((a, b) => a.start - b.start);
  let first = 0;
  let windowStart = timed[0]?.start ?? 0;
  let windowEnd = -Infinity;
  let busy = 0;
  for (const [at, { start, stop }] of timed.entries()) {
    const quiet = start - windowEnd;
    const width = windowEnd - windowStart;
    if (at > 0 && quiet > clearInterval && (quiet > 2 * width || busy / Math.max(1, threads) / Math.max(width, 1e-9) < SPARSE)) {
      first = at;
      windowStart = start;
      busy = 0;
    }
    windowEnd = Math.max(windowEnd, stop);
    busy += stop - start;
  }
  const kept = new Set(timed.slice(first).map(({ index }) => index));
  return records.filter((_, index) => kept.has(index));
}
