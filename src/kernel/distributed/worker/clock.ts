// The worker's clock and its estimate of the scheduler's: every time a worker reports is on the
// scheduler's clock (Dask's `scheduler_delay`), whatever the skew between the two machines.

import { now as epochSeconds } from "../../clock";

/** Heartbeat round trips kept for the estimate: the one with the shortest trip wins. */
const SAMPLES = 8;

interface Sample {
  readonly roundTrip: number;
  readonly delay: number;
}

export class WorkerClock {
  /** Estimated scheduler clock − worker clock, seconds (Dask's `scheduler_delay`). */
  private delay = 0;
  private samples: Sample[] = [];
  /** Round-trip time to the scheduler, smoothed as Dask does (0.05 new, 0.95 old). */
  latency = 0;

  /** `simulatedOffset`: seconds added to this worker's own clock, to test the correction. */
  constructor(readonly simulatedOffset = 0) {}

  /** The worker's own clock, epoch seconds. */
  now(): number {
    return epochSeconds() + this.simulatedOffset;
  }

  /** A time read from the machine's clock (a task thread's measurement) as the worker's clock. */
  fromMachine(epoch: number): number {
    return epoch + this.simulatedOffset;
  }

  /** A time on the worker's clock as the scheduler's. */
  toScheduler(workerTime: number): number {
    return workerTime + this.delay;
  }

  /** The worker's clock now, as the scheduler's. */
  schedulerNow(): number {
    return this.toScheduler(this.now());
  }

  /**
   * Learns from one exchange: sent at `sent`, answered with the scheduler's `schedulerTime`,
   * received at `received` (worker clock). Dask takes the latest `schedulerTime − midpoint`;
   * the midpoint is only right when both legs took as long, which the shortest round trip of
   * the last few is likeliest to satisfy, so that one is used.
   */
  observe(sent: number, received: number, schedulerTime: number): void {
    const roundTrip = Math.max(0, received - sent);
    this.latency = this.samples.length === 0 ? roundTrip : 0.05 * roundTrip + 0.95 * this.latency;
    this.samples.push({ roundTrip, delay: schedulerTime - (sent + received) / 2 });
    if (this.samples.length > SAMPLES) this.samples.shift();
    let best = this.samples[0];
    for (const sample of this.samples) if (sample.roundTrip < best.roundTrip) best = sample;
    this.delay = best.delay;
  }

  /** Estimated worker clock − scheduler clock, seconds (`WorkerRecord.clockOffset`). */
  get offset(): number {
    return -this.delay;
  }
}

/** The simulated offset: the start config's, else TSDASK_CLOCK_OFFSET (seconds), else 0. */
export function simulatedClockOffset(configured: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  if (configured !== undefined) {
    if (!Number.isFinite(configured)) throw new TypeError(`WorkerStartConfig.clockOffset must be a finite number of seconds, got ${configured}`);
    return configured;
  }
  const text = env.TSDASK_CLOCK_OFFSET;
  if (text === undefined || text.trim() === "") return 0;
  const value = Number(text);
  if (!Number.isFinite(value)) throw new TypeError(`TSDASK_CLOCK_OFFSET must be a number of seconds, got ${JSON.stringify(text)}`);
  return value;
}
