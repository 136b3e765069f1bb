// FinePerformanceMetrics: Dask's fine performance metrics for the local schedulers (sync, threads,
// processes), as a callback. It breaks a computation's thread time down by task prefix and by
// activity — the tasks' own thread-cpu / thread-noncpu and contextMeter labels measured where
// they ran, serialize and executor overhead, and idle — and by span.

import { inspect } from "node:util";
import { Callback, type TaskInfo } from "../../callbacks/callback";
import type { State, WorkerId } from "../../callbacks/state";
import { now } from "../../clock";
import type { Graph } from "../../graph/graph";
import { type Key, keyPrefix } from "../../graph/keys";
import { estimateNbytes } from "../../metrics/nbytes";
import { type FpmData, type FpmModel, type FpmSelection, DEFAULT_SELECTION, fpmModel } from "../../../protocol/fpm";
import type { MetricRecord, SpanRecord } from "../../../protocol/records";
import { MEASURES_TASKS, threadsOf } from "../../metrics/computations";
import { type MetricCell, SpansState } from "../../metrics/spans-state";
import { anyTaskTagged, currentSpan, spanOfSpec } from "../../metrics/spans";
import type { DisplayHandle } from "../../display";
import { type FpmPanel, type FpmPanelOptions, metricsTable, showPanel } from "./panel";

/** The accumulators of one (span, task prefix): the activities every task has, kept at hand. */
interface Bucket {
  readonly span: string;
  readonly prefix: string;
  readonly cpu: MetricCell;
  readonly noncpu: MetricCell;
  readonly executor: MetricCell;
  /** Any other activity and unit (user metrics, serialize), by `activity\0unit`. */
  readonly others: Map<string, MetricCell>;
}

/** One computation's bookkeeping. */
interface Run {
  /** Epoch seconds its tasks were known: the start of its spans' budgets. */
  readonly enqueued: number;
  /** The span of tasks no collection tagged: the one active where the graph was computed ("" if none is). */
  readonly span: string;
  /** Tasks that belong to another span than `span` (only when collections tagged tasks). */
  readonly spanOfKey: Map<Key, string> | undefined;
  /** Tasks per span, and how many of them finished. */
  readonly tasks: Map<string, { total: number; finished: number }>;
  readonly buckets: Map<string, Bucket>;
  /** Dispatch times (epoch s): the last one apart, so one task at a time costs no map operations. */
  dispatchKey: Key | undefined;
  dispatchTime: number;
  readonly dispatched: Map<Key, number>;
  readonly prefixes: Map<string, string>;
  lastBucket: Bucket | undefined;
}

/**
 * Collects fine performance metrics of the computations it sees (use it like any callback:
 * `withCallbacks(fpm, …)`, `register()`, or `get(…, { callbacks: [fpm] })`). Metrics accumulate
 * over computations until `clear()`, like a cluster's.
 *
 * Activities, in seconds of thread time per task prefix: `thread-cpu` and `thread-noncpu` (the
 * task's thread on and off a CPU, outside the user's meters), the user's `contextMeter` labels,
 * `serialize` (cloning a batch of tasks to a pool worker), `executor` (the rest of the wait before
 * a task starts once its thread is free: waking the worker, receiving the task; on the sync
 * scheduler, the scheduler loop between tasks), and `idle` (a thread's free time while the
 * computation ran). They add up to wall time × threads. Other units (bytes, counts…) are whatever
 * tasks digest.
 */
export class FinePerformanceMetrics extends Callback {
  /** Asks the sync scheduler to measure its tasks too (the pools always do). */
  readonly [MEASURES_TASKS] = true;
  private spansState = new SpansState();
  private readonly runs = new Map<State, Run>();
  private lastState: State | undefined;
  private lastRun: Run | undefined;
  /** The thread counts of the computations seen, for the panel's description. */
  private readonly threadCounts = new Set<number>();
  /**
   * When each thread last finished a task (epoch s), whichever computation it was for: a task's
   * wait is counted from then at the earliest, so time a thread spent on another task is not its.
   */
  private readonly lastEnd = new Map<WorkerId, number>();

  override startState(dsk: Graph, state: State): void {
    const enqueued = now();
    const threads = threadsOf(state);
    this.threadCounts.add(threads);
    this.spansState.setTotalThreads(enqueued, threads);
    // The span the graph is computed in: opened (or, for "default", reused) only if a task is in it.
    const submission = currentSpan();
    let span: string | undefined;
    const submissionSpan = (): string => (span ??= this.spansState.ensureSpan(submission, enqueued));
    const tasks = new Map<string, { total: number; finished: number }>();
    let spanOfKey: Map<Key, string> | undefined;
    if (anyTaskTagged()) {
      spanOfKey = new Map();
      const count = (key: Key): void => {
        const path = spanOfSpec(dsk.get(key));
        const id = path === undefined ? submissionSpan() : this.spansState.ensureSpan(path, enqueued);
        if (id !== span) spanOfKey!.set(key, id);
        const entry = tasks.get(id);
        if (entry === undefined) tasks.set(id, { total: 1, finished: 0 });
        else entry.total++;
      };
      for (const key of state.waiting.keys()) count(key);
      for (const key of state.ready) count(key);
    } else {
      tasks.set(submissionSpan(), { total: state.waiting.size + state.ready.length, finished: 0 });
    }
    for (const [id, { total }] of tasks) this.spansState.countTasks(id, null, "waiting", total);
    const run: Run = {
      enqueued,
      // (Unused when every task has its own entry in spanOfKey.)
      span: span ?? "",
      spanOfKey: spanOfKey?.size === 0 ? undefined : spanOfKey,
      tasks,
      buckets: new Map(),
      dispatchKey: undefined,
      dispatchTime: 0,
      dispatched: new Map(),
      prefixes: new Map(),
      lastBucket: undefined,
    };
    this.runs.set(state, run);
    [this.lastState, this.lastRun] = [state, run];
  }

  override pretask(key: Key, _dsk: Graph, state: State): void {
    const run = this.run(state);
    if (run === undefined) return;
    if (run.dispatchKey !== undefined) run.dispatched.set(run.dispatchKey, run.dispatchTime);
    run.dispatchKey = key;
    run.dispatchTime = now();
  }

  override posttask(key: Key, result: unknown, _dsk: Graph, state: State, workerId: WorkerId, info: TaskInfo): void {
    const run = this.run(state);
    if (run === undefined) return;
    let dispatched: number;
    if (key === run.dispatchKey) {
      dispatched = run.dispatchTime;
      run.dispatchKey = undefined;
    } else {
      dispatched = run.dispatched.get(key) ?? run.enqueued;
      run.dispatched.delete(key);
    }
    const span = run.spanOfKey?.get(key) ?? run.span;
    const bucket = this.bucket(run, span, key);
    const timing = info.timing;
    const end = timing?.endTime ?? now();
    const start = timing?.startTime ?? dispatched;
    // A thread is waited for from the task's dispatch, or from its previous task if that ended
    // later. On the sync scheduler the thread is the caller's: the time since its previous task
    // (or since the computation began) went to the scheduler loop.
    const thread = workerId ?? "main";
    const previous = Math.max(this.lastEnd.get(thread) ?? 0, run.enqueued);
    const waitFrom = workerId === null ? previous : Math.max(dispatched, previous);
    this.lastEnd.set(thread, end);
    if (timing?.metrics !== undefined) {
      for (const [activity, value, unit] of timing.metrics) {
        if (activity === "thread-cpu") bucket.cpu.value += value;
        else if (activity === "thread-noncpu") bucket.noncpu.value += value;
        else this.other(bucket, activity, unit).value += value;
      }
    } else {
      // An executor that does not measure its tasks: their time is known, its split is not.
      this.other(bucket, "thread", "seconds").value += end - start;
    }
    // Cloning a batch into a pool thread's message: on the calling thread, while the pool thread waits.
    const serialize = timing?.postSeconds ?? 0;
    if (timing?.postSeconds !== undefined) this.other(bucket, "serialize", "seconds").value += serialize;
    bucket.executor.value += Math.max(0, start - waitFrom - serialize);
    const counts = run.tasks.get(span)!;
    counts.finished++;
    this.spansState.countTasks(span, "waiting", "memory");
    // The bytes the result holds (not what a pool moved: shared memory moves nothing), estimated.
    this.spansState.taskRan(span, start, end, estimateNbytes(result));
  }

  override finish(_dsk: Graph, state: State, errored: boolean): void {
    const run = this.runs.get(state);
    if (run === undefined) return;
    this.runs.delete(state);
    if (this.lastState === state) [this.lastState, this.lastRun] = [undefined, undefined];
    // The local scheduler keeps nothing once a computation returns: its tasks are forgotten, and
    // those a failure kept from running are erred.
    for (const [span, { total, finished }] of run.tasks) {
      this.spansState.countTasks(span, "memory", "forgotten", finished);
      if (total > finished) this.spansState.countTasks(span, "waiting", errored ? "erred" : "forgotten", total - finished);
    }
  }

  private run(state: State): Run | undefined {
    if (state === this.lastState) return this.lastRun;
    const run = this.runs.get(state);
    [this.lastState, this.lastRun] = [state, run];
    return run;
  }

  /** The accumulators of the task's span and prefix (consecutive tasks usually share them). */
  private bucket(run: Run, span: string, key: Key): Bucket {
    const head = typeof key === "string" ? key : Array.isArray(key) && typeof key[0] === "string" ? key[0] : undefined;
    let prefix = head === undefined ? undefined : run.prefixes.get(head);
    if (prefix === undefined) {
      prefix = keyPrefix(head ?? key);
      if (head !== undefined) run.prefixes.set(head, prefix);
    }
    const last = run.lastBucket;
    if (last !== undefined && last.prefix === prefix && last.span === span) return last;
    const id = `${span}\u0000${prefix}`;
    let bucket = run.buckets.get(id);
    if (bucket === undefined) {
      const cell = (activity: string): MetricCell => this.spansState.metricCell(span, prefix!, activity, "seconds");
      bucket = { span, prefix, cpu: cell("thread-cpu"), noncpu: cell("thread-noncpu"), executor: cell("executor"), others: new Map() };
      run.buckets.set(id, bucket);
    }
    run.lastBucket = bucket;
    return bucket;
  }

  private other(bucket: Bucket, activity: string, unit: string): MetricCell {
    const id = `${activity}\u0000${unit}`;
    let cell = bucket.others.get(id);
    if (cell === undefined) bucket.others.set(id, (cell = this.spansState.metricCell(bucket.span, bucket.prefix, activity, unit)));
    return cell;
  }

  // ---- Reading ----------------------------------------------------------------------------------

  /**
   * Every span seen (Dask's Span data): ids, name tuples, parents and children, times, task
   * counts, thread budget (`activeCpuSeconds`) and the subtree's metrics, idle included as
   * ("N/A", "idle or other spans"). Tasks outside any span are in spans named ["default"].
   */
  spans(): SpanRecord[] {
    return this.spansState.records(now());
  }

  /**
   * The metrics as records, one per (span, prefix, activity, unit): context "execute", like a
   * worker's digests (`span` set) — filter and sum them as you like. Idle is a property of spans,
   * not of tasks: see `spans()` and `breakdown()`.
   */
  records(): MetricRecord[] {
    return this.spansState.metricRecords();
  }

  /**
   * What the panel shows for a selection (default: all spans, all functions, seconds): values per
   * function and activity (`segments`), per activity (`activities`, idle included), their total
   * and the thread budget (wall × threads) it should match.
   */
  breakdown(selection: Partial<FpmSelection> = {}): FpmModel {
    return fpmModel(this.data(), { ...DEFAULT_SELECTION, ...selection });
  }

  /** A snapshot of everything the panel draws (the dashboard's data provider). */
  data(): FpmData {
    const time = now();
    const spans = this.spansState.records(time);
    const metrics = new Map<string, MetricRecord>();
    for (const record of this.records()) {
      const key = `${record.prefix}\u0000${record.activity}\u0000${record.unit}`;
      const seen = metrics.get(key);
      metrics.set(key, { context: "execute", prefix: record.prefix, activity: record.activity, unit: record.unit, value: (seen?.value ?? 0) + record.value });
    }
    const counts = [...this.threadCounts].sort((a, b) => a - b);
    const description = counts.length === 0 ? "local scheduler" : `local scheduler, ${counts.join(" and ")} thread${counts.at(-1) === 1 ? "" : "s"}`;
    return { metrics: [...metrics.values()], spans, time, source: { description, transfers: false } };
  }

  /** Forgets every metric and span. */
  clear(): void {
    this.spansState = new SpansState();
    this.runs.clear();
    this.lastEnd.clear();
    this.threadCounts.clear();
    [this.lastState, this.lastRun] = [undefined, undefined];
  }

  /**
   * Shows Dask's Fine Performance Metrics panel: in a notebook, in the calling cell at once,
   * awaited or not (live selectors, with a static image and a text table for other frontends);
   * elsewhere as a standalone HTML file. Awaiting the handle gives the FpmPanel.
   */
  visualize(options?: FpmPanelOptions): DisplayHandle<FpmPanel> {
    return showPanel(this.data(), options);
  }

  /** A text table of the breakdown (seconds, by function and activity). */
  override toString(): string {
    return metricsTable(this.data());
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
