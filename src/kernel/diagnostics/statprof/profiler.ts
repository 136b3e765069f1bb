// StatisticalProfiler: Dask's worker profiler as a local callback (beyond Dask, whose local
// schedulers have none). Every thread that runs tasks — the calling thread for "sync", the pool's
// workers for "threads" and "processes" — samples its stack while the profiler is active, and
// the samples become Dask's trees per task prefix and per cycle window.

import type { DisplayHandle } from "../../display";
import type { ProfileKind, ProfileWindow } from "../../../protocol/profile";
import { computeProfile, profileOf, profilePrefixes, profileTimeline } from "../../../protocol/profile";
import type { ProfileNode, ProfileTimelinePoint } from "../../../protocol/records";
import { Callback } from "../../callbacks/callback";
import { type Key, keyPrefix } from "../../graph/keys";
import { profileSection } from "../../dashboard/bounds";
import { showLatest } from "../../dashboard/latest";
import { withSourceLocations } from "../../profiling/fold";
import { type ProfilingLease, checkProfilingOptions, profiling } from "../../profiling/hub";
import { callingThread } from "../../profiling/main-thread";
import { now } from "../types";
import { ProfileFigure, type ProfileFigureOptions } from "./figure";

export interface StatisticalProfilerOptions {
  /** Seconds between samples (Dask's profile-interval). Default 0.01. */
  readonly interval?: number;
  /** Seconds per window of the timeline (Dask's profile-cycle-interval). Default 1. */
  readonly cycle?: number;
}

/** What to select from the profile: Dask's `client.profile(key=, start=, stop=)`, plus the administrative side. */
export interface ProfileSelection {
  /** A task prefix ("inc") or a key whose prefix is meant ("inc-3f2a…", ["x", 0]); several in an array of strings. */
  readonly key?: Key | readonly string[];
  /** Epoch seconds. */
  readonly start?: number;
  readonly stop?: number;
  /** "compute" (default): samples taken in tasks; "administrative": the threads' other work. */
  readonly kind?: ProfileKind;
}

/**
 * Samples the stacks of the threads running tasks while it is active: for a `withCallbacks` block
 * (results complete when the block's promise settles), or from each computation's start to its
 * finish when registered or passed to `get`. Concurrent computations in that time are sampled too,
 * as Dask's profiler samples whatever its workers run.
 */
export class StatisticalProfiler extends Callback {
  /** The windows recorded: per sampled thread and cycle, the trees per task prefix. */
  windows: ProfileWindow[] = [];
  /** When recording began and ended (epoch seconds); undefined before and while recording. */
  startTime: number | undefined = undefined;
  endTime: number | undefined = undefined;
  readonly interval: number;
  readonly cycle: number;
  /** The interval in force while recording (another profiler's, if its lease came first). */
  private sampledInterval: number;
  private lease: ProfilingLease | undefined;
  private stopListening: (() => void) | undefined;
  /** Computations outside a block that are running now; sampling stops when none is. */
  private computing = 0;
  private blockDepth = 0;

  constructor(options: StatisticalProfilerOptions = {}) {
    super();
    if (options === null || typeof options !== "object") throw new TypeError(`StatisticalProfiler options must be an object, got ${options}`);
    const { interval, cycle } = checkProfilingOptions(options, "StatisticalProfiler option");
    this.interval = interval;
    this.cycle = cycle;
    this.sampledInterval = interval;
  }

  /** Seconds between samples while recording: a count × this is thread time. */
  get samplingInterval(): number {
    return this.sampledInterval;
  }

  /** The compute profile of everything recorded: Dask's tree, all task prefixes merged. */
  get results(): ProfileNode {
    return computeProfile(this.windows);
  }

  /** The threads' work outside tasks (the scheduler loop, sending and receiving, the kernel). */
  get administrative(): ProfileNode {
    return profileOf(this.windows, "administrative");
  }

  /** Task prefixes seen, busiest first, with their sample counts. */
  get prefixes(): { prefix: string; count: number }[] {
    return profilePrefixes(this.windows);
  }

  /** A part of the profile: some prefixes, a time range, the administrative side. */
  profile(selection: ProfileSelection = {}): ProfileNode {
    const { key, start, stop, kind = "compute" } = selection;
    return profileOf(this.windows, kind, { prefix: key === undefined ? undefined : prefixesOfKey(key), start, stop });
  }

  /** Samples per cycle window over time, all prefixes and per prefix (Dask's profile metadata). */
  timeline(kind: ProfileKind = "compute"): ProfileTimelinePoint[] {
    return profileTimeline(this.windows, { kind, bin: this.cycle });
  }

  /** The interactive profile (icicle over a timeline), shown in a notebook or written to a file. */
  visualize(options?: ProfileFigureOptions): DisplayHandle<ProfileFigure> {
    return ProfileFigure.show(this.windows, this.sampledInterval, options);
  }

  /** Forgets what was recorded. */
  clear(): void {
    this.windows = [];
    this.startTime = undefined;
    this.endTime = undefined;
  }

  /** Stops sampling now if it is on (a computation that never finished, say). Safe to call twice. */
  close(): void {
    this.computing = 0;
    this.end();
  }

  override blockStart(time: number): void {
    if (this.blockDepth++ > 0) return;
    this.clear();
    this.begin(time);
  }

  override async blockEnd(time: number): Promise<void> {
    if (--this.blockDepth > 0) return;
    await profiling.collect();
    this.end(time);
  }

  override start(): void {
    if (this.blockDepth === 0 && this.computing++ === 0) this.begin(now());
  }

  override finish(): void {
    // The pools' profiles came in before finish (the loop waits for them); this thread's are taken now.
    if (this.blockDepth === 0 && this.computing > 0 && --this.computing === 0) {
      callingThread.collect();
      this.end(now());
    }
  }

  override unregister(): void {
    super.unregister();
    this.close();
  }

  private begin(time: number): void {
    if (this.lease !== undefined) return;
    this.stopListening = profiling.listen((windows) => {
      for (const window of withSourceLocations(windows)) this.windows.push(window);
    });
    this.lease = profiling.acquire({ interval: this.interval, cycle: this.cycle });
    this.sampledInterval = this.lease.options.interval;
    this.startTime ??= time;
    this.endTime = undefined;
  }

  private end(time = now()): void {
    if (this.lease === undefined) return;
    this.stopListening?.();
    this.stopListening = undefined;
    this.lease.release();
    this.lease = undefined;
    this.endTime = time;
    const windows = this.windows;
    const interval = this.sampledInterval;
    if (windows.length > 0) showLatest("StatisticalProfiler", this, () => ({ profile: profileSection(windows, interval) }));
  }
}

/**
 * The task prefixes a profile's `key` option means: a prefix ("inc") or a key ("inc-3f2a…",
 * ["x", 0]) means its prefix; a list of strings, several ("inc", "dec"). A tuple key has a
 * non-string part, so ["x", 0, 1] is one key.
 */
export function prefixesOfKey(key: Key | readonly string[]): string[] {
  const several = Array.isArray(key) && key.every((part) => typeof part === "string");
  return (several ? (key as readonly string[]) : [key as Key]).map((k) => keyPrefix(k));
}
