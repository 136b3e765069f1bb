// The dashboard's JupyterLab plugins: the DashboardStore service (fed by every notebook's and
// console's kernel), and the "tsdask" sidebar with its commands, palette entries, panel tracker
// and layout restore. This file is the package's `jupyterlab.extension` entry.
import { ILabShell, ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette, type IWidgetTracker, WidgetTracker } from "@jupyterlab/apputils";
import { IConsoleTracker } from "@jupyterlab/console";
import { INotebookTracker } from "@jupyterlab/notebook";
import { LabIcon } from "@jupyterlab/ui-components";
import type { ReadonlyPartialJSONObject } from "@lumino/coreutils";
import type { DockLayout } from "@lumino/widgets";
import { ICONS, PANEL_KINDS, type PanelKind, type PanelState, panelKind } from "../../views/dashboard";
import { DashboardPanel } from "./panel";
import { DashboardSidebar } from "./sidebar";
import { DashboardStore, IDashboardStore, type SourceWidget } from "./store";

export { IDashboardStore } from "./store";

const COMMANDS = {
  open: "tsdask:open-panel",
  defaultLayout: "tsdask:default-layout",
  togglePin: "tsdask:toggle-pin",
} as const;
const PALETTE_CATEGORY = "tsdask dashboard";

/** What `tsdask:open-panel` takes (and what the layout saves per panel). */
interface OpenArgs {
  readonly kind: string;
  /** Pin to this notebook path; absent or null: follow the active notebook. */
  readonly pinned?: string | null;
  readonly state?: PanelState;
  /** Where to put a new panel, relative to the widget with id `ref` (default: beside the notebook). */
  readonly mode?: DockLayout.InsertMode;
  readonly ref?: string | null;
}

function trackSources(store: DashboardStore, tracker: IWidgetTracker<SourceWidget>): void {
  tracker.forEach((widget) => store.add(widget));
  tracker.widgetAdded.connect((_, widget) => store.add(widget));
  tracker.currentChanged.connect((_, widget) => store.setCurrent(widget));
  store.setCurrent(tracker.currentWidget);
}

const storePlugin: JupyterFrontEndPlugin<IDashboardStore> = {
  id: "tsdask:dashboard-store",
  description: "Keeps the latest tsdask dashboard snapshot of each notebook's and console's kernel.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IConsoleTracker],
  provides: IDashboardStore,
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker, consoles: IConsoleTracker | null): IDashboardStore => {
    const store = new DashboardStore();
    trackSources(store, notebooks);
    if (consoles !== null) trackSources(store, consoles);
    return store;
  },
};

const dashboardPlugin: JupyterFrontEndPlugin<void> = {
  id: "tsdask:dashboard",
  description: "The tsdask sidebar: live dashboard panels to open or drag into the layout.",
  autoStart: true,
  requires: [IDashboardStore, ILabShell, ILayoutRestorer],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, store: IDashboardStore, shell: ILabShell, restorer: ILayoutRestorer, palette: ICommandPalette | null): void => {
    const icons = new Map(PANEL_KINDS.map((kind) => [kind.id, new LabIcon({ name: `tsdask:${kind.id}`, svgstr: kind.icon })]));
    const sidebarIcon = new LabIcon({ name: "tsdask:dashboard", svgstr: ICONS.tsdask });
    const tracker = new WidgetTracker<DashboardPanel>({ namespace: "tsdask-dashboard" });

    const kindOf = (id: unknown): PanelKind => {
      const kind = typeof id === "string" ? panelKind(id) : undefined;
      if (kind === undefined) {
        throw new Error(`tsdask: unknown dashboard panel ${JSON.stringify(id)}; the panels are ${PANEL_KINDS.map((k) => k.id).join(", ")}`);
      }
      return kind;
    };
    const findPanel = (kind: PanelKind, pinned: string | null): DashboardPanel | undefined =>
      tracker.find((panel) => panel.kind === kind && panel.pinned === pinned);
    const createPanel = (kind: PanelKind, pinned: string | null, state: PanelState = {}): DashboardPanel => {
      const panel = new DashboardPanel({ kind, icon: icons.get(kind.id)!, store, pinned, state });
      panel.saveNeeded.connect(() => void tracker.save(panel));
      void tracker.add(panel);
      return panel;
    };
    /** Beside the notebook the first time; as a tab next to the other dashboard panels after that. */
    const defaultPlace = (): DocumentPlace => {
      const other = tracker.find((panel) => panel.isAttached);
      if (other !== undefined) return { mode: "tab-after", ref: other.id };
      return { mode: "split-right", ref: store.current?.widgetId ?? null };
    };

    app.commands.addCommand(COMMANDS.open, {
      label: (args) => {
        const kind = typeof args.kind === "string" ? panelKind(args.kind) : undefined;
        return kind !== undefined ? `Open ${kind.title} panel` : "Open dashboard panel";
      },
      caption: "Open a live tsdask dashboard panel for the active notebook's kernel",
      icon: (args) => (typeof args.kind === "string" ? icons.get(args.kind) : undefined) ?? sidebarIcon,
      execute: (raw) => {
        const args = raw as unknown as OpenArgs;
        const kind = kindOf(args.kind);
        const pinned = typeof args.pinned === "string" ? args.pinned : null;
        let panel = findPanel(kind, pinned);
        if (panel === undefined) panel = createPanel(kind, pinned, args.state);
        if (!panel.isAttached || args.mode !== undefined) {
          const place = args.mode !== undefined ? { mode: args.mode, ref: args.ref ?? null } : defaultPlace();
          shell.add(panel, "main", { ...place, activate: false });
        }
        shell.activateById(panel.id);
        return panel;
      },
    });

    app.commands.addCommand(COMMANDS.defaultLayout, {
      label: "Dashboard default layout",
      caption: "Fine Performance Metrics beside the notebook, Task Stream below it",
      execute: async () => {
        const ref = store.current?.widgetId ?? null;
        await app.commands.execute(COMMANDS.open, { kind: "fpm", mode: "split-right", ref });
        await app.commands.execute(COMMANDS.open, { kind: "task-stream", mode: "split-bottom", ref });
      },
    });

    app.commands.addCommand(COMMANDS.togglePin, {
      label: "Pin dashboard panel to its notebook",
      caption: "Pinned, a panel keeps showing one notebook's kernel; otherwise it follows the active notebook",
      isEnabled: () => tracker.currentWidget !== null,
      isToggled: () => tracker.currentWidget?.pinned != null,
      execute: () => tracker.currentWidget?.togglePin(),
    });

    if (palette !== null) {
      for (const kind of PANEL_KINDS) palette.addItem({ command: COMMANDS.open, category: PALETTE_CATEGORY, args: { kind: kind.id } });
      palette.addItem({ command: COMMANDS.defaultLayout, category: PALETTE_CATEGORY });
      palette.addItem({ command: COMMANDS.togglePin, category: PALETTE_CATEGORY });
    }

    const sidebar = new DashboardSidebar({
      store,
      icons,
      sidebarIcon,
      open: (kind) => void app.commands.execute(COMMANDS.open, { kind: kind.id }),
      panelFor: (kind) => findPanel(kind, null) ?? createPanel(kind, null),
      defaultLayout: () => void app.commands.execute(COMMANDS.defaultLayout),
    });
    shell.add(sidebar, "left", { rank: 250 });
    restorer.add(sidebar, sidebar.id);

    // Called during activation, before the restorer's first pass: open panels, where they were,
    // with their pin and view state, come back after a reload and reconnect to the store.
    void restorer.restore(tracker, {
      command: COMMANDS.open,
      args: (panel) => ({ kind: panel.kind.id, pinned: panel.pinned, state: panel.state }) as ReadonlyPartialJSONObject,
      name: (panel) => `${panel.kind.id}:${panel.pinned ?? ""}`,
    });
  },
};

interface DocumentPlace {
  readonly mode: DockLayout.InsertMode;
  readonly ref: string | null;
}

export default [storePlugin, dashboardPlugin];
