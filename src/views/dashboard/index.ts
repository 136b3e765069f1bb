// The dashboard's views, shared by the JupyterLab panels and the standalone dashboard page: the
// panel kinds (panels.ts: one registration per view), the panel host, snapshot checks, the page.
export { PANEL_KINDS, panelKind, kindsWithData, safeHasData } from "./panels";
export type { EmptyHint, MountPanel, PanelContext, PanelKind, PanelState, PanelView } from "./kinds";
export { PanelHost, type PanelInput } from "./host";
export { parseSnapshot, isNewer, SnapshotError } from "./snapshot";
export { mountDashboardPage, type DashboardPageOptions } from "./page";
export { ICONS } from "./icons";
