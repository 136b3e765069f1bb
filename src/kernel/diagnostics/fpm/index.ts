// Presenting fine performance metrics: the FinePerformanceMetrics callback for the local
// schedulers and the FPM panel (notebook display or HTML file) that the Client's panel shares.
export { FinePerformanceMetrics } from "./fine-performance-metrics";
export { FpmPanel, type FpmPanelOptions } from "./panel";
