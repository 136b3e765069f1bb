// The Progress panel: one notebook-style progress bar per computation (running first), each
// with its task groups listed, patched in place by computation id on every snapshot.
import { PROTOCOL_VERSION } from "../../protocol";
import type { ComputationProgress, DashboardSnapshot } from "../../protocol/dashboard";
import { element } from "../dom";
import { ProgressView } from "../progress";
import type { PanelView } from "./kinds";

class ComputationRow {
  readonly node = element("section", "tsdask-dashboard-computation");
  private readonly label = element("h3", "tsdask-dashboard-computation-label", this.node);
  private readonly bar = new ProgressView();

  constructor() {
    this.node.append(this.bar.node);
  }

  update(run: ComputationProgress): void {
    this.label.textContent = run.label;
    this.node.dataset.state = run.state;
    const { id, done, total, elapsed, state, groups } = run;
    this.bar.render({ version: PROTOCOL_VERSION, kind: "progress", id, seq: 0, done, total, elapsed, state, groups });
  }
}

export function mountProgressPanel(container: HTMLElement, snapshot: DashboardSnapshot): PanelView {
  const list = element("div", "tsdask-dashboard-computations", container);
  const rows = new Map<string, ComputationRow>();
  const update = (next: DashboardSnapshot): void => {
    const runs = next.progress ?? [];
    const keep = new Set(runs.map((run) => run.id));
    for (const [id, row] of rows) {
      if (!keep.has(id)) {
        row.node.remove();
        rows.delete(id);
      }
    }
    runs.forEach((run, index) => {
      let row = rows.get(run.id);
      if (row === undefined) rows.set(run.id, (row = new ComputationRow()));
      row.update(run);
      // Order follows the snapshot (running first) without moving rows already in place.
      if (list.children[index] !== row.node) list.insertBefore(row.node, list.children[index] ?? null);
    });
  };
  update(snapshot);
  return { update, dispose: () => list.remove() };
}
