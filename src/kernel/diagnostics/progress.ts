// ProgressBar: Dask's text progress bar for terminals, a quiet line-per-few-seconds variant for
// logs and files, and a live widget (with a text fallback) in a tslab notebook.

import { randomUUID } from "node:crypto";
import { Callback } from "../callbacks/callback";
import { checkNames } from "../names";
import { type LiveDisplay, type MimeBundle, inNotebook, newLiveDisplay } from "../display";
import type { Graph } from "../graph/graph";
import { type Key, keyPrefix } from "../graph/keys";
import type { State } from "../callbacks/state";
import { MIME_TYPE, PROTOCOL_VERSION, type ProgressGroup, type ProgressPayload, type ProgressState } from "../../protocol";
import { barText } from "./format";

/** Where the text bar goes: a writable stream such as process.stdout, a file stream, or anything with `write`. */
export interface ProgressOutput {
  write(text: string): unknown;
  /** A terminal gets the `\r`-redrawn bar; anything else gets a plain line every few seconds. */
  readonly isTTY?: boolean;
  /** Stream back-pressure: while set, periodic redraws are skipped rather than queued. */
  readonly writableNeedDrain?: boolean;
  readonly writableEnded?: boolean;
  readonly destroyed?: boolean;
}

export interface ProgressBarOptions {
  /** Seconds a computation must run before anything is shown (default 0). */
  readonly minimum?: number;
  /** Characters in the text bar (default 40). */
  readonly width?: number;
  /** Seconds between redraws (default 0.1). */
  readonly dt?: number;
  /** Where the text bar goes (default process.stdout). Given, it is used even in a notebook. */
  readonly out?: ProgressOutput;
  /**
   * Opens the live output the bar is shown in instead of text, called when the bar first draws;
   * when it returns null the bar falls back to text. Default in a tslab notebook: a new output
   * in the running cell.
   */
  readonly display?: () => LiveDisplay | null;
}

/** In a log or file, one line per this many seconds at most (plus the final line). */
const LOG_LINE_EVERY = 5;
/** Notebook updates are at most this often, whatever `dt` is. */
const NOTEBOOK_MIN_INTERVAL = 0.1;
/** The notebook widget lists at most this many key prefixes, largest first. */
const MAX_GROUPS = 20;

/** One way of showing progress; `update` runs on the timer, `end` once. */
interface ProgressView {
  update(done: number, total: number, elapsed: number): void;
  /** `shown`: the fraction the bar ends on, or undefined for none (a failed run with nothing left to draw). */
  end(shown: number | undefined, done: number, total: number, elapsed: number, outcome: ProgressState): void;
}

/** The computation this bar is showing. */
interface Run {
  /** Its state, once built; until then the bar shows 0%. */
  state: State | undefined;
  readonly startTime: number;
  total: number;
  /** Per key prefix, for the notebook widget only (a text bar costs nothing per task). */
  groups: Map<string, { name: string; done: number; total: number }> | undefined;
  groupOf: Map<Key, { done: number }> | undefined;
  view: ProgressView | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Shows the progress of the computations it is active for. Use it in a
 * `withCallbacks(new ProgressBar(), () => …)` block, `register()` it, or pass it in
 * `get(…, { callbacks })`. If several computations run at once, it shows the first one.
 */
export class ProgressBar extends Callback {
  readonly minimum: number;
  readonly width: number;
  readonly dt: number;
  /** Seconds the last computation took. */
  lastDuration = 0;

  private readonly out: ProgressOutput | undefined;
  private readonly display: (() => LiveDisplay | null) | undefined;
  private run: Run | undefined = undefined;

  constructor(options: ProgressBarOptions = {}) {
    super();
    checkNames(options, ["minimum", "width", "dt", "out", "display"], "ProgressBar option");
    const { minimum = 0, width = 40, dt = 0.1, out, display } = options;
    if (typeof minimum !== "number" || !(minimum >= 0)) throw new TypeError(`ProgressBar option minimum must be a number ≥ 0, got ${minimum}`);
    if (!Number.isInteger(width) || width < 1) throw new TypeError(`ProgressBar option width must be a whole number ≥ 1, got ${width}`);
    if (typeof dt !== "number" || !(dt > 0) || !Number.isFinite(dt)) throw new TypeError(`ProgressBar option dt must be a number of seconds > 0, got ${dt}`);
    if (out !== undefined && (out === null || typeof out.write !== "function")) {
      throw new TypeError("ProgressBar option out must be a writable stream (an object with a write method)");
    }
    if (display !== undefined && typeof display !== "function") throw new TypeError("ProgressBar option display must be a function returning a LiveDisplay");
    this.minimum = minimum;
    this.width = width;
    this.dt = dt;
    this.out = out;
    // In a tslab notebook the bar is a live output, unless text was asked for with `out`.
    this.display = display ?? (out === undefined && inNotebook() ? () => newLiveDisplay() : undefined);
  }

  override start(): void {
    if (this.run !== undefined) return; // busy with another computation
    const notebook = this.display !== undefined;
    const run: Run = {
      state: undefined,
      startTime: performance.now(),
      total: 0,
      groups: notebook ? new Map() : undefined,
      groupOf: notebook ? new Map() : undefined,
      view: undefined,
      timer: undefined,
    };
    this.run = run;
    const interval = notebook ? Math.max(this.dt, NOTEBOOK_MIN_INTERVAL) : this.dt;
    // A repeating timer fires once after a blocked stretch, never in a burst; unref: it must not keep Node alive.
    run.timer = setInterval(() => this.tick(run), interval * 1000).unref();
    this.tick(run);
  }

  override startState(_dsk: Graph, state: State): void {
    const run = this.run;
    if (run === undefined || run.state !== undefined) return;
    run.state = state;
    let total = 0;
    for (const key of state.waiting.keys()) total += this.countTask(run, key);
    for (const key of state.ready) total += this.countTask(run, key);
    run.total = total;
  }

  private countTask(run: Run, key: Key): number {
    if (run.groups !== undefined) {
      const name = keyPrefix(key);
      let group = run.groups.get(name);
      if (group === undefined) run.groups.set(name, (group = { name, done: 0, total: 0 }));
      group.total++;
      run.groupOf!.set(key, group);
    }
    return 1;
  }

  override posttask(key: Key, _result: unknown, _dsk: Graph, state: State): void {
    const run = this.run;
    if (run?.groupOf === undefined || run.state !== state) return;
    const group = run.groupOf.get(key);
    if (group !== undefined) group.done++;
  }

  override finish(_dsk: Graph, state: State, errored: boolean, error?: unknown): void {
    const run = this.run;
    // Ours, or ours failing before its state existed (start → finish happen in one synchronous stretch).
    if (run === undefined || (run.state !== undefined && run.state !== state)) return;
    this.run = undefined;
    clearInterval(run.timer);
    const elapsed = (performance.now() - run.startTime) / 1000;
    this.lastDuration = elapsed;
    if (elapsed < this.minimum) return;
    const outcome: ProgressState = !errored ? "finished" : isAbort(error) ? "cancelled" : "errored";
    const done = this.done(run);
    // A failed run keeps its last partial percentage, drawn as Dask's timer would draw it.
    const shown = !errored ? 1 : run.state === undefined ? 0 : done < run.total ? done / run.total : undefined;
    this.view(run).end(shown, done, run.total, elapsed, outcome);
  }

  /** Dask's timer: after `minimum`, redraw while tasks remain (only `finish` draws 100%). */
  private tick(run: Run): void {
    const elapsed = (performance.now() - run.startTime) / 1000;
    if (elapsed <= this.minimum) return;
    const done = this.done(run);
    if (run.state !== undefined && done >= run.total) return;
    this.view(run).update(done, run.total, elapsed);
  }

  private done(run: Run): number {
    return run.state === undefined ? 0 : run.state.finished.size;
  }

  private view(run: Run): ProgressView {
    if (run.view !== undefined) return run.view;
    const live = this.display?.() ?? null;
    if (live !== null) {
      run.view = new NotebookView(live, this.width, () => groupList(run));
    } else {
      const out = this.out ?? process.stdout;
      run.view = out.isTTY === true ? new TerminalView(out, this.width) : new LogView(out, this.width);
    }
    return run.view;
  }
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

function groupList(run: Run): ProgressGroup[] {
  const groups = [...(run.groups?.values() ?? [])];
  groups.sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return groups.slice(0, MAX_GROUPS).map(({ name, done, total }) => ({ name, done, total }));
}

function writable(out: ProgressOutput): boolean {
  return out.destroyed !== true && out.writableEnded !== true;
}

/** Dask's bar, redrawn in place with `\r`, ended with a newline. */
class TerminalView implements ProgressView {
  constructor(
    private readonly out: ProgressOutput,
    private readonly width: number,
  ) {}

  update(done: number, total: number, elapsed: number): void {
    if (writable(this.out) && this.out.writableNeedDrain !== true) this.out.write("\r" + barText(fraction(done, total), elapsed, this.width));
  }

  end(shown: number | undefined, _done: number, _total: number, elapsed: number): void {
    if (!writable(this.out)) return;
    this.out.write((shown === undefined ? "" : "\r" + barText(shown, elapsed, this.width)) + "\n");
  }
}

/** For files and CI logs, where `\r` redraws pile up: one plain line every few seconds, then the final one. */
class LogView implements ProgressView {
  private lastLine: number;

  constructor(
    private readonly out: ProgressOutput,
    private readonly width: number,
  ) {
    this.lastLine = performance.now();
  }

  update(done: number, total: number, elapsed: number): void {
    if (performance.now() - this.lastLine < LOG_LINE_EVERY * 1000 || !writable(this.out) || this.out.writableNeedDrain === true) return;
    this.lastLine = performance.now();
    this.out.write(barText(fraction(done, total), elapsed, this.width) + "\n");
  }

  end(shown: number | undefined, done: number, total: number, elapsed: number): void {
    if (!writable(this.out)) return;
    this.out.write(barText(shown ?? fraction(done, total), elapsed, this.width) + "\n");
  }
}

/** One live notebook output: the tsdask widget payload plus Dask's bar as text/plain. */
class NotebookView implements ProgressView {
  private readonly id = `progress-${randomUUID()}`;
  private seq = 0;

  constructor(
    private readonly display: LiveDisplay,
    private readonly width: number,
    private readonly groups: () => ProgressGroup[],
  ) {}

  update(done: number, total: number, elapsed: number): void {
    this.send(done, total, elapsed, "running");
  }

  end(_shown: number | undefined, done: number, total: number, elapsed: number, outcome: ProgressState): void {
    // Sent now, not throttled: the cell may end right after. A closed kernel has no one to tell.
    this.display.finish(this.bundle(outcome === "finished" ? total : done, total, elapsed, outcome)).catch(() => undefined);
  }

  private send(done: number, total: number, elapsed: number, state: ProgressState): void {
    this.display.update(this.bundle(done, total, elapsed, state));
  }

  private bundle(done: number, total: number, elapsed: number, state: ProgressState): MimeBundle {
    const payload: ProgressPayload = {
      version: PROTOCOL_VERSION,
      id: this.id,
      seq: ++this.seq,
      kind: "progress",
      done,
      total,
      elapsed,
      state,
      groups: this.groups(),
    };
    const text = barText(state === "finished" ? 1 : fraction(done, total), elapsed, this.width);
    return { [MIME_TYPE]: payload, "text/plain": text };
  }
}

function fraction(done: number, total: number): number {
  return total === 0 ? 0 : done / total;
}
