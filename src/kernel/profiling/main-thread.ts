// The calling thread as a profile source: the sync scheduler's tasks run here (the executor marks
// them), and everything else it does — the scheduler loop, sending to pools, the notebook
// kernel — is this process's administrative profile. Samples are handed over once per cycle
// from a timer, and on demand.

import { isMainThread, threadId } from "node:worker_threads";
import type { Key } from "../graph/keys";
import { foldThreadProfile } from "./fold";
import { type ProfileSource, type ProfilingOptions, profiling } from "./hub";
import { SampledThread, type ThreadProfile } from "./thread";

/** The name of this thread's windows. */
export const MAIN_SOURCE = isMainThread ? "main" : `thread ${threadId}`;

class CallingThread implements ProfileSource {
  private thread: SampledThread | undefined;
  private cycle = 1;
  private timer: ReturnType<typeof setInterval> | undefined;
  private keys: Key[] = [];
  private first = 0;
  private fresh = false;

  /**
   * Says that this thread has run only tsdask's own start-up so far (a worker process's main
   * thread, whose profiler starts with it): its first profile need not discard optimised code.
   */
  startsFresh(): void {
    this.fresh = true;
  }

  start(options: ProfilingOptions): void {
    if (this.thread !== undefined) return;
    this.thread = new SampledThread(options.interval, this.fresh);
    this.cycle = options.cycle;
    this.keys = [];
    this.first = 0;
    this.timer = setInterval(() => this.collect(), options.cycle * 1000);
    this.timer.unref();
  }

  stop(): void {
    const thread = this.thread;
    if (thread === undefined) return;
    this.thread = undefined;
    clearInterval(this.timer);
    this.deliver(thread.stop());
  }

  collect(): void {
    if (this.thread !== undefined) this.deliver(this.thread.collect());
  }

  /** Marks the start of a task run on this thread; −1 (nothing to end) while profiling is off. */
  taskStarted(key: Key): number {
    if (this.thread === undefined) return -1;
    const task = this.thread.taskStarted();
    this.keys[task - this.first] = key;
    return task;
  }

  taskEnded(task: number): void {
    if (task >= 0) this.thread?.taskEnded(task);
  }

  private deliver(profile: ThreadProfile): void {
    const { keys, first } = this;
    const windows = foldThreadProfile(profile, { cycle: this.cycle, source: MAIN_SOURCE, keyOf: (task) => keys[task - first] });
    this.keys = keys.slice(Math.max(0, profile.openTask - first));
    this.first = Math.max(first, profile.openTask);
    profiling.add(windows);
  }
}

export const callingThread = new CallingThread();
profiling.register(callingThread);
