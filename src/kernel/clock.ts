// The one clock every record uses: epoch time that agrees across threads and processes.
// (`performance.timeOrigin` differs per thread; its sum with `performance.now()` does not.)

/** Epoch milliseconds, sub-millisecond precision. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Epoch seconds (float): the unit of TaskData, ResourceData and CacheData times. */
export function now(): number {
  return nowMs() / 1000;
}
