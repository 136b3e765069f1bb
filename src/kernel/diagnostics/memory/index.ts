// MemorySampler: labelled memory-over-time series (Dask's), from a pluggable source: this process
// tree or a cluster's heartbeats.
export { MemorySampler, type MemorySampleOptions, collectMemorySeries } from "./sampler";
export { type MemorySource, type MemoryRecording, localMemory } from "./source";
export { type MemoryMeasure, type MemoryPoint, type MemorySeries, MEASURES, measureNamed } from "../../../protocol/memory";
export { memoryPlot, type MemoryPlotOptions } from "./plot";
export { memorySpec } from "../../../protocol/plot/memory";
