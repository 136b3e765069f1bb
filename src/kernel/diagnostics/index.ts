// Local diagnostics, Dask's dask.diagnostics: ProgressBar, Profiler, ResourceProfiler and
// CacheProfiler are Callbacks; their records feed visualize() and the notebook views. Beyond
// them, seed 003's: the statistical profiler, the task stream, MemorySampler and the report.
export { ProgressBar, type ProgressBarOptions, type ProgressOutput } from "./progress";
export { Profiler, type ProfilerResults, threadProf, processProf } from "./profiler";
export { ResourceProfiler, type ResourceProfilerOptions } from "./resource";
export { CacheProfiler, type CacheProfilerOptions } from "./cache";
export { nbytes } from "../metrics/nbytes";
export { getTaskStream, type GetTaskStreamOptions, type TaskStream, type TaskStreamWithFigure, TaskStreamCollector, TaskStreamTable, taskStreamPlot } from "./taskstream";
export { MemorySampler, type MemorySampleOptions, type MemorySource, type MemoryMeasure, localMemory } from "./memory";
export { bandwidthSummary, bandwidthPlot, nameTransferLogs, type BandwidthDetail, type TransferLogs } from "./bandwidth";
export { performanceReport, PerformanceReport, type PerformanceReportOptions } from "./report";
export { StatisticalProfiler, type StatisticalProfilerOptions, type ProfileSelection, ProfileFigure, type ProfileFigureOptions } from "./statprof";
export { FinePerformanceMetrics, FpmPanel, type FpmPanelOptions } from "./fpm";
export { formatTime } from "./format";
export { clusterSource, type ClusterDiagnosticsSource, type TimeRange } from "./cluster-source";
export { type TaskData, type ResourceData, type CacheData, type ProfileSnapshot, type Visualizable, now } from "./types";
