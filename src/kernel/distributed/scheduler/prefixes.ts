// What each task prefix has done since the scheduler started (Dask's TaskPrefix `state_counts`
// and `all_durations`): transitions into each state and the seconds its tasks spent computing and
// fetching inputs. Cumulative, for the Prometheus endpoint ("store metrics long-term").

import type { StartStop } from "../../../protocol/records";

export class PrefixTotals {
  /** Transitions into each state, indexed as the state machine numbers its states. */
  readonly states: Float64Array;
  computeSeconds = 0;
  transferSeconds = 0;

  constructor(stateCount: number) {
    this.states = new Float64Array(stateCount);
  }

  /** A finished or erred task's phases. */
  addPhases(startstops: readonly StartStop[]): void {
    for (const { action, start, stop } of startstops) {
      if (action === "compute") this.computeSeconds += stop - start;
      else if (action === "transfer") this.transferSeconds += stop - start;
    }
  }
}

/** The totals of every prefix seen, by prefix. */
export class PrefixLedger {
  private readonly byPrefix = new Map<string, PrefixTotals>();

  constructor(private readonly stateCount: number) {}

  of(prefix: string): PrefixTotals {
    let totals = this.byPrefix.get(prefix);
    if (totals === undefined) this.byPrefix.set(prefix, (totals = new PrefixTotals(this.stateCount)));
    return totals;
  }

  entries(): IterableIterator<[string, PrefixTotals]> {
    return this.byPrefix.entries();
  }
}
