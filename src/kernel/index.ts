// The Node library that runs inside the tslab kernel (or any Node ≥ 20 process):
// graphs, the scheduler, callbacks, collections, diagnostics and the notebook display bridge.
export * from "./graph";
export * from "./scheduler";
export * from "./callbacks";
export * from "./collections";
export * from "./diagnostics";
export * from "./display";
export * from "./diagnostics/visualize";
export * from "./distributed";
