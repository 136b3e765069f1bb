// The worker's statistical profiler (Dask's Worker profile cycles): while the worker runs, its
// task threads sample their stacks (the compute profile, per task prefix) and its main thread
// samples its own (the administrative profile), every `interval`, folded per `cycle` window by the
// process's profiling hub (kernel/profiling). It answers the scheduler's profile requests with
// the windows of a time range, on the scheduler's clock and named after the worker. Any worker
// kind (peer-to-peer, Redis) can host it: it needs only the worker's address and clock.

import { type PackedProfile, type ProfileWindow, mergeWindows, packProfile, selectWindows } from "../../../protocol/profile";
import { withSourceLocations } from "../../profiling/fold";
import { type ProfilingLease, type ProfilingOptions, DEFAULT_PROFILING, profiling } from "../../profiling/hub";
// This process's main thread as a profile source: the worker's administrative profile.
import { callingThread } from "../../profiling/main-thread";
import type { ProfileReplyMessage, ProfileRequestMessage } from "../messages";
import type { WorkerClock } from "./clock";

export class WorkerProfiler {
  private readonly lease: ProfilingLease | undefined;

  constructor(
    private readonly address: string,
    private readonly clock: WorkerClock,
    options: ProfilingOptions | false = DEFAULT_PROFILING,
  ) {
    if (options === false) return;
    // A worker's profiler starts with it: its main thread has run only the worker's start-up.
    callingThread.startsFresh();
    this.lease = profiling.acquire(options);
  }

  get enabled(): boolean {
    return this.lease !== undefined;
  }

  /** Seconds between samples (a sample count × this is thread time). */
  get interval(): number {
    return this.lease?.options.interval ?? DEFAULT_PROFILING.interval;
  }

  /**
   * The windows overlapping [start, stop) (scheduler clock), every thread's merged into one per
   * cycle. The threads hand over what they sampled so far first (a thread busy with a long task
   * answers when it ends, or not within 2 s: its samples then come with the next request).
   */
  async windows(range: { readonly start?: number; readonly stop?: number } = {}): Promise<PackedProfile> {
    if (this.lease === undefined) return packProfile([], this.interval);
    await profiling.collect();
    // Window times are on the machine's clock (V8's sample timestamps); the worker's own clock may
    // be skewed (simulated), and what it reports is on the scheduler's.
    const shift = (time: number): number => this.clock.toScheduler(this.clock.fromMachine(time));
    const shifted = profiling.windows().map((w) => ({ ...w, time: shift(w.time), stop: shift(w.stop) }));
    return packProfile(this.perCycle(withSourceLocations(selectWindows(shifted, range))), this.interval);
  }

  /**
   * The answer to a scheduler's profile request (either transport): the windows asked for, or
   * none if they cannot be read (`log` says why) — a request is always answered.
   */
  async reply(request: ProfileRequestMessage, log: (line: string) => void): Promise<ProfileReplyMessage> {
    let profile: PackedProfile;
    try {
      profile = await this.windows({ start: request.start, stop: request.stop });
    } catch (error) {
      log(`cannot read its profile: ${(error as Error).stack ?? error}`);
      profile = packProfile([], this.interval);
    }
    return { op: "profile-reply", requestId: request.requestId, profile, enabled: this.enabled };
  }

  /** Stops sampling (the worker is closing). */
  close(): void {
    this.lease?.release();
  }

  /** One window per cycle for the whole worker (its threads' windows of a cycle start together). */
  private perCycle(windows: readonly ProfileWindow[]): ProfileWindow[] {
    const byTime = new Map<number, ProfileWindow[]>();
    for (const window of windows) {
      let group = byTime.get(window.time);
      if (group === undefined) byTime.set(window.time, (group = []));
      group.push(window);
    }
    return [...byTime]
      .sort((a, b) => a[0] - b[0])
      .map(([time, group]) => mergeWindows(group, { time, stop: Math.max(...group.map((w) => w.stop)), source: this.address }));
  }
}
