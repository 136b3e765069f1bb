// The lifecycle the three profilers share: a withCallbacks block clears the records and sets
// the time span; registered or per-call use spans from the first start to the last finish.

import { Callback } from "../callbacks/callback";
import type { State } from "../callbacks/state";
import { type ProfileSnapshot, type Visualizable, now } from "./types";
import type { DisplayHandle } from "../display";
import { type ProfilePlot, visualize } from "./visualize";
import type { VisualizeOptions } from "./visualize/options";

export abstract class Recorder<Run> extends Callback implements Visualizable {
  /** Start of the span the records cover, epoch seconds; undefined before any use. */
  startTime: number | undefined = undefined;
  /** End of that span; undefined while a block is open or before the first finish. */
  endTime: number | undefined = undefined;

  /** Depth of the withCallbacks blocks this profiler is in (a block inside a block is one span). */
  private blockDepth = 0;
  /** Per-computation bookkeeping, by the computation's state object, so concurrent runs stay apart. */
  private readonly runs = new Map<State, Run>();
  private lastState: State | undefined = undefined;
  private lastRun: Run | undefined = undefined;

  /** What a new computation starts with. */
  protected abstract newRun(): Run;
  /** A computation ended (any way); `run` is undefined when it failed before its state existed. */
  protected endRun(_run: Run | undefined, _time: number): void {
    // Most profilers record as tasks finish and have nothing left to do here.
  }

  abstract snapshot(): ProfileSnapshot;

  /**
   * Dask's `prof.visualize()`: this profiler's plot on its own; `visualize([...])` stacks several.
   * Shown in the calling cell whether or not it is awaited; awaiting gives the ProfilePlot.
   */
  visualize(options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
    return visualize(this, options);
  }

  /** Forgets all records and the time span. */
  clear(): void {
    this.startTime = undefined;
    this.endTime = undefined;
  }

  override blockStart(time: number): void {
    if (this.blockDepth++ > 0) return;
    this.clear();
    this.startTime = time;
  }

  override blockEnd(time: number): void | Promise<void> {
    if (--this.blockDepth > 0) return;
    this.endTime = time;
  }

  /** True inside a withCallbacks block that holds this profiler. */
  protected get inBlock(): boolean {
    return this.blockDepth > 0;
  }

  override start(): void {
    // Outside a block the span is first start → last finish, so registered profilers can be plotted too.
    if (!this.inBlock && this.startTime === undefined) this.startTime = now();
  }

  override startState(_dsk: unknown, state: State): void {
    const run = this.newRun();
    this.runs.set(state, run);
    this.lastState = state;
    this.lastRun = run;
  }

  /** The bookkeeping of the computation `state` belongs to (a one-entry cache keeps this cheap per task). */
  protected run(state: State): Run {
    if (state === this.lastState) return this.lastRun!;
    const run = this.runs.get(state)!;
    this.lastState = state;
    this.lastRun = run;
    return run;
  }

  override finish(_dsk: unknown, state: State): void {
    const time = now();
    const run = this.runs.get(state);
    this.runs.delete(state);
    if (this.lastState === state) [this.lastState, this.lastRun] = [undefined, undefined];
    this.endRun(run, time);
    if (!this.inBlock) this.endTime = time;
  }

  /** The span of records whose own times run from `from(record)` to `to(record)`. */
  protected spanOf<R>(records: readonly R[], from: (record: R) => number, to: (record: R) => number): { startTime: number; endTime: number } {
    let first: number | undefined;
    let last: number | undefined;
    for (const record of records) {
      if (first === undefined || from(record) < first) first = from(record);
      if (last === undefined || to(record) > last) last = to(record);
    }
    return this.span(first, last);
  }

  /** The span to plot: the block's, else first start → last finish, else what the records cover. */
  protected span(first: number | undefined, last: number | undefined): { startTime: number; endTime: number } {
    const live = this.inBlock || this.runs.size > 0;
    const startTime = this.startTime ?? first ?? now();
    const endTime = live ? now() : (this.endTime ?? last ?? startTime);
    return { startTime, endTime: Math.max(endTime, startTime) };
  }
}
