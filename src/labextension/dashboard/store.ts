// DashboardStore: listens to the iopub channel of every notebook's and console's kernel and keeps
// the latest dashboard snapshot per kernel. Snapshots arrive as update_display_data for a display
// id no cell shows: JupyterLab drops them from outputs but still emits them on the session's
// iopubMessage, so no comm, proxy or port is involved. Closing a notebook drops what it fed.
import type { ISessionContext } from "@jupyterlab/apputils";
import type { KernelMessage } from "@jupyterlab/services";
import { Token } from "@lumino/coreutils";
import { type ISignal, Signal } from "@lumino/signaling";
import type { Widget } from "@lumino/widgets";
import { DASHBOARD_MIME_TYPE, type DashboardSnapshot } from "../../protocol/dashboard";
import { isNewer, parseSnapshot, SnapshotError } from "../../views/dashboard";

/** A notebook or console whose kernel may feed the dashboard. */
export interface KernelSource {
  /** The notebook's path (or the console's): what a pinned panel remembers. */
  readonly path: string;
  /** What the user sees: the notebook's tab label. */
  readonly name: string;
  /** The kernel's id, null while it has none. */
  readonly kernelId: string | null;
  /** The notebook's (or console's) widget id in the shell, to place panels beside it. */
  readonly widgetId: string;
}

/** The store's service: the latest snapshot per kernel, and which notebook or console is current. */
export interface IDashboardStore {
  /** Notebooks and consoles listened to, in opening order. */
  readonly sources: readonly KernelSource[];
  /** The notebook or console the user was in last (where a following panel looks). */
  readonly current: KernelSource | null;
  /** The open notebook or console at `path`. */
  find(path: string): KernelSource | null;
  /** The latest snapshot from a kernel, undefined until one came (or after its notebook closed). */
  snapshot(kernelId: string): DashboardSnapshot | undefined;
  /** A problem with the last message from a kernel (a snapshot this extension cannot read). */
  problem(kernelId: string): string | undefined;
  /** Any change: a snapshot, a source opened or closed, the current one changed. */
  readonly changed: ISignal<IDashboardStore, void>;
}

export const IDashboardStore = new Token<IDashboardStore>(
  "tsdask:IDashboardStore",
  "The latest tsdask dashboard snapshot of each notebook's and console's kernel.",
);

/** What the store needs of a notebook or console panel. */
export interface SourceWidget extends Widget {
  readonly sessionContext: ISessionContext;
}

class Source implements KernelSource {
  constructor(readonly widget: SourceWidget) {}
  get path(): string {
    return this.widget.sessionContext.path;
  }
  get name(): string {
    return this.widget.title.label || this.path;
  }
  get kernelId(): string | null {
    return this.widget.sessionContext.session?.kernel?.id ?? null;
  }
  get widgetId(): string {
    return this.widget.id;
  }
}

export class DashboardStore implements IDashboardStore {
  private readonly list: Source[] = [];
  private readonly snapshots = new Map<string, DashboardSnapshot>();
  private readonly problems = new Map<string, string>();
  /**
   * Per kernel id, the publishing processes (snapshot `source`s) a restart ended. A restart keeps
   * the kernel id, and the old process's last snapshot may still be on its way after the
   * "restarting" status: it is dropped rather than shown as the new process's.
   */
  private readonly retired = new Map<string, Set<string>>();
  private currentSource: Source | null = null;
  private readonly changedSignal = new Signal<IDashboardStore, void>(this);

  get changed(): ISignal<IDashboardStore, void> {
    return this.changedSignal;
  }

  get sources(): readonly KernelSource[] {
    return this.list;
  }

  get current(): KernelSource | null {
    return this.currentSource;
  }

  find(path: string): KernelSource | null {
    return this.list.find((source) => source.path === path) ?? null;
  }

  snapshot(kernelId: string): DashboardSnapshot | undefined {
    return this.snapshots.get(kernelId);
  }

  problem(kernelId: string): string | undefined {
    return this.problems.get(kernelId);
  }

  /** Starts listening to a notebook's or console's kernel, until the widget is disposed. */
  add(widget: SourceWidget): void {
    if (this.list.some((source) => source.widget === widget)) return;
    const source = new Source(widget);
    this.list.push(source);
    const { sessionContext } = widget;
    const onMessage = (_: ISessionContext, message: KernelMessage.IMessage): void => this.receive(source, message);
    const onChange = (): void => {
      this.forgetUnusedKernels();
      this.changedSignal.emit();
    };
    // A restarted (or dead) kernel's last snapshot describes a process that is gone.
    const onStatus = (_: ISessionContext, status: string): void => {
      const kernelId = source.kernelId;
      if (kernelId === null || !["restarting", "autorestarting", "dead"].includes(status)) return;
      const ended = this.snapshots.get(kernelId)?.source;
      if (ended !== undefined) this.retired.set(kernelId, (this.retired.get(kernelId) ?? new Set()).add(ended));
      if (this.snapshots.delete(kernelId) || this.problems.delete(kernelId)) this.changedSignal.emit();
    };
    sessionContext.iopubMessage.connect(onMessage);
    sessionContext.statusChanged.connect(onStatus);
    sessionContext.kernelChanged.connect(onChange);
    sessionContext.sessionChanged.connect(onChange);
    widget.title.changed.connect(onChange);
    widget.disposed.connect(() => {
      sessionContext.iopubMessage.disconnect(onMessage);
      sessionContext.statusChanged.disconnect(onStatus);
      sessionContext.kernelChanged.disconnect(onChange);
      sessionContext.sessionChanged.disconnect(onChange);
      this.list.splice(this.list.indexOf(source), 1);
      // Until the trackers name the next current one, follow the most recently opened.
      if (this.currentSource === source) this.currentSource = this.list.at(-1) ?? null;
      this.forgetUnusedKernels();
      this.changedSignal.emit();
    });
    this.changedSignal.emit();
  }

  /** The notebook or console the user moved to (the trackers' currentChanged); null keeps the last one. */
  setCurrent(widget: SourceWidget | null): void {
    if (widget === null || widget.isDisposed) return;
    // A tracker may name its new widget current before it announces it as added.
    this.add(widget);
    const source = this.list.find((candidate) => candidate.widget === widget) ?? null;
    if (source === null || source === this.currentSource) return;
    this.currentSource = source;
    this.changedSignal.emit();
  }

  private receive(source: Source, message: KernelMessage.IMessage): void {
    const type = message.header.msg_type;
    if (type !== "update_display_data" && type !== "display_data") return;
    const data = (message.content as { data?: Record<string, unknown> }).data;
    if (data === undefined || !(DASHBOARD_MIME_TYPE in data)) return;
    const kernelId = source.kernelId;
    if (kernelId === null) return;
    let snapshot: DashboardSnapshot;
    try {
      snapshot = parseSnapshot(data[DASHBOARD_MIME_TYPE]);
    } catch (error) {
      if (!(error instanceof SnapshotError)) throw error;
      this.problems.set(kernelId, error.message);
      this.changedSignal.emit();
      return;
    }
    if (this.retired.get(kernelId)?.has(snapshot.source) === true) return;
    // Every widget on this kernel hears the same message; keep it once, and only if newer.
    if (!isNewer(snapshot, this.snapshots.get(kernelId))) return;
    this.snapshots.set(kernelId, snapshot);
    this.problems.delete(kernelId);
    this.changedSignal.emit();
  }

  /** Drops the snapshots of kernels no open notebook or console uses any more. */
  private forgetUnusedKernels(): void {
    const used = new Set(this.list.map((source) => source.kernelId));
    for (const kernelId of [...this.snapshots.keys(), ...this.problems.keys(), ...this.retired.keys()]) {
      if (!used.has(kernelId)) {
        this.snapshots.delete(kernelId);
        this.problems.delete(kernelId);
        this.retired.delete(kernelId);
      }
    }
  }
}
