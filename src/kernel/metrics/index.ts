// Measuring (seed 004's fine performance metrics and sizes): contextMeter and the per-task ledger
// executors measure into, thread clocks, spans, the pure SpansState a scheduler feeds, nbytes.
export { contextMeter, type Metric } from "./context-meter";
export { span, currentSpan, type SpanPath } from "./spans";
export { SpansState, groupOfKey, type ObservedTask, type MetricCell, type TaskStateName } from "./spans-state";
export type { FpmData, FpmSelection, FpmModel, FpmSegment, FpmSlice, FpmSource } from "../../protocol/fpm";
export type { MetricRecord, SpanRecord } from "../../protocol/records";
