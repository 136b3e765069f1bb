// A sampled thread that also knows when its tasks ran: whoever runs tasks on it (a pool worker,
// the sync executor) marks each task's start and end, and every sample is tagged with the task
// running at that moment. Tasks are numbered in the order they start on the thread; whoever
// handed them out maps the numbers back to keys (a pool knows the order of its worker's tasks).

import { now } from "../clock";
import { type SampleBatch, type ThreadSampler, wakeSampler } from "./thread-sampler";

export interface ThreadProfile extends SampleBatch {
  /** Per sample: the number of the task running then (the innermost, if tasks nest), −1 outside tasks. */
  readonly sampleTask: Int32Array;
  /** Per sample: 1 when it lies within the clocks' jitter of its task's start or end (see EDGE_SECONDS). */
  readonly nearEdge: Uint8Array;
  /** Every task numbered below this had ended when the batch was cut: its key is no longer needed. */
  readonly openTask: number;
  /** Epoch seconds up to which this thread's samples are complete. */
  readonly until: number;
}

/** How far back a sample looks for the task it fell in: deeper than any real nesting of tasks. */
const MAX_NESTING = 64;
/**
 * V8's sample timestamps and our marks agree to a microsecond or two (measured: exact for 5 µs
 * spans, 2 % off for 2 µs ones). A sample this close to a task's edge may belong to the code
 * around the task; the fold decides from its stack.
 */
export const EDGE_SECONDS = 5e-6;

export class SampledThread {
  private readonly sampler: ThreadSampler;
  /** Start and end (epoch s; end Infinity while running) of tasks numbered `first` on. */
  private starts: number[] = [];
  private ends: number[] = [];
  private first = 0;

  /** `fresh`: nothing has run on this thread yet whose samples matter (see wakeSampler). */
  constructor(intervalSeconds: number, fresh = false) {
    this.sampler = wakeSampler(intervalSeconds, fresh);
  }

  /** Marks a task's start; returns its number. */
  taskStarted(): number {
    this.starts.push(now());
    this.ends.push(Infinity);
    return this.first + this.starts.length - 1;
  }

  taskEnded(task: number): void {
    const index = task - this.first;
    if (index >= 0 && index < this.ends.length) this.ends[index] = now();
  }

  /** The samples since the last call, each tagged with its task; sampling goes on. */
  collect(): ThreadProfile {
    const until = now();
    return this.tag(this.sampler.collect(), until);
  }

  /** The last samples; the thread's sampler goes dormant. */
  stop(): ThreadProfile {
    const until = now();
    return this.tag(this.sampler.sleep(), until);
  }

  private tag(batch: SampleBatch, until: number): ThreadProfile {
    const { times } = batch;
    const { starts, ends } = this;
    const sampleTask = new Int32Array(times.length).fill(-1);
    const nearEdge = new Uint8Array(times.length);
    let latest = -1; // the last task started at or before the current sample
    for (let i = 0; i < times.length; i++) {
      const t = times[i];
      while (latest + 1 < starts.length && starts[latest + 1] <= t) latest++;
      for (let j = latest; j >= 0 && j > latest - MAX_NESTING; j--) {
        if (ends[j] >= t) {
          sampleTask[i] = this.first + j;
          if (t - starts[j] < EDGE_SECONDS || ends[j] - t < EDGE_SECONDS) nearEdge[i] = 1;
          break;
        }
      }
    }
    // Forget the tasks that had ended by the cut (up to the first still running: tasks may nest).
    let ended = 0;
    while (ended < starts.length && ends[ended] < until) ended++;
    this.starts = starts.slice(ended);
    this.ends = ends.slice(ended);
    this.first += ended;
    return { ...batch, sampleTask, nearEdge, openTask: this.first, until };
  }
}
