// The scheduler's view of spans (Dask's `SpansSchedulerExtension` and `Span`), without I/O or
// clocks: events in (tasks observed with their span path, task state changes and run times,
// execute metrics with span ids, the cluster's thread count over time), SpanRecords out. The
// cluster scheduler and the local FinePerformanceMetrics callback both feed one.

import { type Interval, findByTags, mergeSpans, withIdle } from "../../protocol/fpm/spans";
import type { MetricRecord, SpanRecord, TaskStateCounts } from "../../protocol/records";
import { type Key, keyStr } from "../graph/keys";
import type { SpanPath } from "./spans";

export type TaskStateName = keyof TaskStateCounts;
/** The states spans count tasks in, in the order of `SpanTasks.counts`. */
export const SPAN_STATES: readonly TaskStateName[] = ["released", "waiting", "queued", "processing", "memory", "erred", "forgotten"];
const STATE_INDEX = Object.fromEntries(SPAN_STATES.map((state, i) => [state, i])) as Record<TaskStateName, number>;
/** States a TaskGroup can be "done" in (Dask's `TaskGroup.done`). */
const DONE_STATES: ReadonlySet<TaskStateName> = new Set(["memory", "erred", "released", "forgotten"]);
const ACTIVE_INDEXES = SPAN_STATES.flatMap((state, i) => (DONE_STATES.has(state) ? [] : [i]));

export const DEFAULT_SPAN_NAME = "default";

/** Dask's `key_split_group`: the task group a key belongs to — a tuple key's first element, any other key itself. */
export function groupOfKey(key: Key): string {
  return keyStr(Array.isArray(key) ? (key[0] as Key) : key);
}

/** A task the scheduler learned of (Dask's `update_graph`). */
export interface ObservedTask {
  /** Unique among the scheduler's live tasks (the cluster uses keyId strings). */
  readonly key: string;
  /** Dask's TaskGroup name (`key_split_group`): a group's tasks all join the span of its first task. */
  readonly group: string;
  /** The span the task was built or submitted in; undefined: the default span. */
  readonly span?: SpanPath;
  /** Its state once observed (default "waiting"). */
  readonly state?: TaskStateName;
}

/** One accumulator of an execute metric; callers on a hot path may keep it and add to `value`. */
export interface MetricCell {
  readonly prefix: string;
  readonly activity: string;
  readonly unit: string;
  value: number;
}

/**
 * A span's task tally, for a scheduler that keeps each task's span itself (the cluster's task
 * table): tasks move between states with `counts[from]--; counts[to]++`, no lookup per task.
 */
export interface SpanTasks {
  readonly id: string;
  /** Tasks per state, indexed in the order of SPAN_STATES. */
  readonly counts: Float64Array;
  /** A task of the span ran from `start` to `stop` (epoch seconds) and its result holds `nbytes`. */
  ran(start: number, stop: number, nbytes: number): void;
}

class Span implements SpanTasks {
  readonly children: Span[] = [];
  readonly counts = new Float64Array(SPAN_STATES.length);
  /** Earliest start and latest stop of the tasks that ran here (not the subtree); start 0 until one ran. */
  start = 0;
  stop = 0;
  nbytesTotal = 0;
  readonly metrics = new Map<string, MetricCell>();

  constructor(
    readonly id: string,
    readonly name: readonly string[],
    readonly parent: Span | null,
    readonly enqueued: number,
    /** The thread-count history entry in force when the span was opened. */
    readonly historyFrom: number,
  ) {}

  ran(start: number, stop: number, nbytes: number): void {
    if (this.start === 0 || start < this.start) this.start = start;
    if (stop > this.stop) this.stop = stop;
    this.nbytesTotal += nbytes;
  }

  /** Pre-order: this span, then its children's subtrees in creation order. */
  *subtree(): IterableIterator<Span> {
    yield this;
    for (const child of this.children) yield* child.subtree();
  }

  /** Dask's `TaskGroup.done` over this span's own tasks. */
  get ownDone(): boolean {
    return ACTIVE_INDEXES.every((i) => this.counts[i] === 0);
  }
}

interface Group {
  readonly name: string;
  readonly span: Span;
  /** Tasks of the group not forgotten yet; at 0 the group is gone and its name may bind anew. */
  live: number;
}

interface Task {
  readonly span: Span;
  readonly group: Group;
  state: TaskStateName;
}

export class SpansState {
  private readonly byId = new Map<string, Span>();
  private readonly roots: Span[] = [];
  private readonly byName = new Map<string, Span[]>();
  private readonly byTag = new Map<string, Span[]>();
  /** (time, threads) whenever the cluster's thread count changed (Dask's `total_nthreads_history`). */
  private readonly threads: [number, number][] = [];
  private readonly tasks = new Map<string, Task>();
  private readonly groups = new Map<string, Group>();
  private lastDefault: Span | undefined;
  private defaultCount = 0;

  // ---- The cluster ------------------------------------------------------------------------------

  /** The cluster's total threads changed (a worker joined or left; a local computation began). */
  setTotalThreads(time: number, threads: number): void {
    const last = this.threads[this.threads.length - 1];
    if (last !== undefined && last[1] === threads) return;
    if (last !== undefined && last[0] >= time) last[1] = threads;
    else this.threads.push([time, threads]);
  }

  // ---- Spans ------------------------------------------------------------------------------------

  /**
   * The id of the span `path` names (created, with its missing ancestors, if new), or for no path
   * the default span: the latest one while it has unfinished tasks, else a new one (Dask's rule).
   */
  ensureSpan(path: SpanPath | undefined, time: number): string {
    if (path === undefined || path.ids.length === 0) {
      if (this.lastDefault === undefined || this.isDone(this.lastDefault)) {
        this.lastDefault = this.create(`default-${++this.defaultCount}`, [DEFAULT_SPAN_NAME], null, time);
      }
      return this.lastDefault.id;
    }
    if (path.names.length !== path.ids.length) throw new RangeError(`A span path needs one id per name, got ${JSON.stringify(path)}`);
    let parent: Span | null = null;
    for (let depth = 0; depth < path.ids.length; depth++) {
      parent = this.byId.get(path.ids[depth]) ?? this.create(path.ids[depth], path.names.slice(0, depth + 1), parent, time);
    }
    return parent!.id;
  }

  private create(id: string, name: readonly string[], parent: Span | null, time: number): Span {
    const span = new Span(id, name, parent, time, this.threads.length - 1);
    this.byId.set(id, span);
    (parent?.children ?? this.roots).push(span);
    const nameKey = JSON.stringify(name);
    this.byName.set(nameKey, [...(this.byName.get(nameKey) ?? []), span]);
    for (const tag of new Set(name)) this.byTag.set(tag, [...(this.byTag.get(tag) ?? []), span]);
    return span;
  }

  private span(id: string): Span {
    const span = this.byId.get(id);
    if (span === undefined) throw new RangeError(`No span with id ${JSON.stringify(id)}`);
    return span;
  }

  // ---- Tasks, by key (a scheduler that tracks its tasks) ----------------------------------------

  /**
   * New tasks (Dask's `observe_tasks`), returning each one's span id. A task group belongs to the
   * span of its first task: later tasks of the group join it whatever span they name.
   */
  observeTasks(tasks: Iterable<ObservedTask>, time: number): string[] {
    const ids: string[] = [];
    for (const task of tasks) {
      if (this.tasks.has(task.key)) {
        ids.push(this.tasks.get(task.key)!.span.id);
        continue;
      }
      let group = this.groups.get(task.group);
      if (group === undefined) {
        group = { name: task.group, span: this.span(this.ensureSpan(task.span, time)), live: 0 };
        this.groups.set(task.group, group);
      }
      group.live++;
      const state = task.state ?? "waiting";
      this.tasks.set(task.key, { span: group.span, group, state });
      group.span.counts[STATE_INDEX[state]]++;
      ids.push(group.span.id);
    }
    return ids;
  }

  /** The span id of a live task, if the state knows it. */
  spanOf(key: string): string | undefined {
    return this.tasks.get(key)?.span.id;
  }

  /** A task moved to state `to`; "forgotten" drops it (its group too, once empty). */
  transition(key: string, to: TaskStateName): void {
    const task = this.tasks.get(key);
    if (task === undefined) return;
    task.span.counts[STATE_INDEX[task.state]]--;
    task.span.counts[STATE_INDEX[to]]++;
    task.state = to;
    if (to === "forgotten") {
      this.tasks.delete(key);
      if (--task.group.live === 0) this.groups.delete(task.group.name);
    }
  }

  /** A task finished: it ran from `start` to `stop` (epoch seconds) and its result holds `nbytes`. */
  taskFinished(key: string, start: number, stop: number, nbytes: number): void {
    const task = this.tasks.get(key);
    if (task === undefined) return;
    this.transition(key, "memory");
    this.taskRan(task.span.id, start, stop, nbytes);
  }

  // ---- Tasks, as counts (a caller that tracks tasks itself, like the local callback) -----------

  /** `count` tasks of a span moved from one state to another (from null: newly observed). */
  countTasks(spanId: string, from: TaskStateName | null, to: TaskStateName, count = 1): void {
    const span = this.span(spanId);
    if (from !== null) span.counts[STATE_INDEX[from]] -= count;
    span.counts[STATE_INDEX[to]] += count;
  }

  /** A task of the span ran from `start` to `stop` and made `nbytes` of result. */
  taskRan(spanId: string, start: number, stop: number, nbytes: number): void {
    this.span(spanId).ran(start, stop, nbytes);
  }

  /** The task tally of a span, to keep per task (see SpanTasks). */
  tasksOf(spanId: string): SpanTasks {
    return this.span(spanId);
  }

  // ---- Metrics ----------------------------------------------------------------------------------

  /** Workers' execute digests (records with a span id, as heartbeats carry them); others are ignored. */
  addMetrics(records: Iterable<MetricRecord>): void {
    for (const record of records) {
      if (record.context !== "execute" || record.span === undefined || !this.byId.has(record.span)) continue;
      this.metricCell(record.span, record.prefix ?? "N/A", record.activity, record.unit).value += record.value;
    }
  }

  /** The accumulator of one execute metric of a span, created at 0. */
  metricCell(spanId: string, prefix: string, activity: string, unit: string): MetricCell {
    const span = this.span(spanId);
    const key = `${prefix}\u0000${activity}\u0000${unit}`;
    let cell = span.metrics.get(key);
    if (cell === undefined) span.metrics.set(key, (cell = { prefix, activity, unit, value: 0 }));
    return cell;
  }

  // ---- Reading ----------------------------------------------------------------------------------

  /** Every span's own execute metrics, with its id: the workers' digests, summed. */
  metricRecords(): MetricRecord[] {
    const records: MetricRecord[] = [];
    for (const span of this.byId.values()) {
      for (const { prefix, activity, unit, value } of span.metrics.values()) {
        records.push({ context: "execute", span: span.id, prefix, activity, unit, value });
      }
    }
    return records;
  }

  /** Every span in creation order, as records; `now` is the stop of spans still running. */
  records(now: number): SpanRecord[] {
    return [...this.byId.values()].map((span) => this.record(span, now));
  }

  /** One span as a record. */
  get(id: string, now: number): SpanRecord | undefined {
    const span = this.byId.get(id);
    return span === undefined ? undefined : this.record(span, now);
  }

  /** Top-level spans, in creation order (Dask's `root_spans`). */
  rootIds(): string[] {
    return this.roots.map((span) => span.id);
  }

  /** Spans by their full name, in creation order (Dask's `spans_search_by_name`). */
  idsByName(name: readonly string[]): string[] {
    return (this.byName.get(JSON.stringify(name)) ?? []).map((span) => span.id);
  }

  /** Spans whose name holds `tag`, in creation order (Dask's `spans_search_by_tag`). */
  idsByTag(tag: string): string[] {
    return (this.byTag.get(tag) ?? []).map((span) => span.id);
  }

  /** Every tag, in the order first seen. */
  tags(): string[] {
    return [...this.byTag.keys()];
  }

  /** Dask's `find_by_tags`: spans holding any tag, the top-most only. */
  findByTags(tags: readonly string[], now: number): SpanRecord[] {
    return findByTags(this.records(now), tags);
  }

  /** Dask's `merge_by_tags`: one merged span of the spans `findByTags` gives; an error if none. */
  mergeByTags(tags: readonly string[], now: number): SpanRecord {
    const found = this.findByTags(tags, now);
    if (found.length === 0) throw new RangeError(`No span has any of the tags ${JSON.stringify(tags)}`);
    return mergeSpans(found, now);
  }

  /** Dask's `merge_all`: every root span merged; an error when there is none. */
  mergeAll(now: number): SpanRecord {
    if (this.roots.length === 0) throw new RangeError("There are no spans to merge");
    return mergeSpans(
      this.roots.map((span) => this.record(span, now)),
      now,
    );
  }

  private isDone(span: Span): boolean {
    for (const node of span.subtree()) if (!node.ownDone) return false;
    return true;
  }

  private record(span: Span, now: number): SpanRecord {
    const states: Record<string, number> = {};
    const metrics = new Map<string, MetricRecord>();
    let executeSeconds = 0;
    let start = 0;
    let lastStop = 0;
    let nbytesTotal = 0;
    let done = true;
    for (const node of span.subtree()) {
      SPAN_STATES.forEach((state, i) => {
        if (node.counts[i] !== 0) states[state] = (states[state] ?? 0) + node.counts[i];
      });
      for (const [key, cell] of node.metrics) {
        if (cell.unit === "seconds") executeSeconds += cell.value;
        const seen = metrics.get(key);
        const value = (seen?.value ?? 0) + cell.value;
        metrics.set(key, { context: "execute", prefix: cell.prefix, activity: cell.activity, unit: cell.unit, value });
      }
      if (node.start > 0 && (start === 0 || node.start < start)) start = node.start;
      lastStop = Math.max(lastStop, node.stop);
      nbytesTotal += node.nbytesTotal;
      done &&= node.ownDone;
    }
    const stop = Math.max(span.enqueued, done ? lastStop : now);
    const intervals = this.intervals(span, stop);
    const activeCpuSeconds = intervals.reduce((sum, [from, to, threads]) => sum + (to - from) * threads, 0);
    return {
      id: span.id,
      name: span.name,
      parent: span.parent?.id ?? null,
      children: span.children.map((child) => child.id),
      enqueued: span.enqueued,
      start: start === 0 ? 0 : Math.max(start, span.enqueued),
      stop,
      done,
      states,
      activeCpuSeconds,
      intervals,
      nbytesTotal,
      metrics: withIdle([...metrics.values()], activeCpuSeconds, executeSeconds),
    };
  }

  /** Dask's `nthreads_intervals`: the thread count over [enqueued, stop], from the history. */
  private intervals(span: Span, stop: number): Interval[] {
    const intervals: Interval[] = [];
    for (let i = Math.max(0, span.historyFrom); i < this.threads.length; i++) {
      const [time, threads] = this.threads[i];
      const from = Math.max(time, span.enqueued);
      const to = Math.min(this.threads[i + 1]?.[0] ?? stop, stop);
      if (to > from && threads > 0) intervals.push([from, to, threads]);
    }
    return intervals;
  }
}
