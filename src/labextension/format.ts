// Numbers as the progress bar shows them.

/** Dask's format_time: "0.45 s"-style below ten minutes, then minutes, hours and days. */
export function formatTime(seconds: number): string {
  if (seconds > 2 * 86400) {
    const days = Math.floor(seconds / 86400);
    return `${days}d ${Math.floor((seconds - days * 86400) / 3600)}hr`;
  }
  if (seconds > 2 * 3600) {
    const hours = Math.floor(seconds / 3600);
    return `${hours}hr ${Math.floor((seconds - hours * 3600) / 60)}m`;
  }
  if (seconds > 600) {
    const minutes = Math.floor(seconds / 60);
    return `${minutes}m ${Math.floor(seconds - minutes * 60)}s`;
  }
  if (seconds >= 1) return `${seconds.toFixed(2)} s`;
  if (seconds >= 1e-3) return `${(seconds * 1e3).toFixed(2)} ms`;
  return `${(seconds * 1e6).toFixed(2)} us`;
}

/**
 * Whole percent, rounded down like Dask's bar so that 100% means every task is done. An empty
 * graph is complete, except while running: the kernel's first snapshot, sent before it has counted
 * the tasks, has total 0 and must not flash 100%.
 */
export function percent(done: number, total: number, running = false): number {
  if (total <= 0) return running ? 0 : 100;
  return Math.min(100, Math.floor((100 * done) / total));
}

export function formatRate(done: number, elapsed: number): string {
  if (elapsed <= 0 || done === 0) return "– tasks/s";
  const rate = done / elapsed;
  return `${rate >= 100 ? rate.toFixed(0) : rate.toPrecision(3)} tasks/s`;
}
