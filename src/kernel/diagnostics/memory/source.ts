// Where MemorySampler's numbers come from. The local source measures this process tree (the
// ResourceProfiler's /proc sampler, on its own thread so samples go on while a task blocks the
// main thread) and the results the local schedulers hold; a cluster source (later) reads the
// scheduler's heartbeat memory. Both take a first sample at once, as Dask's sampler does.

import { withCallbacks } from "../../callbacks/callback";
import { now } from "../../clock";
import { CacheProfiler } from "../cache";
import { nbytes } from "../../metrics/nbytes";
import { acquireSamplerThread, releaseSamplerThread } from "../resource";
import { newSampler, processCpuMicros } from "../sampler";
import { type MemoryMeasure, type MemoryPoint, MEASURE_TITLES } from "../../../protocol/memory";

export interface MemorySource {
  /** What it measures, for messages ("this process and its children", "cluster tcp://…"). */
  readonly description: string;
  /**
   * Starts recording `measure` every `interval` seconds, the first sample at once. Throws a
   * TypeError naming the measure when this source cannot give it.
   */
  record(measure: MemoryMeasure, interval: number): MemoryRecording;
}

export interface MemoryRecording {
  /** Runs the sampled block (a source may watch it, as the local one watches results with callbacks). */
  run<T>(block: () => Promise<T>): Promise<T>;
  /** Stops and returns the samples, oldest first. */
  stop(): Promise<MemoryPoint[]>;
}

/** The local measures, and why the others are not offered. */
const LOCAL_MEASURES: Readonly<Partial<Record<MemoryMeasure, string>>> = {
  spilled: "the local schedulers never spill results to disk",
  unmanagedOld: "it is a cluster's minimum over its heartbeat history",
  unmanagedRecent: "it is a cluster's figure from its heartbeat history",
  optimistic: "it is a cluster's figure from its heartbeat history",
};

/**
 * This process and its descendants (pool workers): "process" is their resident memory (what
 * ResourceProfiler reports), "managed" the estimated bytes (nbytes) of the results the local
 * schedulers hold while the block runs, "unmanaged" the difference, "managedTotal" = managed
 * (nothing spills). The cluster-only measures are refused with the reason.
 */
export const localMemory: MemorySource = {
  description: "this process and its children",
  record(measure: MemoryMeasure, interval: number): MemoryRecording {
    const refused = LOCAL_MEASURES[measure];
    if (refused !== undefined) {
      throw new TypeError(`MemorySampler: measure "${measure}" (${MEASURE_TITLES[measure]}) needs a cluster: ${refused}. Locally: process, managed, unmanaged, managedTotal`);
    }
    // The first sample is taken here and now (the sampler thread needs tens of ms to boot).
    const first = firstSample();
    const thread = acquireSamplerThread();
    thread.begin(first?.[0] ?? now(), interval, first === undefined ? 0 : interval);
    const results = measure === "process" ? undefined : new CacheProfiler({ metric: nbytes, metricName: "nbytes" });
    return {
      run: (block) => (results === undefined ? block() : withCallbacks(results, block)),
      async stop() {
        let samples: [number, number, number][];
        try {
          samples = thread.pause();
        } finally {
          releaseSamplerThread(thread);
        }
        const process = [...(first === undefined ? [] : [first]), ...samples.map(([time, mb]): MemoryPoint => [time, Math.round(mb * 1e6)])];
        if (results === undefined) return process;
        const managed = heldAt(results, process.map(([time]) => time));
        return process.map(([time, bytes], i): MemoryPoint => [time, measure === "unmanaged" ? Math.max(0, bytes - managed[i]) : managed[i]]);
      },
    };
  },
};

/** This process tree's resident bytes now, read on the calling thread; undefined where that needs an asynchronous tool. */
function firstSample(): MemoryPoint | undefined {
  const sampler = newSampler();
  const time = now();
  sampler.restart({ time, cpuMicros: processCpuMicros() });
  const sample = sampler.sample();
  return sample instanceof Promise ? undefined : [time, Math.round(sample.mem * 1e6)];
}

/** Bytes of results held at each of `times` (ascending), from the cache entries' stays. */
function heldAt(cache: CacheProfiler, times: readonly number[]): number[] {
  const events: [number, number][] = [];
  for (const entry of cache.results) {
    events.push([entry.cacheTime, entry.metric], [entry.freeTime, -entry.metric]);
  }
  events.sort((a, b) => a[0] - b[0]);
  const held: number[] = [];
  let total = 0;
  let next = 0;
  for (const time of times) {
    while (next < events.length && events[next][0] <= time) total += events[next++][1];
    held.push(Math.max(0, total));
  }
  return held;
}
