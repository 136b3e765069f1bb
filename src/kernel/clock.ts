// The one clock every record uses: epoch time that agrees across threads and processes.
//
// `performance.timeOrigin + performance.now()` does not agree across processes: each process
// estimates its origin from a wall-clock and a monotonic reading taken at start, and a process
// descheduled between the two (a loaded machine) is off by that delay. Measured on a 2-core
// machine under load: forked processes 32 ms early to 48 ms late against their parent, threads
// ~20 µs. Here epoch time is the monotonic clock, which every thread and process of one boot
// shares, plus one offset: the first process works it out and hands it to every thread and
// process it starts through the environment (which both inherit), so they all read one clock.

import { readFileSync } from "node:fs";

const OFFSET_VARIABLE = "TSDASK_CLOCK_OFFSET_MS";

/** Milliseconds of the monotonic clock (CLOCK_MONOTONIC: shared by the whole machine until reboot). */
function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** This boot's id ("" where unknown): an inherited offset is only good on the boot it was measured on. */
function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "";
  }
}

/** Epoch ms − monotonic ms, as a starting process measures it. */
function measureOffset(): number {
  const precise = performance.timeOrigin + performance.now() - monotonicMs();
  // Date.now() is right but whole milliseconds: the epoch lies in [coarse, coarse + 1).
  const coarse = Date.now() - monotonicMs();
  return Math.abs(precise - (coarse + 0.5)) <= 1 ? precise : coarse + 0.5;
}

/** The offset the process tree shares: inherited when a parent on this boot set it, else measured and set for the children. */
function sharedOffset(): number {
  const boot = bootId();
  const [inheritedBoot, inherited] = (process.env[OFFSET_VARIABLE] ?? "").split(" ");
  if (inheritedBoot === boot && inherited !== undefined && Number.isFinite(Number(inherited))) return Number(inherited);
  const offset = measureOffset();
  process.env[OFFSET_VARIABLE] = `${boot} ${offset}`;
  return offset;
}

/**
 * performance.now() is the cheapest clock read and ticks with the monotonic clock from this
 * thread's start: the difference between them is fixed. Of a few paired readings the smallest
 * difference is the one no pause fell between.
 */
function threadStartMs(): number {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const sinceStart = performance.now();
    best = Math.min(best, monotonicMs() - sinceStart);
  }
  return best;
}

// Worked out once per thread (this module is loaded once per thread).
const origin = sharedOffset() + threadStartMs();

/** Epoch milliseconds, sub-millisecond precision. */
export function nowMs(): number {
  return origin + performance.now();
}

/** Epoch seconds (float): the unit of TaskData, ResourceData and CacheData times. */
export function now(): number {
  return nowMs() / 1000;
}
