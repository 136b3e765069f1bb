// Fine performance metrics (seed 004): contextMeter and the per-task ledger executors measure into,
// spans, the pure SpansState a scheduler feeds, and the FinePerformanceMetrics callback and panel.
export { contextMeter, type TaskMetric } from "./context-meter";
export { span, currentSpan, type SpanPath } from "./spans";
export { FinePerformanceMetrics } from "./fine-performance-metrics";
export { FpmPanel, type FpmPanelOptions } from "./panel";
export { SpansState, groupOfKey, type ObservedTask, type MetricCell, type TaskStateName } from "./spans-state";
export type { FpmData, FpmSelection, FpmModel, FpmSegment, FpmSlice, FpmSource } from "../../protocol/fpm";
export type { MetricRecord, SpanRecord } from "../../protocol/records";
