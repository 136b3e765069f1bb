// The user's side of a cluster: Client (the default scheduler while open), Futures, graph
// computations with callbacks, and the errors they raise.
export { Client, type ClusterHandle, type FutureOr } from "./client";
export { Future, type FutureStatus } from "./future";
export { KilledWorkerError } from "./errors";
export { ClusterResult } from "./results";
export {
  ClusterDiagnostics,
  type ClientTaskStreamOptions,
  type ClientProfileOptions,
  type ClientBandwidthOptions,
  type PlottedTaskStream,
  type PlottedProfile,
  type PlottedBandwidth,
} from "./diagnostics";
