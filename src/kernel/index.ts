// The Node library that runs inside the tslab kernel (or any Node ≥ 20 process):
// graphs, the scheduler, callbacks, collections, diagnostics, the notebook display bridge and the dashboard feed.
export * from "./graph";
export * from "./scheduler";
export * from "./callbacks";
export * from "./collections";
export * from "./diagnostics";
export * from "./display";
export * from "./diagnostics/visualize";
export * from "./metrics";
export * from "./dashboard";
export * from "./distributed";
