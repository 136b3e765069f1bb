// tsdask: Dask's task scheduling and diagnostics for TypeScript notebooks.
// This is the package's main entry (`require("tsdask")`); see README.md.
import { installTaskGlobals } from "./kernel/metrics/task-globals";

export * from "./kernel";

// The same task code runs in this thread (the sync scheduler) as on workers.
installTaskGlobals();
