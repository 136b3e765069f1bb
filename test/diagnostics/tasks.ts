// Task functions for the diagnostics tests. Exported from a module file so that the pool
// schedulers ("threads", "processes") ship them by reference.

import { setTimeout as sleepFor } from "node:timers/promises";

export function add(a: number, b: number): number {
  return a + b;
}

export function mul(a: number, b: number): number {
  return a * b;
}

/** Dask's slowadd: 0.1 s, then a + b. */
export async function slowadd(a: number, b: number): Promise<number> {
  await sleepFor(100);
  return a + b;
}

/** `x` after `ms` milliseconds. */
export async function nap(x: number, ms = 40): Promise<number> {
  await sleepFor(ms);
  return x;
}

/** Keeps the running thread busy for `ms` milliseconds. */
export function busy(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x++;
  return x;
}

export function boom(): never {
  throw new RangeError("boom");
}

/** x / y, failing on a zero divisor (JavaScript would return Infinity). */
export function div(x: number, y: number): number {
  if (y === 0) throw new RangeError("division by zero");
  return x / y;
}

export function zeros(n: number): Float64Array {
  return new Float64Array(n);
}

export function length(a: ArrayLike<unknown>): number {
  return a.length;
}
