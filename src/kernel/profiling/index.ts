// Statistical profiling of this process's threads with V8's sampler (node:inspector): the sampler
// any thread can host, the fold into Dask's profile trees, and the hub profilers lease it from.
export { ThreadSampler, wakeSampler, type SampleBatch, type SampledFrame } from "./thread-sampler";
export { SampledThread, type ThreadProfile } from "./thread";
export { foldThreadProfile, withSourceLocations, TASK_RUNNER_FILES, type FoldOptions } from "./fold";
export { profiling, ProfileHub, DEFAULT_PROFILING, type ProfileSource, type ProfilingOptions, type ProfilingLease } from "./hub";
export { callingThread, MAIN_SOURCE } from "./main-thread";
export { PoolProfiles, type ProfiledWorker } from "./pool-source";
export { type ProfilerControl, type ProfileMessage, isProfilerControl } from "./messages";
