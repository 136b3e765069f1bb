// The distributed half: a cluster scheduler in this process (./scheduler), worker processes
// (./worker), LocalCluster (./local), Redis clusters (./redis) and the Client with its Futures
// (./client). See CONTRACTS.md.
export { LocalCluster, type LocalClusterOptions } from "./local";
// Only what loads no Redis client: Client.connect("redis://…") loads it when first used.
export type { RedisCluster, RedisClusterOptions } from "./redis/cluster";
export { RedisAddressError, RedisConnectError, RedisConnectionLostError, RedisDataLostError, RedisProtocolError } from "./redis/errors";
export { WorkerCannotRunError } from "./redis/functions";
export {
  Client,
  Future,
  KilledWorkerError,
  ClusterResult,
  type FutureStatus,
  type ClusterHandle,
  type FutureOr,
  ClusterDiagnostics,
  type ClientTaskStreamOptions,
  type ClientProfileOptions,
  type ClientBandwidthOptions,
  type PlottedTaskStream,
  type PlottedProfile,
  type PlottedBandwidth,
} from "./client";
export { SchedulerPlugin, WorkerPlugin, type GraphUpdate, type TransitionInfo } from "./plugins";
export { Scheduler, type Transport, type TransportEvents, type Placement, TaskStreamRing, type CollectOptions } from "./scheduler";
export type { WorkerView, WorkerDataView, WorkerMemoryView } from "./worker/view";
