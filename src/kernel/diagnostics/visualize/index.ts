// Profiler plots: stacked, linked Vega-Lite views of Profiler / ResourceProfiler / CacheProfiler
// results (notebook display, standalone HTML, SVG), and Chrome Trace export for Perfetto.
export { visualize, ProfilePlot } from "./visualize";
export type { VisualizeOptions, Palette } from "./options";
export type { VegaLiteSpec } from "./plot";
export { buildSpec, type SpecOptions } from "./spec";
export { exportTrace } from "./trace";
