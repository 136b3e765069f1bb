// Numbers as the progress bar shows them.

export { formatTime } from "../protocol/format";

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
