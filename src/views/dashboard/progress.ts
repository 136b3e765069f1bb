// The Progress panel: one notebook-style progress bar per computation (running first), each
// with its task groups listed, patched in place by computation id on every snapshot.
import { PROTOCOL_VERSION } from "../../protocol";
import type { ComputationProgress } from "../../protocol/dashboard";
import { KeyedRows, element } from "../dom";
import { ProgressView } from "../progress";
import type { SectionView } from "./kinds";

class ComputationRow {
  readonly node = element("section", "tsdask-dashboard-computation");
  private readonly heading = element("h3", "tsdask-dashboard-computation-heading", this.node);
  private readonly label = element("span", "tsdask-dashboard-computation-label", this.heading);
  private readonly started = element("span", "tsdask-dashboard-computation-started", this.heading);
  private readonly bar = new ProgressView();

  constructor() {
    this.node.append(this.bar.node);
  }

  update(run: ComputationProgress): void {
    this.label.textContent = run.label;
    this.started.textContent = `started ${new Date(run.started * 1000).toLocaleTimeString()}`;
    this.node.dataset.state = run.state;
    const { id, done, total, elapsed, state, groups } = run;
    this.bar.render({ version: PROTOCOL_VERSION, kind: "progress", id, seq: 0, done, total, elapsed, state, groups });
  }
}

export function mountProgressPanel(container: HTMLElement, runs: readonly ComputationProgress[]): SectionView<readonly ComputationProgress[]> {
  const list = element("div", "tsdask-dashboard-computations", container);
  // Order follows the snapshot (running first); a row moves only when that order changes.
  const rows = new KeyedRows(list, (run: ComputationProgress) => run.id, () => new ComputationRow());
  const update = (next: readonly ComputationProgress[]): void => rows.sync(next, (row, run) => row.update(run));
  update(runs);
  return { update, dispose: () => list.remove() };
}
