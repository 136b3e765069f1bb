// A scheduler's Prometheus metrics as the dashboard servers' `/metrics` reads them. prom-client
// (a fifth of a second to load) is loaded on the first scrape, not when a cluster starts.

import type { MetricsSource } from "../dashboard/server";
import type { Scheduler } from "./scheduler/scheduler";

export function schedulerMetricsSource(scheduler: Scheduler): MetricsSource {
  return () => (require("./prometheus") as typeof import("./prometheus")).prometheusText(scheduler);
}
