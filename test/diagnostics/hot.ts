// Task functions for the tests of seed 003's diagnostics, exported so the pool schedulers ship
// them by reference. The profiler's tests read this file's compiled lines to check line numbers.

/** A fixed amount of CPU work (~0.1–0.3 s in all): nearly every sample lands on the marked line. */
export function hotLoop(rounds: number): number {
  let sum = 0;
  for (let round = 0; round < rounds; round++) {
    for (let i = 1; i < 4000; i++) sum += Math.sqrt(i) / i; // HOT LINE <img src=x onerror=globalThis.__xss=1>
  }
  return sum;
}

/** A little CPU, mostly waiting: few samples. */
export async function mostlyWaiting(ms: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return ms;
}

export function combine(...values: number[]): number {
  return values.length;
}

/** An array of `n` doubles, every page written: resident memory grows by 8n bytes. */
export function filled(n: number): Float64Array {
  return new Float64Array(n).fill(1);
}
