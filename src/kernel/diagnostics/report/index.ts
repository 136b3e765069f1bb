// Performance reports: one offline HTML file per recorded block (Dask's performance_report).
export { performanceReport, PerformanceReport, type PerformanceReportOptions } from "./report";
export { buildReport, reportPage, type ReportInputs } from "./build";
