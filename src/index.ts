// tsdask: Dask's task scheduling and diagnostics for TypeScript notebooks.
// This is the package's main entry (`require("tsdask")`); see README.md.
import { recordCellSources } from "./kernel/display/tslab";
import { installTaskGlobals } from "./kernel/metrics/task-globals";

export * from "./kernel";

// The same task code runs in this thread (the sync scheduler) as on workers.
installTaskGlobals();
// In a tslab kernel, performanceReport shows the cell's TypeScript rather than its compiled form.
recordCellSources();
