// exportTrace(): the profilers' records as Chrome Trace Event JSON, for Perfetto UI and
// chrome://tracing — full detail where the plots aggregate. Each profiler is one "process";
// a worker is one thread; resource samples and cache sizes are counters.

import { closeSync, openSync, writeSync } from "node:fs";
import { resolve } from "node:path";
import { formatKey } from "../../graph/keys";
import type { CacheData, ProfileSnapshot, ResourceData, TaskData, Visualizable } from "../types";
import { type TimeFrame, timeFrame } from "./frame";
import { rankGroups } from "../../../protocol/plot/groups";
import { groupWeights, recordGroups, taskFunctionName } from "./groups";
import { workerRows } from "./tasks";

/** One Trace Event; `ts` and `dur` in microseconds. */
interface TraceEvent {
  readonly name: string;
  readonly ph: "X" | "C" | "M";
  readonly pid: number;
  readonly tid?: number;
  readonly ts?: number;
  readonly dur?: number;
  readonly cat?: string;
  readonly args?: Record<string, unknown>;
}

/**
 * Writes the trace of `profilers` to `file` and returns its absolute path. Times are
 * microseconds since the earliest profiler's block start, the same origin the plots use.
 */
export function exportTrace(profilers: Visualizable | readonly Visualizable[], file: string): string {
  if (typeof file !== "string" || file.length === 0) throw new TypeError(`exportTrace needs a file name, got ${JSON.stringify(file)}`);
  const list = Array.isArray(profilers) ? (profilers as readonly Visualizable[]) : [profilers as Visualizable];
  list.forEach((profiler, i) => {
    if (typeof (profiler as Partial<Visualizable> | null)?.snapshot !== "function") {
      throw new TypeError(`exportTrace takes profilers (objects with snapshot()); position ${i} is not one`);
    }
  });
  const snapshots = list.map((profiler) => profiler.snapshot());
  const path = resolve(file);
  const fd = openSync(path, "w");
  try {
    const out = new ChunkedWriter(fd);
    out.write('{"displayTimeUnit":"ms","traceEvents":[\n');
    for (const event of traceEvents(snapshots)) out.event(event);
    out.write("\n]}\n");
    out.flush();
  } finally {
    closeSync(fd);
  }
  return path;
}

/** Writes in ~1 MB pieces: a million-task trace never exists as one string. */
class ChunkedWriter {
  private buffer: string[] = [];
  private size = 0;
  private first = true;
  constructor(private readonly fd: number) {}

  event(event: TraceEvent): void {
    this.write((this.first ? "" : ",\n") + JSON.stringify(event));
    this.first = false;
  }

  write(text: string): void {
    this.buffer.push(text);
    this.size += text.length;
    if (this.size > 1 << 20) this.flush();
  }

  flush(): void {
    writeSync(this.fd, this.buffer.join(""));
    this.buffer = [];
    this.size = 0;
  }
}

export function* traceEvents(snapshots: readonly ProfileSnapshot[]): Generator<TraceEvent> {
  const frame = timeFrame(snapshots);
  const groups = recordGroups(snapshots);
  const ranked = rankGroups(groupWeights(snapshots, groups));
  for (const [i, snapshot] of snapshots.entries()) {
    const pid = i + 1;
    const label = snapshot.kind === "tasks" ? "Tasks" : snapshot.kind === "resources" ? "Resources" : `Cache (${snapshot.metricName})`;
    yield { name: "process_name", ph: "M", pid, ts: 0, args: { name: label } };
    yield { name: "process_sort_index", ph: "M", pid, ts: 0, args: { sort_index: i } };
    if (snapshot.kind === "tasks") yield* taskEvents(snapshot.results, groups.get(snapshot) as string[], frame, pid);
    else if (snapshot.kind === "resources") yield* resourceEvents(snapshot.results, frame, pid);
    else yield* cacheEvents(snapshot.results, groups.get(snapshot) as string[], snapshot.metricName, ranked.colorGroup, frame, pid);
  }
}

function micros(seconds: number, frame: TimeFrame): number {
  return Math.round((seconds - frame.origin) * 1e9) / 1e3;
}

/**
 * One complete ("X") event per task on its worker's thread. Trace viewers cannot show
 * overlapping events on one thread; a worker's Profiler intervals never overlap, but records
 * from elsewhere might, so an overlapping task moves to an extra "overlap" thread of its worker.
 */
function* taskEvents(tasks: readonly TaskData[], groups: readonly string[], frame: TimeFrame, pid: number): Generator<TraceEvent> {
  const rows = workerRows(tasks);
  const byRow: number[][] = rows.labels.map(() => []);
  tasks.forEach((_, i) => byRow[rows.rowOf[i]].push(i));
  let nextTid = rows.labels.length + 1;
  for (const [row, indices] of byRow.entries()) {
    indices.sort((a, b) => tasks[a].startTime - tasks[b].startTime);
    const lanes: { tid: number; end: number }[] = [{ tid: row + 1, end: -Infinity }];
    const name = rows.labels[row] === "main" ? "main" : `worker ${rows.labels[row]}`;
    yield { name: "thread_name", ph: "M", pid, tid: row + 1, ts: 0, args: { name } };
    yield { name: "thread_sort_index", ph: "M", pid, tid: row + 1, ts: 0, args: { sort_index: row } };
    for (const i of indices) {
      const task = tasks[i];
      const ts = micros(task.startTime, frame);
      const end = micros(task.endTime, frame);
      let lane = lanes.find((l) => l.end <= ts);
      if (lane === undefined) {
        lane = { tid: nextTid++, end: -Infinity };
        yield { name: "thread_name", ph: "M", pid, tid: lane.tid, ts: 0, args: { name: `${name} (overlap ${lanes.length})` } };
        yield { name: "thread_sort_index", ph: "M", pid, tid: lane.tid, ts: 0, args: { sort_index: row } };
        lanes.push(lane);
      }
      lane.end = Math.max(end, ts);
      const fn = taskFunctionName(task.task);
      yield {
        name: groups[i],
        cat: "task",
        ph: "X",
        pid,
        tid: lane.tid,
        ts,
        dur: Math.max(0, end - ts),
        args: fn === "" ? { key: formatKey(task.key) } : { key: formatKey(task.key), function: fn },
      };
    }
  }
}

function* resourceEvents(samples: readonly ResourceData[], frame: TimeFrame, pid: number): Generator<TraceEvent> {
  for (const sample of samples) {
    const ts = micros(sample.time, frame);
    yield { name: "CPU", ph: "C", pid, ts, args: { "% CPU": sample.cpu } };
    yield { name: "Memory", ph: "C", pid, ts, args: { MB: sample.mem } };
  }
}

/** Per group, a counter of the summed metric in the cache, emitted at every change. */
function* cacheEvents(
  entries: readonly CacheData[],
  groups: readonly string[],
  metricName: string,
  colorGroup: (group: string) => string,
  frame: TimeFrame,
  pid: number,
): Generator<TraceEvent> {
  const changes: { ts: number; group: string; delta: number }[] = [];
  for (const [i, entry] of entries.entries()) {
    const group = colorGroup(groups[i]);
    changes.push({ ts: micros(entry.cacheTime, frame), group, delta: entry.metric });
    changes.push({ ts: micros(entry.freeTime, frame), group, delta: -entry.metric });
  }
  changes.sort((a, b) => a.ts - b.ts || a.delta - b.delta);
  const held = new Map<string, number>();
  for (const change of changes) {
    const value = (held.get(change.group) ?? 0) + change.delta;
    held.set(change.group, value);
    yield { name: change.group, ph: "C", pid, ts: change.ts, args: { [metricName]: value } };
  }
}
