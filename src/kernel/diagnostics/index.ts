// Local diagnostics, Dask's dask.diagnostics: ProgressBar, Profiler, ResourceProfiler and
// CacheProfiler are Callbacks; their records feed visualize() and the notebook views.
export { ProgressBar, type ProgressBarOptions, type ProgressOutput } from "./progress";
export { Profiler, type ProfilerResults, threadProf, processProf } from "./profiler";
export { ResourceProfiler, type ResourceProfilerOptions } from "./resource";
export { CacheProfiler, type CacheProfilerOptions } from "./cache";
export { nbytes } from "./nbytes";
export { formatTime } from "./format";
export { type TaskData, type ResourceData, type CacheData, type ProfileSnapshot, type Visualizable, now } from "./types";
