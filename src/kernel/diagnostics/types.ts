// Records the profilers collect, and the snapshot a profiler hands to visualize().
// Times are epoch seconds (float) on one clock shared by every thread and process.

import type { WorkerId } from "../callbacks/state";
import type { Key } from "../graph/keys";

/** One task run (Profiler). */
export interface TaskData {
  readonly key: Key;
  readonly task: unknown;
  readonly startTime: number;
  readonly endTime: number;
  readonly workerId: WorkerId;
}

/** One sample of the process tree (ResourceProfiler): memory in MB, CPU in % of one core. */
export interface ResourceData {
  readonly time: number;
  readonly mem: number;
  readonly cpu: number;
}

/** One result's stay in the scheduler's cache (CacheProfiler). */
export interface CacheData {
  readonly key: Key;
  readonly task: unknown;
  readonly metric: number;
  readonly cacheTime: number;
  readonly freeTime: number;
}

/** What a profiler gives visualize(): its records and the block's time span. */
export type ProfileSnapshot =
  | { readonly kind: "tasks"; readonly results: readonly TaskData[]; readonly startTime: number; readonly endTime: number }
  | { readonly kind: "resources"; readonly results: readonly ResourceData[]; readonly startTime: number; readonly endTime: number }
  | {
      readonly kind: "cache";
      readonly results: readonly CacheData[];
      readonly startTime: number;
      readonly endTime: number;
      readonly metricName: string;
    };

/** Implemented by Profiler, ResourceProfiler and CacheProfiler. */
export interface Visualizable {
  snapshot(): ProfileSnapshot;
}

export { now } from "../clock";
