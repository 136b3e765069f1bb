// CacheProfiler: how long each result stayed in the scheduler's cache, weighed by a metric
// (Dask's CacheData), for the cache-size-over-time plot.

import type { Graph } from "../graph/graph";
import type { Key } from "../graph/keys";
import type { State } from "../callbacks/state";
import { checkNames } from "../names";
import { Recorder } from "./recorder";
import { type CacheData, type ProfileSnapshot, type Visualizable, now } from "./types";

export interface CacheProfilerOptions {
  /** Weighs each result, called once per finished task; default: every result counts 1. */
  readonly metric?: (value: unknown) => number;
  /** The metric's name for plot labels; default: the function's name, else "count". */
  readonly metricName?: string;
}

/** A result still in the cache. */
interface Cached {
  readonly task: unknown;
  readonly metric: number;
  readonly cacheTime: number;
}

interface CacheRun {
  readonly cached: Map<Key, Cached>;
  /** `state.released.size` when last looked at: releases happen only when it grows. */
  released: number;
}

const countOne = (): number => 1;

/**
 * Records, for each task result, its metric, when it entered the cache (the task finished) and
 * when it left (its data was released, or the computation ended).
 */
export class CacheProfiler extends Recorder<CacheRun> implements Visualizable {
  results: CacheData[] = [];
  readonly metric: (value: unknown) => number;
  readonly metricName: string;

  constructor(options: CacheProfilerOptions = {}) {
    super();
    checkNames(options, ["metric", "metricName"], "CacheProfiler option");
    const { metric, metricName } = options;
    if (metric !== undefined && typeof metric !== "function") {
      throw new TypeError(`CacheProfiler option metric must be a function, got ${typeof metric}`);
    }
    if (metricName !== undefined && typeof metricName !== "string") {
      throw new TypeError(`CacheProfiler option metricName must be a string, got ${typeof metricName}`);
    }
    this.metric = metric ?? countOne;
    // An anonymous function has name "": label it "metric" rather than claim it counts.
    this.metricName = metricName ?? (metric === undefined ? "count" : metric.name || "metric");
  }

  protected newRun(): CacheRun {
    return { cached: new Map(), released: 0 };
  }

  protected override endRun(run: CacheRun | undefined, time: number): void {
    if (run === undefined) return;
    // Requested results (and, after an error, whatever was cached) leave the cache with the computation.
    for (const [key, entry] of run.cached) this.record(key, entry, time);
    run.cached.clear();
  }

  override clear(): void {
    super.clear();
    this.results = [];
  }

  override posttask(key: Key, value: unknown, dsk: Graph, state: State): void {
    const time = now();
    const run = this.run(state);
    run.cached.set(key, { task: dsk.get(key), metric: this.metric(value), cacheTime: time });
    const released = state.released.size;
    if (released === run.released) return;
    run.released = released;
    // Finishing `key` can only release its own dependencies, so only they need a look.
    for (const dependency of state.dependencies.get(key) ?? []) {
      const entry = run.cached.get(dependency);
      if (entry !== undefined && state.released.has(dependency)) {
        run.cached.delete(dependency);
        this.record(dependency, entry, time);
      }
    }
  }

  private record(key: Key, entry: Cached, freeTime: number): void {
    this.results.push({ key, task: entry.task, metric: entry.metric, cacheTime: entry.cacheTime, freeTime });
  }

  snapshot(): ProfileSnapshot {
    const { results } = this;
    const span = this.spanOf(results, (r) => r.cacheTime, (r) => r.freeTime);
    return { kind: "cache", results: [...results], metricName: this.metricName, ...span };
  }
}
