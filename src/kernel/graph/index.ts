// Graphs: keys, task specs in Dask's raw-graph convention, culling and static ordering.
// Pure data and functions; nothing here runs a task.
export { type Key, type KeyPart, keyId, isKey, formatKey, keyStr, keyPrefix, compareKeys } from "./keys";
export { Graph, type GraphInput } from "./graph";
export { TaskRef, Quoted, ref, quote, type Expr, evaluate } from "./spec";
export { type Plan, buildPlan } from "./plan";
export { GraphError, MissingKeyError, MissingDependencyError, CycleError, InvalidTaskError } from "./errors";
