// Local computations on the dashboard: DashboardFeed is a Callback that reports the progress of
// the computations it sees (per key prefix, as the notebook progress bar counts them) to the
// dashboard publisher. Every DashboardFeed of one publisher shares one provider, which keeps the
// running computations and the few that finished last.

import { randomUUID } from "node:crypto";
import { Callback } from "../callbacks/callback";
import { now } from "../clock";
import type { Graph } from "../graph/graph";
import { type Key, keyPrefixer } from "../graph/keys";
import type { State } from "../callbacks/state";
import type { ProgressState } from "../../protocol";
import { type ComputationProgress, DASHBOARD_LIMITS } from "../../protocol/dashboard";
import { type DashboardPublisher, type DashboardSource, dashboardPublisher } from "./publisher";

interface Group {
  readonly name: string;
  done: number;
  total: number;
}

/** One computation as the feed follows it. */
class Computation {
  readonly id = randomUUID();
  readonly started = now();
  state: State | undefined;
  total = 0;
  outcome: ProgressState = "running";
  ended: number | undefined;
  readonly groups = new Map<string, Group>();
  private readonly groupOf = keyPrefixer();

  constructor(readonly label: string) {}

  count(state: State): void {
    this.state = state;
    for (const key of state.waiting.keys()) this.add(key);
    for (const key of state.ready) this.add(key);
  }

  private add(key: Key): void {
    const name = this.groupOf(key);
    let group = this.groups.get(name);
    if (group === undefined) this.groups.set(name, (group = { name, done: 0, total: 0 }));
    group.total++;
    this.total++;
  }

  finished(key: Key): void {
    const group = this.groups.get(this.groupOf(key));
    if (group !== undefined) group.done++;
  }

  progress(): ComputationProgress {
    const groups = [...this.groups.values()]
      .sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, DASHBOARD_LIMITS.progressGroups)
      .map(({ name, done, total }) => ({ name, done, total }));
    const done = this.outcome === "finished" ? this.total : (this.state?.finished.size ?? 0);
    return {
      id: this.id,
      label: this.label,
      started: this.started,
      done,
      total: this.total,
      elapsed: (this.ended ?? now()) - this.started,
      state: this.outcome,
      groups,
    };
  }
}

/** The one provider per publisher behind every DashboardFeed. */
class LocalComputations {
  private readonly running = new Set<Computation>();
  /** Finished computations, newest last, at most DASHBOARD_LIMITS.computations. */
  private readonly recent: Computation[] = [];
  private readonly source: DashboardSource;
  private counter = 0;

  constructor(publisher: DashboardPublisher) {
    this.source = publisher.provide({ name: "DashboardFeed", sections: () => this.sections() });
  }

  /** While computations run, the publisher sends every interval by itself: no call per task. */
  begin(label: string | undefined): Computation {
    const computation = new Computation(label ?? `computation ${++this.counter}`);
    this.running.add(computation);
    this.source.setLive(true);
    return computation;
  }

  end(computation: Computation, outcome: ProgressState): void {
    computation.outcome = outcome;
    computation.ended = now();
    this.running.delete(computation);
    this.recent.push(computation);
    if (this.recent.length > DASHBOARD_LIMITS.computations) this.recent.shift();
    this.source.changed();
    this.source.setLive(this.running.size > 0);
  }

  private sections(): { progress: ComputationProgress[] } {
    const shown = [...this.running, ...this.recent.slice().reverse()].slice(0, DASHBOARD_LIMITS.computations);
    return { progress: shown.map((computation) => computation.progress()) };
  }
}

const providers = new WeakMap<DashboardPublisher, LocalComputations>();

function localComputations(publisher: DashboardPublisher): LocalComputations {
  let provider = providers.get(publisher);
  if (provider === undefined) providers.set(publisher, (provider = new LocalComputations(publisher)));
  return provider;
}

export interface DashboardFeedOptions {
  /** The computations' name on the dashboard (default "computation N"). */
  readonly label?: string;
  /** Where the progress goes (default: the process's publisher, which reaches the notebook's dashboard). */
  readonly publisher?: DashboardPublisher;
}

/**
 * Puts the computations it sees on the tsdask dashboard (the JupyterLab panels and the page
 * `serveDashboard` serves): `withCallbacks(new DashboardFeed(), () => get(dsk, keys))`, or
 * `new DashboardFeed().register()` for every computation from now on.
 */
export class DashboardFeed extends Callback {
  private readonly label: string | undefined;
  private readonly publisher: DashboardPublisher;
  /** Computations started but whose state is not built yet, by graph (start → startState may interleave). */
  private readonly starting = new Map<Graph, Computation[]>();
  private readonly byState = new Map<State, Computation>();
  /** The last state looked up and its computation: one computation at a time is the common case. */
  private lastState: State | undefined;
  private lastComputation: Computation | undefined;

  constructor(options: DashboardFeedOptions = {}) {
    super();
    const { label, publisher = dashboardPublisher } = options;
    if (label !== undefined && typeof label !== "string") throw new TypeError(`DashboardFeed option label must be a string, got ${typeof label}`);
    this.label = label;
    this.publisher = publisher;
  }

  override start(dsk: Graph): void {
    const computation = localComputations(this.publisher).begin(this.label);
    const queue = this.starting.get(dsk);
    if (queue === undefined) this.starting.set(dsk, [computation]);
    else queue.push(computation);
  }

  override startState(dsk: Graph, state: State): void {
    const computation = this.takeStarting(dsk);
    if (computation === undefined) return;
    computation.count(state);
    this.byState.set(state, computation);
  }

  /** The hot path (a call per task): a group count and nothing else; the publisher polls while live. */
  override posttask(key: Key, _result: unknown, _dsk: Graph, state: State): void {
    if (state !== this.lastState) {
      this.lastState = state;
      this.lastComputation = this.byState.get(state);
    }
    this.lastComputation?.finished(key);
  }

  override finish(dsk: Graph, state: State, errored: boolean, error?: unknown): void {
    // A computation that failed before its state was built is still waiting under its graph.
    const computation = this.byState.get(state) ?? this.takeStarting(dsk);
    if (computation === undefined) return;
    this.byState.delete(state);
    if (this.lastState === state) [this.lastState, this.lastComputation] = [undefined, undefined];
    const aborted = error instanceof Error && error.name === "AbortError";
    localComputations(this.publisher).end(computation, !errored ? "finished" : aborted ? "cancelled" : "errored");
  }

  private takeStarting(dsk: Graph): Computation | undefined {
    const queue = this.starting.get(dsk);
    const computation = queue?.shift();
    if (queue?.length === 0) this.starting.delete(dsk);
    return computation;
  }
}
