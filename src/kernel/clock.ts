// The one clock every record uses: epoch time that agrees across threads and processes.
// (`performance.timeOrigin` differs per thread; its sum with `performance.now()` does not.)

// Read once per thread (this module is loaded once per thread): it is a getter, and diagnostics
// read the clock several times per task.
const origin = performance.timeOrigin;

/** Epoch milliseconds, sub-millisecond precision. */
export function nowMs(): number {
  return origin + performance.now();
}

/** Epoch seconds (float): the unit of TaskData, ResourceData and CacheData times. */
export function now(): number {
  return nowMs() / 1000;
}
