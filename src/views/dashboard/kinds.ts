// What a dashboard panel kind is: a title, an icon, a test for "this snapshot has data for me",
// what to run to get data, and the view that draws it. The list of kinds is in panels.ts;
// sectionPanel adapts a view of one section's data into a kind's mount.
import type { DashboardSnapshot } from "../../protocol/dashboard";

/** JSON the panel keeps for its view across reloads (a selected unit, a zoom range…). */
export type PanelState = Readonly<Record<string, unknown>>;

export interface PanelContext {
  /** The state the view saved last (empty the first time). */
  readonly state: PanelState;
  /** Keeps `state` with the panel: the JupyterLab layout restores it after a page reload. */
  saveState(state: PanelState): void;
}

/** A mounted view. */
export interface PanelView {
  /**
   * Draws a newer snapshot in place: keep the DOM, the zoom, the selection, the scroll position.
   * Called at most once per animation frame with the latest snapshot (older ones are skipped).
   */
  update(snapshot: DashboardSnapshot): void;
  dispose(): void;
}

/** Draws the first snapshot that has data for the kind into `container` (empty, owned by the view). */
export type MountPanel = (container: HTMLElement, snapshot: DashboardSnapshot, context: PanelContext) => PanelView;

/** What to tell a user whose kernel has no data for a panel: a sentence and the line to run. */
export interface EmptyHint {
  readonly text: string;
  readonly code?: string;
}

export interface PanelKind {
  /** Stable: saved in layouts (`tsdask:open-panel` args), used in element ids and CSS. */
  readonly id: string;
  readonly title: string;
  /** An SVG icon (built in, trusted): 16×16 view box, shapes with class "jp-icon3" to follow the theme. */
  readonly icon: string;
  /** True when `snapshot` carries something this panel can draw. */
  hasData(snapshot: DashboardSnapshot): boolean;
  readonly empty: EmptyHint;
  /** The view; a kind without one yet shows that its data arrived but cannot be drawn by this build. */
  readonly mount?: MountPanel;
}

/** A view of one section's data (the form the FPM, task stream, profile… views take). */
export interface SectionView<T> {
  update(data: T): void;
  dispose(): void;
}

/**
 * A panel's mount from a view of one section: `mount: sectionPanel((s) => s.metrics, mountFpm)`.
 * The panel only mounts once `hasData` is true, so `pick` returns the section then.
 */
export function sectionPanel<T>(
  pick: (snapshot: DashboardSnapshot) => T | undefined,
  mount: (container: HTMLElement, data: T, context: PanelContext) => SectionView<T>,
): MountPanel {
  return (container, snapshot, context) => {
    const first = pick(snapshot);
    if (first === undefined) throw new Error("the snapshot has no data for this panel");
    const view = mount(container, first, context);
    return {
      update: (next) => {
        const data = pick(next);
        if (data !== undefined) view.update(data);
      },
      dispose: () => view.dispose(),
    };
  };
}
