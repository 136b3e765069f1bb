// Profiler snapshots for the visualize tests, made directly (plain objects implementing Visualizable),
// and a small Callback that records real task runs the way a Profiler does.

import { Callback } from "../../src/kernel/callbacks/callback";
import type { State, WorkerId } from "../../src/kernel/callbacks/state";
import type { Graph } from "../../src/kernel/graph/graph";
import type { Key } from "../../src/kernel/graph/keys";
import { type CacheData, type ProfileSnapshot, type ResourceData, type TaskData, type Visualizable, now } from "../../src/kernel/diagnostics/types";

export const T0 = 1_700_000_000;
export const XSS_KEY = "<img src=x onerror=window.__xss=1>";

export function profiler(snapshot: ProfileSnapshot): Visualizable {
  return { snapshot: () => snapshot };
}

export function tasksSnapshot(results: TaskData[], span = spanOf(results.map((t) => t.endTime))): ProfileSnapshot {
  return { kind: "tasks", results, startTime: T0, endTime: T0 + span };
}

export function resourcesSnapshot(results: ResourceData[], span = spanOf(results.map((r) => r.time))): ProfileSnapshot {
  return { kind: "resources", results, startTime: T0, endTime: T0 + span };
}

export function cacheSnapshot(results: CacheData[], metricName = "count", span = spanOf(results.map((c) => c.freeTime))): ProfileSnapshot {
  return { kind: "cache", results, startTime: T0, endTime: T0 + span, metricName };
}

function spanOf(times: number[]): number {
  return times.reduce((last, time) => Math.max(last, time - T0), 0);
}

/**
 * `count` tasks of groups "load", "add", "sum" round-robin on `workers` threads, each busy back to
 * back with tasks of 10 ms (worker 0 gets longer ones, so it is the busiest row); the last task of
 * worker 0 has `lastKey` as its key.
 */
export function makeTasks(count: number, workers = 4, lastKey?: Key): TaskData[] {
  const clock = new Array<number>(workers).fill(T0 + 0.01);
  const tasks: TaskData[] = [];
  for (let i = 0; i < count; i++) {
    const worker = i % workers;
    const duration = worker === 0 ? 0.015 : 0.01;
    const group = ["load", "add", "sum"][Math.floor(i / workers) % 3];
    const startTime = clock[worker];
    clock[worker] += duration;
    tasks.push({ key: [`${group}-0123456789abcdef0123456789abcdef`, i], task: [Math.max, 1, 2], startTime, endTime: startTime + duration, workerId: worker });
  }
  if (lastKey !== undefined) {
    const last = Math.floor((count - 1) / workers) * workers;
    tasks[last] = { ...tasks[last], key: lastKey };
  }
  return tasks;
}

/** The cache entries a CacheProfiler would record for `tasks`: each result held for 50 ms. */
export function makeCache(tasks: readonly TaskData[], metric = 1): CacheData[] {
  return tasks.map((task) => ({ key: task.key, task: task.task, metric, cacheTime: task.endTime, freeTime: task.endTime + 0.05 }));
}

export function makeResources(count: number, dt = 0.1): ResourceData[] {
  return Array.from({ length: count }, (_, i) => ({ time: T0 + i * dt, mem: 200 + 10 * i, cpu: 50 + ((i * 37) % 150) }));
}

/** Records task runs like Profiler does (pretask → start, posttask → end and worker), for tests. */
export class TaskRecorder extends Callback implements Visualizable {
  private readonly starts = new Map<Key, number>();
  private readonly results: TaskData[] = [];
  private startTime = NaN;
  private endTime = NaN;

  override blockStart(): void {
    this.startTime = now();
  }

  override blockEnd(): void {
    this.endTime = now();
  }

  override pretask(key: Key): void {
    this.starts.set(key, now());
  }

  override posttask(key: Key, _result: unknown, dsk: Graph, _state: State, workerId: WorkerId): void {
    this.results.push({ key, task: dsk.get(key), startTime: this.starts.get(key) as number, endTime: now(), workerId });
  }

  snapshot(): ProfileSnapshot {
    return { kind: "tasks", results: this.results, startTime: this.startTime, endTime: this.endTime };
  }
}
