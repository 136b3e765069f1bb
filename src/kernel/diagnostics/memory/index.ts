// MemorySampler: labelled memory-over-time series (Dask's), from a pluggable source: this process
// tree now, a cluster's heartbeats later.
export { MemorySampler, type MemorySampleOptions, collectMemorySeries } from "./sampler";
export { type MemorySource, type MemoryRecording, type MemoryPoint, type MemorySeries, localMemory } from "./source";
export { type MemoryMeasure, MEASURES, measureNamed } from "./measures";
export { memorySpec, memoryPlot, type MemoryPlotOptions } from "./plot";
