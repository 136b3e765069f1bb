// The kernel's dashboard feed: providers (local computations through DashboardFeed, later the
// Client) → bounded snapshots ≤ 2 Hz → the notebook's iopub channel and the standalone dashboard page.
export {
  DashboardPublisher,
  dashboardPublisher,
  DEFAULT_DASHBOARD_INTERVAL_MS,
  type DashboardProvider,
  type DashboardSource,
  type PublisherOptions,
  type PublisherStats,
  type SnapshotSink,
} from "./publisher";
export { DashboardFeed, type DashboardFeedOptions } from "./computations";
export {
  serveDashboard,
  parseDashboardAddress,
  registerMetricsSource,
  DEFAULT_DASHBOARD_ADDRESS,
  type DashboardServer,
  type ServeDashboardOptions,
  type MetricsSource,
} from "./server";
export {
  DASHBOARD_LIMITS,
  DASHBOARD_MIME_TYPE,
  type ClusterSection,
  type ComputationProgress,
  type DashboardSections,
  type DashboardSnapshot,
  type MetricsSection,
  type ProfileSection,
  type TaskStreamSection,
} from "../../protocol/dashboard";
