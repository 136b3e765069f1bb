// The standalone dashboard page (served by the kernel library's serveDashboard): every panel kind
// as a card, fed by the server's stream of snapshots (server-sent events, reconnecting by itself).
// Cards with data come first; the page follows the system's light or dark scheme.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { element, textElement } from "../dom";
import { PanelHost } from "./host";
import type { PanelState } from "./kinds";
import { PANEL_KINDS, kindsWithData } from "./panels";
import { SnapshotError, isNewer, parseSnapshot } from "./snapshot";

export interface DashboardPageOptions {
  /** The server's event stream, relative to the page. */
  readonly events: string;
}

function followSystemTheme(): void {
  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  const apply = (): void => {
    document.body.dataset.jpThemeLight = String(!dark.matches);
    document.body.dataset.jpThemeName = dark.matches ? "dark" : "light";
  };
  apply();
  dark.addEventListener("change", apply);
}

export function mountDashboardPage(root: HTMLElement, options: DashboardPageOptions): void {
  followSystemTheme();
  root.classList.add("tsdask-dashboard-page");
  const header = element("header", "tsdask-dashboard-page-header", root);
  textElement("h1", "", "tsdask dashboard", header);
  const status = element("span", "tsdask-dashboard-page-status", header);
  const grid = element("main", "tsdask-dashboard-grid", root);
  const states = new Map<string, PanelState>();
  const cards = PANEL_KINDS.map((kind) => {
    const card = element("section", "tsdask-dashboard-card", grid);
    card.dataset.kind = kind.id;
    const title = element("h2", "tsdask-dashboard-card-title", card);
    const icon = element("span", "tsdask-dashboard-icon", title);
    icon.innerHTML = kind.icon; // built-in SVG, never data
    title.append(kind.title);
    const host = new PanelHost(kind, { state: states.get(kind.id) ?? {}, saveState: (state) => states.set(kind.id, state) });
    card.append(host.node);
    return { kind, card, host };
  });

  let latest: DashboardSnapshot | undefined;
  const setStatus = (text: string, state: string): void => {
    status.textContent = text;
    status.dataset.state = state;
  };
  const render = (message?: string): void => {
    const withData = kindsWithData(latest);
    // Cards with data first, each group in the kinds' own order; a card moves only when that changes.
    const order = [...cards].sort((a, b) => Number(withData.has(b.kind.id)) - Number(withData.has(a.kind.id)));
    order.forEach(({ card, kind, host }, index) => {
      card.dataset.hasData = String(withData.has(kind.id));
      if (grid.children[index] !== card) grid.insertBefore(card, grid.children[index] ?? null);
      host.show({ snapshot: latest, message, connected: true });
    });
  };

  setStatus("connecting…", "connecting");
  render("Waiting for the first snapshot from the kernel…");
  const events = new EventSource(options.events);
  events.onopen = () => setStatus(latest === undefined ? "connected, waiting for data" : "live", "live");
  events.onerror = () => setStatus("disconnected, retrying…", "disconnected");
  events.onmessage = (message) => {
    let snapshot: DashboardSnapshot;
    try {
      snapshot = parseSnapshot(message.data);
    } catch (error) {
      setStatus(error instanceof SnapshotError ? error.message : String(error), "error");
      return;
    }
    if (!isNewer(snapshot, latest)) return;
    latest = snapshot;
    setStatus(`live · updated ${new Date(snapshot.time * 1000).toLocaleTimeString()}`, "live");
    render();
  };
}
