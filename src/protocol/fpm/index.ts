// The Fine Performance Metrics panel as pure data: the snapshot it draws from, the selector state,
// what the charts show for them (model), and the charts' Vega-Lite spec — shared by the kernel
// (static SVG, text) and the browser view, so both show the same thing.
export { type FpmData, type FpmSelection, type FpmOptions, type FpmModel, type FpmSlice, type FpmSegment, type FpmSource, DEFAULT_SELECTION, MAX_FUNCTIONS, activityColors, fpmModel, fpmOptions, fpmSummary } from "./model";
export { type FpmChartOptions, FPM_MIN_WIDTH, MARK_NAMES, fpmSpec } from "./chart";
export { formatMetric, formatShare, axisStep } from "./format";
export { type Interval, IDLE_OR_OTHER_SPANS, IDLE_PREFIX, findByTags, isIdleRow, mergeSpans, spanTags, unionCpuSeconds, withIdle } from "./spans";
