// A cluster on the tsdask dashboard: the scheduler's state as dashboard sections (ClusterFeed, one per
// scheduler), and its computations' progress counted from the task stream, with no work per task.
export { ClusterFeed, clusterFeed, type FeedCluster } from "./feed";
export { ClusterComputations } from "./computations";
