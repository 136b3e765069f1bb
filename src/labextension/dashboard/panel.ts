// A dashboard panel in JupyterLab's main area: one panel kind's view, fed by the DashboardStore
// with the snapshots of the active notebook's (or console's) kernel, or of one notebook it is
// pinned to (named in its title). It redraws in place; its UI state and pin survive a reload.
import { MainAreaWidget } from "@jupyterlab/apputils";
import type { LabIcon } from "@jupyterlab/ui-components";
import { UUID } from "@lumino/coreutils";
import { type ISignal, Signal } from "@lumino/signaling";
import { Widget } from "@lumino/widgets";
import { element } from "../../views/dom";
import { type PanelInput, type PanelKind, type PanelState, PanelHost } from "../../views/dashboard";
import type { IDashboardStore, KernelSource } from "./store";

export interface DashboardPanelOptions {
  readonly kind: PanelKind;
  readonly icon: LabIcon;
  readonly store: IDashboardStore;
  /** The notebook path to follow; null follows the active notebook or console. */
  readonly pinned?: string | null;
  readonly state?: PanelState;
}

/** The panel's body: a line saying what it follows, then the kind's view or empty state. */
class PanelContent extends Widget {
  readonly status = element("div", "tsdask-dashboard-status");
  constructor(readonly host: PanelHost) {
    super();
    this.addClass("tsdask-dashboard-content");
    this.node.append(this.status, host.node);
  }
}

const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1);

export class DashboardPanel extends MainAreaWidget<PanelContent> {
  readonly kind: PanelKind;
  private pinnedPath: string | null;
  private readonly saved: { state: PanelState };
  private readonly store: IDashboardStore;
  /** A plain button (the toolbar takes any widget): its text says what a click does. */
  private readonly pinButton = element("button", "jp-Button jp-mod-minimal tsdask-dashboard-pin");
  private readonly saveRequested = new Signal<DashboardPanel, void>(this);

  constructor(options: DashboardPanelOptions) {
    const { kind, icon, store, pinned = null, state = {} } = options;
    // The view's context exists before the panel does: it reaches the panel through `saved`.
    const saved = { state, onSave: (): void => undefined };
    const context = {
      get state(): PanelState {
        return saved.state;
      },
      saveState(next: PanelState): void {
        saved.state = next;
        saved.onSave();
      },
    };
    super({ content: new PanelContent(new PanelHost(kind, context)) });
    saved.onSave = () => this.saveRequested.emit();
    this.saved = saved;
    this.kind = kind;
    this.store = store;
    this.pinnedPath = pinned;
    this.id = `tsdask-${kind.id}-${UUID.uuid4().slice(0, 8)}`;
    this.addClass("tsdask-dashboard");
    this.title.icon = icon.bindprops({ stylesheet: "mainAreaTab" });
    this.title.closable = true;
    // The shell's tab context menu finds the widget by this id (the shell sets it only for widgets it adds itself).
    this.title.dataset = { ...this.title.dataset, id: this.id };
    this.pinButton.addEventListener("click", () => this.togglePin());
    this.toolbar.addItem("pin", new Widget({ node: this.pinButton }));
    store.changed.connect(this.refresh, this);
    this.refresh();
  }

  /** The notebook path the panel is pinned to, or null when it follows the active one. */
  get pinned(): string | null {
    return this.pinnedPath;
  }

  /** The view's UI state, saved with the layout. */
  get state(): PanelState {
    return this.saved.state;
  }

  /** Emitted when what the layout saves (pin, view state) changed. */
  get saveNeeded(): ISignal<DashboardPanel, void> {
    return this.saveRequested;
  }

  /** Pins to the notebook it shows now, or goes back to following the active one. */
  togglePin(): void {
    if (this.pinnedPath !== null) this.pinnedPath = null;
    else {
      const source = this.store.current;
      if (source === null) return;
      this.pinnedPath = source.path;
    }
    this.saveRequested.emit();
    this.refresh();
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.store.changed.disconnect(this.refresh, this);
    this.content.host.dispose();
    super.dispose();
  }

  private source(): KernelSource | null {
    return this.pinnedPath !== null ? this.store.find(this.pinnedPath) : this.store.current;
  }

  private refresh(): void {
    const source = this.source();
    const pinned = this.pinnedPath;
    this.title.label = pinned === null ? this.kind.title : `${this.kind.title} — ${baseName(pinned)}`;
    this.title.caption = pinned === null ? `${this.kind.title}: follows the active notebook` : `${this.kind.title}: pinned to ${pinned}`;
    const action = pinned !== null ? "Follow the active notebook" : "Pin to this notebook";
    this.pinButton.textContent = action;
    this.pinButton.title = action;
    this.pinButton.disabled = pinned === null && source === null;

    const input = this.input(source, pinned);
    const snapshot = input.snapshot;
    const following = pinned !== null ? `Pinned to ${pinned}` : source !== null ? `Following the active notebook: ${source.name}` : "Following the active notebook";
    const updated = snapshot !== undefined ? ` · updated ${new Date(snapshot.time * 1000).toLocaleTimeString()}` : "";
    this.content.status.textContent = following + updated;
    this.content.status.dataset.connected = String(source !== null && source.kernelId !== null);
    this.content.host.show(input);
  }

  private input(source: KernelSource | null, pinned: string | null): PanelInput {
    if (source === null) {
      const message = pinned !== null ? `${baseName(pinned)} is not open: open it to see its kernel's data.` : "No notebook or console is open: open one and run a computation.";
      return { message, connected: false };
    }
    if (source.kernelId === null) return { message: `${source.name} has no running kernel.`, connected: false };
    const problem = this.store.problem(source.kernelId);
    const snapshot = this.store.snapshot(source.kernelId);
    if (problem !== undefined) return { message: problem, connected: true };
    if (snapshot === undefined) return { message: `No dashboard data from ${source.name}'s kernel yet.`, connected: true };
    return { snapshot, connected: true };
  }
}
