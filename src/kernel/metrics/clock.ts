// The clocks a task is measured with: wall time, and the CPU time of the thread running it, read
// so sparingly that measuring every task costs next to nothing (each worker thread and process
// loads its own copy of this module, so the per-thread state below is per thread).

import { closeSync, openSync, readSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { nowMs } from "../clock";

/** CPU milliseconds used so far by this thread, or NaN when the platform cannot tell. */
export const threadCpuMs: () => number = (() => {
  const threadCpuUsage = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage;
  if (typeof threadCpuUsage === "function") {
    return () => {
      const { user, system } = threadCpuUsage.call(process);
      return (user + system) / 1000;
    };
  }
  // Linux before Node 22.19: the scheduler's own count of ns this thread spent on a CPU. The file
  // is opened once (by this thread, so it stays this thread's) and re-read with a positioned read.
  try {
    const fd = openSync("/proc/thread-self/schedstat", "r");
    const buffer = Buffer.alloc(64);
    // The digits are summed straight from the bytes: no string is made per reading.
    const read = (): number => {
      const length = readSync(fd, buffer, 0, buffer.length, 0);
      let ns = 0;
      for (let i = 0; i < length; i++) {
        const digit = buffer[i] - 48;
        if (digit < 0 || digit > 9) return i === 0 ? Number.NaN : ns / 1e6;
        ns = ns * 10 + digit;
      }
      return Number.NaN;
    };
    if (Number.isFinite(read())) return read;
    closeSync(fd);
  } catch {
    // not Linux, or no schedstat: fall through
  }
  // A process's main thread: the process's CPU time (its other threads included, an approximation).
  if (isMainThread) {
    return () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
  }
  return () => Number.NaN;
})();

/**
 * A read of the CPU clock costs 1–3 µs (a system call), more than a small task. Tasks shorter than
 * this are counted as all CPU without reading it: a synchronous JavaScript task that takes
 * microseconds was computing, and Linux's per-thread counter moves in steps of about a
 * millisecond anyway, far too coarse to split such a task.
 */
const SHORT_TASK_MS = 0.1;
/** A reading this recent (and the thread busy since) stands in for a fresh one. */
const REUSE_READING_MS = 0.1;
/** The most CPU time carried over from one task to the next (see `carry`). */
const MAX_CARRY_MS = 20;

/** A task's clock readings: wall times (epoch ms) and its thread CPU time (ms; NaN if unknown). */
export interface TaskTimes {
  start: number;
  end: number;
  cpu: number;
  /** The thread's CPU clock at `start`, estimated or read. */
  cpuStart: number;
}

/**
 * Brackets the tasks of one thread with wall and CPU readings. The CPU clock is read at a task's
 * end only when the task was long enough to tell, and at its start only when the last reading is
 * stale or the thread went `idle` (waited for work) since; in between, the time since the last
 * reading counts as CPU (the thread was busy running tsdask's own loop). Linux's counter lags by up to a scheduler tick, so a task may see CPU time that
 * belongs to its predecessor: what exceeds a task's wall time is carried to the next tasks
 * instead of being lost, so sums over many tasks stay right.
 */
export class ThreadClock {
  private cpuAt = Number.NaN;
  private wallAt = Number.NEGATIVE_INFINITY;
  private carry = 0;
  /** When the thread last went idle, if it has not begun a task since (NaN otherwise). */
  private idleAt = Number.NaN;

  begin(times: TaskTimes): void {
    const wall = nowMs();
    // After a wait the time since the last reading was not all CPU, and Linux's counter may only
    // now show the end of the last task (seen: 12 ms of a 20 ms spin arriving after the thread
    // slept), so the clock is read; a thread that waits already pays far more to wake up.
    if (this.idleAt >= this.wallAt || wall - this.wallAt > REUSE_READING_MS) {
      this.cpuAt = threadCpuMs();
      this.wallAt = wall;
    }
    this.idleAt = Number.NaN;
    times.start = wall;
    times.cpuStart = this.cpuAt + (wall - this.wallAt);
  }

  /** The thread is about to wait for work: it uses no CPU until its next `begin`. */
  idle(): void {
    if (!Number.isNaN(this.cpuAt)) this.idleAt = nowMs();
  }

  end(times: TaskTimes): void {
    const wall = nowMs();
    const elapsed = wall - times.start;
    times.end = wall;
    if (elapsed < SHORT_TASK_MS) {
      times.cpu = Number.isNaN(this.cpuAt) ? Number.NaN : elapsed;
      return;
    }
    const cpuNow = threadCpuMs();
    this.cpuAt = cpuNow;
    this.wallAt = wall;
    const measured = cpuNow - times.cpuStart + this.carry;
    const cpu = measured < 0 ? 0 : measured > elapsed ? elapsed : measured;
    const carry = measured - cpu;
    this.carry = carry > MAX_CARRY_MS ? MAX_CARRY_MS : carry < -MAX_CARRY_MS ? -MAX_CARRY_MS : carry;
    times.cpu = cpu;
  }
}
