// The live progress bar. Built once; each snapshot only rewrites text and widths, so updates at
// 10 Hz neither flicker nor lose the hover panel. Every string from the kernel goes in as textContent.
import type { ProgressGroup, ProgressPayload } from "../protocol";
import { element } from "./dom";
import { formatRate, formatTime, percent } from "./format";

const STATE_LABELS: Readonly<Record<ProgressPayload["state"], string>> = {
  running: "",
  finished: "Finished",
  errored: "Errored",
  cancelled: "Cancelled",
};

/** One row of the per-group panel: name, a small bar, done/total. */
class GroupRow {
  readonly node = element("div", "tsdask-progress-group");
  private readonly name = element("span", "tsdask-progress-group-name", this.node);
  private readonly fill = element("span", "tsdask-progress-group-fill", element("span", "tsdask-progress-group-bar", this.node));
  private readonly counts = element("span", "tsdask-progress-group-counts", this.node);

  update(group: ProgressGroup): void {
    this.name.textContent = group.name;
    this.name.title = group.name;
    this.fill.style.width = `${percent(group.done, group.total)}%`;
    this.counts.textContent = `${group.done} / ${group.total}`;
  }
}

export class ProgressView {
  readonly node = element("div", "tsdask-progress");
  private readonly bar = element("div", "tsdask-progress-bar", this.node);
  private readonly fill = element("div", "tsdask-progress-fill", this.bar);
  private readonly summary = element("div", "tsdask-progress-summary", this.node);
  private readonly counts = element("span", "tsdask-progress-counts", this.summary);
  private readonly percent = element("span", "tsdask-progress-percent", this.summary);
  private readonly elapsed = element("span", "tsdask-progress-elapsed", this.summary);
  private readonly rate = element("span", "tsdask-progress-rate", this.summary);
  private readonly state = element("span", "tsdask-progress-state", this.summary);
  private readonly groups = element("div", "tsdask-progress-groups", this.node);
  private readonly rows: GroupRow[] = [];

  constructor() {
    this.bar.setAttribute("role", "progressbar");
    this.bar.setAttribute("aria-valuemin", "0");
    this.bar.setAttribute("aria-valuemax", "100");
  }

  render(payload: ProgressPayload): void {
    const pct = percent(payload.done, payload.total, payload.state === "running");
    this.node.dataset.state = payload.state;
    this.fill.style.width = `${pct}%`;
    this.bar.setAttribute("aria-valuenow", String(pct));
    this.counts.textContent = `${payload.done} / ${payload.total}`;
    this.percent.textContent = `${pct}%`;
    this.elapsed.textContent = formatTime(payload.elapsed);
    this.rate.textContent = formatRate(payload.done, payload.elapsed);
    this.state.textContent = STATE_LABELS[payload.state];
    this.renderGroups(payload.groups);
  }

  dispose(): void {
    this.node.remove();
  }

  /** Reuses rows by position: the kernel sends groups largest first, so rows rarely move. */
  private renderGroups(groups: readonly ProgressGroup[]): void {
    while (this.rows.length < groups.length) {
      const row = new GroupRow();
      this.rows.push(row);
      this.groups.append(row.node);
    }
    for (const row of this.rows.splice(groups.length)) row.node.remove();
    groups.forEach((group, index) => this.rows[index]?.update(group));
    this.groups.hidden = groups.length === 0;
  }
}
