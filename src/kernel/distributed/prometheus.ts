// The cluster's metrics in Prometheus' text format, for the dashboard servers' `/metrics` (Dask's
// distributed/http/{scheduler,worker}/prometheus): Dask's names where Dask has the metric — the
// scheduler's clients, workers, tasks by state, task groups, per-prefix compute and transfer
// seconds, bytes in memory and state totals; each worker's tasks, threads, memory and transfers
// (Dask serves those from each worker; here the scheduler serves them, labelled by worker) — plus
// the fine performance metrics, which Dask does not export: the cluster's cumulative ones and each
// span's. Built with prom-client, read when scraped: values are those of the last heartbeats.
// Loaded only when first scraped (prom-client takes a fifth of a second to load).

import { Counter, Gauge, Registry } from "prom-client";
import type { MetricRecord } from "../../protocol/records";
import type { Scheduler } from "./scheduler/scheduler";
import { TASK_STATE_NAMES } from "./scheduler/state";

export interface MetricsText {
  readonly contentType: string;
  readonly body: string;
}

const registries = new WeakMap<Scheduler, SchedulerMetrics>();

/** The scheduler's metrics now, in Prometheus' text format. */
export async function prometheusText(scheduler: Scheduler): Promise<MetricsText> {
  let metrics = registries.get(scheduler);
  if (metrics === undefined) registries.set(scheduler, (metrics = new SchedulerMetrics(scheduler)));
  return { contentType: metrics.registry.contentType, body: await metrics.text() };
}

type Labels = Record<string, string>;

/** One registry per scheduler, whose metrics read the scheduler when collected. */
class SchedulerMetrics {
  readonly registry = new Registry();
  /** Fine performance metrics, one counter per (family, unit): units are whatever users digest. */
  private readonly fineCounters = new Map<string, Counter>();

  constructor(private readonly scheduler: Scheduler) {
    const state = scheduler.state;
    this.gauge("dask_scheduler_clients", "Number of clients connected", [], () => [[{}, scheduler.clients.size]]);
    this.counter("dask_scheduler_client_connections_added_total", "Total number of client connections added", [], () => [[{}, scheduler.totals.clientsAdded]]);
    this.counter("dask_scheduler_client_connections_removed_total", "Total number of client connections removed", [], () => [[{}, scheduler.totals.clientsRemoved]]);
    this.gauge("dask_scheduler_workers", "Number of workers known by scheduler", ["state"], () => workerStates(scheduler));
    this.counter("dask_scheduler_workers_added_total", "Total number of workers added", [], () => [[{}, scheduler.totals.workersAdded]]);
    this.counter("dask_scheduler_workers_removed_total", "Total number of workers removed", [], () => [[{}, scheduler.totals.workersRemoved]]);
    this.gauge("dask_scheduler_tasks", "Number of tasks known by scheduler", ["state"], () => [...state.tasksByState()].map(([name, n]) => [{ state: name }, n]));
    this.counter("dask_scheduler_tasks_forgotten_total", "Total number of processed tasks no longer in memory and already removed from the scheduler", [], () => {
      let forgotten = 0;
      for (const [, totals] of state.prefixTotals.entries()) forgotten += totals.states[TASK_STATE_NAMES.indexOf("forgotten")];
      return [[{}, forgotten]];
    });
    this.gauge("dask_scheduler_task_groups", "Number of task groups known by scheduler", [], () => [[{}, state.taskGroupCount]]);
    this.counter("dask_scheduler_tasks_compute_seconds_total", "Total amount of compute time spent in each prefix", ["task_prefix_name"], () =>
      [...state.prefixTotals.entries()].map(([prefix, totals]) => [{ task_prefix_name: prefix }, totals.computeSeconds]),
    );
    this.counter("dask_scheduler_tasks_transfer_seconds_total", "Total amount of transfer time spent in each prefix", ["task_prefix_name"], () =>
      [...state.prefixTotals.entries()].map(([prefix, totals]) => [{ task_prefix_name: prefix }, totals.transferSeconds]),
    );
    this.gauge("dask_scheduler_tasks_output_bytes", "Current number of bytes in memory (without duplicates) for each prefix", ["task_prefix_name"], () =>
      [...state.memoryByPrefix()].map(([prefix, bytes]) => [{ task_prefix_name: prefix }, bytes]),
    );
    this.counter("dask_scheduler_prefix_state_totals_total", "Accumulated count of task prefix in each state", ["task_prefix_name", "state"], () =>
      [...state.prefixTotals.entries()].flatMap(([prefix, totals]) => TASK_STATE_NAMES.map((name, i) => [{ task_prefix_name: prefix, state: name }, totals.states[i]] as const)),
    );
    // Dask's worker collector, one series per worker.
    const workers = (): ReturnType<Scheduler["workerRecords"]> => scheduler.workerRecords();
    this.gauge("dask_worker_tasks", "Number of tasks at worker", ["worker", "state"], () =>
      workers().flatMap((w) => Object.entries(w.tasks).map(([taskState, n]) => [{ worker: w.address, state: taskState }, n] as const)),
    );
    this.gauge("dask_worker_threads", "Number of worker threads", ["worker"], () => workers().map((w) => [{ worker: w.address }, w.nthreads]));
    this.gauge("dask_worker_memory_bytes", "Memory breakdown", ["worker", "type"], () =>
      workers().flatMap((w) => [
        [{ worker: w.address, type: "managed" }, w.memory.managed] as const,
        [{ worker: w.address, type: "unmanaged" }, w.memory.unmanaged] as const,
        [{ worker: w.address, type: "spilled" }, w.memory.spilled] as const,
      ]),
    );
    this.counter("dask_worker_transfer_outgoing_bytes_total", "Total size of data transfers to other workers since the worker was started", ["worker"], () =>
      workers().map((w) => [{ worker: w.address }, w.transferredOut]),
    );
    this.counter("dask_worker_transfer_incoming_bytes_total", "Total size of data transfers from other workers since the worker was started", ["worker"], () =>
      workers().map((w) => [{ worker: w.address }, w.transferredIn]),
    );
  }

  async text(): Promise<string> {
    // Counters for units first seen since the last scrape are registered before collecting.
    this.fine("dask_scheduler_cumulative_worker_metrics", "Fine performance metrics of every worker since the cluster started (Dask's cumulative_worker_metrics)", ["context", "task_prefix_name", "activity"], () =>
      this.scheduler.cumulativeWorkerMetrics().map((m) => [m, { context: m.context, task_prefix_name: m.prefix ?? "", activity: m.activity }]),
    );
    this.fine("dask_scheduler_span_metrics", "Fine performance metrics of each span's tasks, its subspans' included (Dask's Span.cumulative_worker_metrics)", ["span_id", "span_name", "task_prefix_name", "activity"], () =>
      this.scheduler.spans().flatMap((span) =>
        span.metrics.map((m) => [m, { span_id: span.id, span_name: span.name.join("/"), task_prefix_name: m.prefix ?? "", activity: m.activity }] as const),
      ),
    );
    return this.registry.metrics();
  }

  private gauge(name: string, help: string, labelNames: readonly string[], read: () => readonly (readonly [Labels, number])[]): void {
    new Gauge({ name, help, labelNames, registers: [this.registry], collect: collector(read) });
  }

  private counter(name: string, help: string, labelNames: readonly string[], read: () => readonly (readonly [Labels, number])[]): void {
    new Counter({ name, help, labelNames, registers: [this.registry], collect: collector(read) });
  }

  /** `<family>_<unit>_total` counters of the records `read` gives, each with its labels. */
  private fine(family: string, help: string, labelNames: readonly string[], read: () => readonly (readonly [MetricRecord, Labels])[]): void {
    const records = read();
    const byUnit = new Map<string, (readonly [MetricRecord, Labels])[]>();
    for (const entry of records) {
      const unit = entry[0].unit.replace(/[^a-zA-Z0-9_]/g, "_");
      const list = byUnit.get(unit);
      if (list === undefined) byUnit.set(unit, [entry]);
      else list.push(entry);
    }
    for (const [name, counter] of this.fineCounters) if (name.startsWith(`${family}_`)) counter.reset();
    for (const [unit, entries] of byUnit) {
      const name = `${family}_${unit}_total`;
      let counter = this.fineCounters.get(name);
      if (counter === undefined) {
        counter = new Counter({ name, help: `${help}, in ${unit}`, labelNames, registers: [this.registry] });
        this.fineCounters.set(name, counter);
      }
      for (const [record, labels] of entries) counter.inc(labels, Math.max(0, record.value));
    }
  }
}

/** A metric's collect: its series are replaced by what `read` gives now (a counter's totals are kept by the scheduler). */
function collector(read: () => readonly (readonly [Labels, number])[]): (this: Gauge | Counter) => void {
  return function (this: Gauge | Counter) {
    this.reset();
    for (const [labels, value] of read()) {
      if (this instanceof Gauge) this.set(labels, value);
      else this.inc(labels, value);
    }
  };
}

/** Dask's worker states: idle (nothing processing), saturated (more than one task per thread), partially saturated, paused, retiring. */
function workerStates(scheduler: Scheduler): [Labels, number][] {
  const counts = { idle: 0, partially_saturated: 0, saturated: 0, paused: 0, retiring: 0 };
  for (const ws of scheduler.workers.values()) {
    if (ws.status === "paused") counts.paused++;
    else if (ws.status !== "running") counts.retiring++;
    else if (ws.processing.size === 0) counts.idle++;
    else if (ws.processing.size > ws.nthreads) counts.saturated++;
    else counts.partially_saturated++;
  }
  return Object.entries(counts).map(([state, n]) => [{ state }, n]);
}
