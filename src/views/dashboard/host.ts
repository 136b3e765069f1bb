// One dashboard panel's body, wherever it is shown (a JupyterLab panel, the standalone page): the
// kind's view while the snapshot has data for it, otherwise an empty state saying why and what to
// run. Snapshots are drawn at most once per animation frame, the latest one; the view is mounted
// once and updated in place after that.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { element, textElement } from "../dom";
import type { PanelContext, PanelKind, PanelView } from "./kinds";
import { safeHasData } from "./panels";

/** What a panel is fed. */
export interface PanelInput {
  /** The latest snapshot of the kernel the panel follows; undefined before the first one. */
  readonly snapshot?: DashboardSnapshot;
  /** Why nothing can be drawn, said above the hint (no notebook open, no data yet, an unreadable snapshot…). */
  readonly message?: string;
  /** False when the panel has no kernel to listen to (no notebook, the notebook closed, no kernel). */
  readonly connected: boolean;
}

export class PanelHost {
  readonly node = element("div", "tsdask-dashboard-panel");
  private readonly notes = element("div", "tsdask-dashboard-notes", this.node);
  private readonly body = element("div", "tsdask-dashboard-body", this.node);
  private readonly emptyState = element("div", "tsdask-dashboard-empty");
  private view: PanelView | undefined;
  private pending: PanelInput | undefined;
  private frame: number | undefined;
  private drawn: PanelInput | undefined;

  constructor(
    readonly kind: PanelKind,
    private readonly context: PanelContext,
  ) {
    this.node.dataset.kind = kind.id;
  }

  /** Draws `input` on the next animation frame; later calls before it replace it. */
  show(input: PanelInput): void {
    this.pending = input;
    this.frame ??= requestAnimationFrame(() => {
      this.frame = undefined;
      const next = this.pending;
      this.pending = undefined;
      if (next !== undefined) this.draw(next);
    });
  }

  /** Draws `input` now (the first paint of a restored panel, tests). */
  draw(input: PanelInput): void {
    const drawn = this.drawn;
    if (drawn !== undefined && drawn.snapshot === input.snapshot && drawn.message === input.message && drawn.connected === input.connected) return;
    this.drawn = input;
    const { snapshot, message, connected } = input;
    this.showNotes(snapshot?.errors ?? []);
    const hasData = connected && snapshot !== undefined && safeHasData(this.kind, snapshot);
    this.node.dataset.state = !connected ? "disconnected" : !hasData ? "empty" : this.kind.mount === undefined ? "no-view" : "live";
    if (!hasData || this.kind.mount === undefined) {
      this.unmount();
      this.showEmpty(message, hasData);
      return;
    }
    this.emptyState.remove();
    try {
      if (this.view === undefined) this.view = this.kind.mount(this.body, snapshot, this.context);
      else this.view.update(snapshot);
    } catch (error) {
      // A view that fails on odd data says so in place; the next snapshot mounts it afresh.
      this.unmount();
      this.showEmpty(`The ${this.kind.title} view failed: ${error instanceof Error ? error.message : String(error)}`, false);
    }
  }

  dispose(): void {
    if (this.frame !== undefined) cancelAnimationFrame(this.frame);
    this.unmount();
    this.node.remove();
  }

  private unmount(): void {
    this.view?.dispose();
    this.view = undefined;
    this.body.replaceChildren();
  }

  private showEmpty(problem: string | undefined, dataWithoutView: boolean): void {
    const parts: HTMLElement[] = [];
    if (problem !== undefined) parts.push(textElement("p", "tsdask-dashboard-empty-problem", problem));
    if (dataWithoutView) {
      parts.push(textElement("p", "", `This kernel sends ${this.kind.title} data, but this version of the tsdask extension has no view for it.`));
    } else {
      parts.push(textElement("p", "", this.kind.empty.text));
      if (this.kind.empty.code !== undefined) parts.push(textElement("pre", "tsdask-dashboard-empty-code", this.kind.empty.code));
    }
    this.emptyState.replaceChildren(...parts);
    if (this.emptyState.parentNode !== this.body) this.body.replaceChildren(this.emptyState);
  }

  private showNotes(errors: readonly string[]): void {
    if (errors.length === 0 && this.notes.childElementCount === 0) return;
    this.notes.replaceChildren(...errors.map((error) => textElement("p", "tsdask-dashboard-note", error)));
  }
}
