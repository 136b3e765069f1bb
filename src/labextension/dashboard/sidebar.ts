// The "tsdask" sidebar: every dashboard panel kind, marked with whether the current notebook's
// kernel has data for it. A click (or Enter) opens the panel; dragging an item starts a real Lumino
// drag carrying a widget factory, so the panel drops anywhere in the dock — beside the notebook,
// split below, as a tab — as a dock tab would.
import type { LabIcon } from "@jupyterlab/ui-components";
import { MimeData } from "@lumino/coreutils";
import { Drag } from "@lumino/dragdrop";
import { Widget } from "@lumino/widgets";
import { element, textElement } from "../../views/dom";
import { PANEL_KINDS, type PanelKind, kindsWithData } from "../../views/dashboard";
import type { IDashboardStore } from "./store";

/** The MIME type Lumino's DockPanel accepts drops of: a function returning the widget to insert. */
export const WIDGET_FACTORY_MIME = "application/vnd.lumino.widget-factory";
/** Pixels the pointer must travel with the button down before a press becomes a drag. */
const DRAG_THRESHOLD = 5;

export interface SidebarOptions {
  readonly store: IDashboardStore;
  readonly icons: ReadonlyMap<string, LabIcon>;
  readonly sidebarIcon: LabIcon;
  /** Opens (or shows) the kind's panel. */
  open(kind: PanelKind): void;
  /** The panel to drop for `kind` (the open one, or a new one), ready for the dock. */
  panelFor(kind: PanelKind): Widget;
  defaultLayout(): void;
}

export class DashboardSidebar extends Widget {
  private readonly source = element("p", "tsdask-sidebar-source");
  private readonly items = new Map<string, { kind: PanelKind; item: HTMLElement }>();
  private press: { kind: PanelKind; item: HTMLElement; x: number; y: number } | undefined;
  /** Set when a press became a drag, so the click that may follow does not also open the panel. */
  private dragged = false;

  constructor(private readonly options: SidebarOptions) {
    super();
    this.id = "tsdask-sidebar";
    this.addClass("tsdask-sidebar");
    this.title.icon = options.sidebarIcon;
    this.title.caption = "tsdask dashboard";
    textElement("h2", "tsdask-sidebar-heading", "tsdask dashboard", this.node);
    this.node.append(this.source);
    textElement("p", "tsdask-sidebar-hint", "Click a panel to open it, or drag it anywhere in the layout.", this.node);
    const list = element("ul", "tsdask-sidebar-list", this.node);
    for (const kind of PANEL_KINDS) list.append(this.item(kind));
    const layout = textElement("button", "jp-Button jp-mod-styled jp-mod-accept tsdask-sidebar-layout", "Default layout", this.node);
    layout.title = "Fine Performance Metrics beside the notebook, Task Stream below it";
    layout.addEventListener("click", () => options.defaultLayout());
    options.store.changed.connect(this.refresh, this);
    this.refresh();
  }

  override dispose(): void {
    this.options.store.changed.disconnect(this.refresh, this);
    this.endPress();
    super.dispose();
  }

  private item(kind: PanelKind): HTMLElement {
    const li = element("li", "tsdask-sidebar-entry");
    const item = element("button", "tsdask-sidebar-item", li);
    item.dataset.kind = kind.id;
    const icon = element("span", "tsdask-sidebar-icon", item);
    this.options.icons.get(kind.id)?.element({ container: icon });
    textElement("span", "tsdask-sidebar-label", kind.title, item);
    element("span", "tsdask-sidebar-mark", item);
    item.addEventListener("click", () => {
      if (this.dragged) this.dragged = false;
      else this.options.open(kind);
    });
    item.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      this.dragged = false;
      this.press = { kind, item, x: event.clientX, y: event.clientY };
      document.addEventListener("pointermove", this.onPointerMove, true);
      document.addEventListener("pointerup", this.endPress, true);
    });
    this.items.set(kind.id, { kind, item });
    return li;
  }

  private readonly onPointerMove = (event: PointerEvent): void => {
    const press = this.press;
    if (press === undefined) return;
    if (Math.abs(event.clientX - press.x) + Math.abs(event.clientY - press.y) < DRAG_THRESHOLD) return;
    this.endPress();
    this.dragged = true;
    void this.startDrag(press.kind, press.item, event.clientX, event.clientY);
  };

  private readonly endPress = (): void => {
    this.press = undefined;
    document.removeEventListener("pointermove", this.onPointerMove, true);
    document.removeEventListener("pointerup", this.endPress, true);
  };

  private async startDrag(kind: PanelKind, item: HTMLElement, x: number, y: number): Promise<void> {
    const dragImage = item.cloneNode(true) as HTMLElement;
    dragImage.classList.add("tsdask-sidebar-drag-image");
    const mimeData = new MimeData();
    // DockPanel calls the factory on drop: the panel is made (or found) only if it lands.
    mimeData.setData(WIDGET_FACTORY_MIME, () => this.options.panelFor(kind));
    const drag = new Drag({ mimeData, dragImage, proposedAction: "move", supportedActions: "copy-move", source: this });
    await drag.start(x, y);
  }

  /** Marks the kinds the current kernel has data for, and names that notebook. */
  private refresh(): void {
    const { store } = this.options;
    const current = store.current;
    const snapshot = current?.kernelId ? store.snapshot(current.kernelId) : undefined;
    this.source.textContent = current === null ? "No notebook or console is open." : `Data of ${current.name}`;
    const withData = kindsWithData(snapshot);
    for (const { kind, item } of this.items.values()) {
      const has = withData.has(kind.id);
      item.dataset.hasData = String(has);
      item.title = `${kind.title}: ${has ? "has data" : "no data"} for ${current?.name ?? "no notebook"}`;
      item.setAttribute("aria-label", item.title);
    }
  }
}
