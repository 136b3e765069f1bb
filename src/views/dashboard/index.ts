// The dashboard's views, shared by the JupyterLab panels and the standalone dashboard page: the
// panel kinds (panels.ts: one registration per view), the panel host, snapshot checks, the page.
export { PANEL_KINDS, panelKind, kindsWithData, safeHasData } from "./panels";
export { sectionPanel, type EmptyHint, type MountPanel, type PanelContext, type PanelKind, type PanelState, type PanelView, type SectionView } from "./kinds";
export { PanelHost, type PanelInput } from "./host";
export { parseSnapshot, isNewer, SnapshotError } from "./snapshot";
export { mountDashboardPage, type DashboardPageOptions } from "./page";
export { ICONS } from "./icons";
