// Browser views that are pure functions of data (payloads and records from src/protocol): plots,
// progress bars, and the distributed half's panels. Shared by the JupyterLab extension (bundled by
// its builder) and by standalone pages (the bundle scripts/build-views.mjs makes for them).
export { PlotView } from "./plot";
export { ProgressView } from "./progress";
export { ClusterView } from "./cluster";
export { parsePayload, PayloadError } from "./payload";
export { FpmView, mountFpm, type FpmHandle, type FpmMountOptions } from "./fpm";
export { ProfileView, mountProfile, type MountedProfile, type ProfileViewState } from "./profile";
export { mountReport, type ReportHandles } from "./report";
/** vega-embed itself, for standalone pages that draw a spec directly. */
export { default as vegaEmbed } from "vega-embed";
/** The dashboard page for serveDashboard's standalone page. */
export { mountDashboardPage } from "./dashboard";
