// LocalCluster: worker processes forked from this one over Unix sockets (the local transport),
// with a nanny that replaces dead workers and restarts those over their memory limit.
export { LocalCluster, type LocalClusterOptions } from "./cluster";
export { LocalTransport } from "./transport";
export { parseBytes } from "./sizes";
