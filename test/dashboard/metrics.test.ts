// Prometheus `/metrics` on the dashboard servers, scraped over real loopback HTTP from a real
// LocalCluster while it computes, and parsed with a Prometheus text-format parser. Ports of
// distributed/http/scheduler/tests/test_scheduler_http.py's Prometheus tests.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, LocalCluster, serveDashboard } from "../../src";
import { fail, slowInc } from "../fixtures/cluster-client-tasks";
import { inc } from "../fixtures/tasks";
import { waitFor } from "../helpers/wait";

interface Sample {
  readonly value: string;
  readonly labels?: Record<string, string>;
}
interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly metrics: readonly Sample[];
}
// The parser ships no types: its output is Prometheus' metric families.
const parsePrometheusText = require("parse-prometheus-text-format") as (text: string) => Family[];

/** GET `url` and parse it: metric families by name. */
async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return new Map(parsePrometheusText(await response.text()).map((family) => [family.name, family]));
}

/** The samples of `family` as label-key → value (label values joined by "|"). */
function series(families: Map<string, Family>, name: string, ...labels: string[]): Map<string, number> {
  const family = families.get(name);
  assert.ok(family, `metric ${name} is served`);
  return new Map(family.metrics.map((sample) => [labels.map((label) => sample.labels?.[label] ?? "").join("|"), Number(sample.value)]));
}

function sum(values: Map<string, number>): number {
  return [...values.values()].reduce((a, b) => a + b, 0);
}

describe("/metrics on a LocalCluster's dashboard (2 workers × 1 thread)", () => {
  const withMetrics = async (fn: (url: string, cluster: LocalCluster, client: Client) => Promise<void>): Promise<void> => {
    const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, dashboardAddress: "127.0.0.1:0", name: "metrics" });
    try {
      await fn(new URL("metrics", cluster.dashboardLink!).href, cluster, await Client.connect(cluster));
    } finally {
      await cluster.close();
    }
  };

  // Port of distributed/http/scheduler/tests/test_scheduler_http.py::test_prometheus
  test("test_prometheus: Dask's scheduler metric names are served, dask_scheduler_clients is 1", () =>
    withMetrics(async (url) => {
      const families = await scrape(url);
      for (const name of [
        "dask_scheduler_clients",
        "dask_scheduler_client_connections_added_total",
        "dask_scheduler_client_connections_removed_total",
        "dask_scheduler_workers",
        "dask_scheduler_workers_added_total",
        "dask_scheduler_workers_removed_total",
        "dask_scheduler_tasks",
        "dask_scheduler_tasks_forgotten_total",
        "dask_scheduler_tasks_output_bytes",
        "dask_scheduler_tasks_compute_seconds_total",
        "dask_scheduler_tasks_transfer_seconds_total",
        "dask_scheduler_task_groups",
        "dask_scheduler_prefix_state_totals_total",
        "dask_worker_tasks",
        "dask_worker_threads",
        "dask_worker_memory_bytes",
        "dask_worker_transfer_outgoing_bytes_total",
      ]) {
        assert.ok(families.has(name), `${name} is served`);
      }
      assert.equal(sum(series(families, "dask_scheduler_clients")), 1);
      assert.deepEqual(series(families, "dask_worker_threads", "worker").size, 2);
      assert.equal(sum(series(families, "dask_scheduler_workers", "state")), 2);
    }));

  // Port of distributed/http/scheduler/tests/test_scheduler_http.py::test_prometheus_collect_task_states
  test("test_prometheus_collect_task_states: every state has a series, 0 before, 1 while a task runs, 0 after release", () =>
    withMetrics(async (url, _cluster, client) => {
      const expected = new Set(["memory", "released", "queued", "processing", "waiting", "no-worker", "erred"]);
      const tasks = async (): Promise<Map<string, number>> => series(await scrape(url), "dask_scheduler_tasks", "state");
      let active = await tasks();
      assert.deepEqual(new Set(active.keys()), expected);
      assert.equal(sum(active), 0);
      // Long enough to be scraped while it runs on a loaded machine.
      const future = client.submit(slowInc, 1, 2000);
      await waitFor("the task processing", () => client.scheduler.taskCounts().processing === 1);
      // Scraped during the computation.
      active = await tasks();
      assert.deepEqual(new Set(active.keys()), expected);
      assert.equal(sum(active), 1);
      assert.equal(active.get("processing"), 1);
      assert.equal(await future.result(), 2);
      future.release();
      await waitFor("the scheduler empty", () => client.scheduler.state.taskCount === 0);
      active = await tasks();
      assert.equal(sum(active), 0);
    }));

  // Port of distributed/http/scheduler/tests/test_scheduler_http.py::test_prometheus_collect_task_prefix_counts
  test("test_prometheus_collect_task_prefix_counts: (inc, memory) is 10 after map(inc, range(10)); an erring task counts once", () =>
    withMetrics(async (url, _cluster, client) => {
      await client.gather(client.map(inc, Array.from({ length: 10 }, (_, i) => i)));
      let counts = series(await scrape(url), "dask_scheduler_prefix_state_totals_total", "task_prefix_name", "state");
      assert.equal(counts.get("inc|memory"), 10);
      assert.equal(counts.get("inc|erred") ?? 0, 0);
      const bad = client.submit(fail, "division by zero");
      await assert.rejects(bad.result());
      counts = series(await scrape(url), "dask_scheduler_prefix_state_totals_total", "task_prefix_name", "state");
      assert.equal(counts.get("fail|erred"), 1);
    }));

  // Port of distributed/http/scheduler/tests/test_scheduler_http.py::test_prometheus_collect_task_groups
  test("test_prometheus_collect_task_groups: 0 groups, 1 while a task of one runs, 2 with a second, 0 once released", () =>
    withMetrics(async (url, _cluster, client) => {
      const groups = async (): Promise<number> => sum(series(await scrape(url), "dask_scheduler_task_groups"));
      assert.equal(await groups(), 0);
      const [first] = client.map(slowInc, [1], [800], { key: ["blockfirst-1"] });
      await waitFor("block-first running", () => client.scheduler.taskCounts().processing === 1);
      assert.equal(await groups(), 1);
      const [second] = client.map(slowInc, [2], [800], { key: ["blocksecond-2"] });
      await waitFor("two groups", () => client.scheduler.state.taskGroupCount === 2);
      assert.equal(await groups(), 2);
      assert.deepEqual(await client.gather([first, second]), [2, 3]);
      first.release();
      second.release();
      await waitFor("the groups gone", () => client.scheduler.state.taskGroupCount === 0);
      assert.equal(await groups(), 0);
    }));

  // Ports of distributed/http/scheduler/tests/test_scheduler_http.py::test_prometheus_collect_worker_totals
  // and ::test_prometheus_collect_client_connections_totals
  test("test_prometheus_collect_worker_totals / client_connections_totals: workers and clients added and removed", () =>
    withMetrics(async (url, cluster) => {
      const totals = async (): Promise<number[]> => {
        const families = await scrape(url);
        return [
          "dask_scheduler_workers_added_total",
          "dask_scheduler_workers_removed_total",
          "dask_scheduler_client_connections_added_total",
          "dask_scheduler_client_connections_removed_total",
        ].map((name) => sum(series(families, name)));
      };
      assert.deepEqual(await totals(), [2, 0, 1, 0]);
      await cluster.scale(3);
      assert.deepEqual(await totals(), [3, 0, 1, 0]);
      await cluster.scale(2);
      await waitFor("a worker removed", () => cluster.scheduler.workers.size === 2);
      assert.deepEqual(await totals(), [3, 1, 1, 0]);
      const second = await Client.connect(cluster);
      assert.deepEqual(await totals(), [3, 1, 2, 0]);
      await second.close();
      assert.deepEqual(await totals(), [3, 1, 2, 1]);
    }));

  test("fine performance metrics: the cluster's and each span's execute seconds by prefix and activity; memory and compute seconds per prefix", () =>
    withMetrics(async (url, _cluster, client) => {
      const futures = client.map(inc, [1, 2, 3, 4]);
      await client.gather(futures);
      await client.scheduler.syncMetrics();
      const families = await scrape(url);
      const cumulative = series(families, "dask_scheduler_cumulative_worker_metrics_seconds_total", "context", "task_prefix_name", "activity");
      assert.ok((cumulative.get("execute|inc|thread-cpu") ?? 0) > 0, `execute inc thread-cpu seconds: ${[...cumulative.keys()].join(", ")}`);
      const spans = series(families, "dask_scheduler_span_metrics_seconds_total", "span_name", "task_prefix_name", "activity");
      assert.ok((spans.get("default|inc|thread-cpu") ?? 0) > 0, `the default span's inc thread-cpu seconds: ${[...spans.keys()].join(", ")}`);
      assert.equal(series(families, "dask_scheduler_tasks_output_bytes", "task_prefix_name").get("inc"), 4 * 8, "four numbers in memory");
      assert.ok((series(families, "dask_scheduler_tasks_compute_seconds_total", "task_prefix_name").get("inc") ?? 0) > 0);
      const managed = series(families, "dask_worker_memory_bytes", "type");
      assert.ok(managed.has("managed") && managed.has("unmanaged") && managed.has("spilled"));
    }));
});

test("serveDashboard()'s /metrics serves the newest open Client's cluster, and says so when none is open", async () => {
  const server = await serveDashboard("127.0.0.1:0");
  const url = new URL("metrics", server.url).href;
  try {
    const none = await fetch(url);
    assert.equal(none.status, 200);
    assert.match(await none.text(), /^# No cluster is open/);
    const client = await Client.connect({ nWorkers: 1, threadsPerWorker: 1, dashboardAddress: null, name: "metrics-serve" });
    try {
      assert.equal(await client.submit(inc, 1).result(), 2);
      const families = await scrape(url);
      assert.equal(sum(series(families, "dask_worker_threads")), 1);
      assert.equal(series(families, "dask_scheduler_prefix_state_totals_total", "task_prefix_name", "state").get("inc|memory"), 1);
    } finally {
      await client.close();
    }
    assert.match(await (await fetch(url)).text(), /^# No cluster is open/);
  } finally {
    await server.close();
  }
  await assert.rejects(serveDashboard("127.0.0.1:0", undefined, { metric: undefined } as never), /Unknown serveDashboard option "metric"/);
});
