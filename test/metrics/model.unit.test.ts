// The panel's model (what the charts show for data and a selection): ports of Dask's dashboard
// tests (research/dask-distributed.md §11.5), plus what tsdask adds: percentages, readable
// values, stable colours, options that only grow, and the static charts' spec.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { renderSVG } from "../../src/kernel/display/vega";
import {
  DEFAULT_SELECTION,
  FPM_MIN_WIDTH,
  type FpmData,
  MARK_NAMES,
  MAX_FUNCTIONS,
  formatMetric,
  formatShare,
  fpmModel,
  fpmOptions,
  fpmSpec,
  mergeSpans,
} from "../../src/protocol/fpm";
import type { MetricRecord, SpanRecord } from "../../src/protocol/records";

function m(prefix: string, activity: string, value: number, unit = "seconds", context: MetricRecord["context"] = "execute"): MetricRecord {
  return context === "execute" ? { context, prefix, activity, unit, value } : { context, activity, unit, value };
}

function spanRecord(id: string, name: string[], parent: string | null, metrics: MetricRecord[], interval: [number, number, number]): SpanRecord {
  const executeSeconds = metrics.filter((r) => r.unit === "seconds").reduce((sum, r) => sum + r.value, 0);
  const budget = (interval[1] - interval[0]) * interval[2];
  return {
    id,
    name,
    parent,
    children: [],
    enqueued: interval[0],
    start: interval[0],
    stop: interval[1],
    done: true,
    states: { memory: 1 },
    activeCpuSeconds: budget,
    intervals: [interval],
    nbytesTotal: 0,
    metrics: [...metrics, m("N/A", "idle or other spans", Math.max(0, budget - executeSeconds))],
  };
}

/** Dask's workload: default-span x; a span "foo" with y and z; custom labels; a spilled w; a "Send data" activity. */
function workload(): FpmData {
  const defaultMetrics = [m("x", "thread-cpu", 2), m("x", "thread-noncpu", 1), m("v", "thread-cpu", 0.5), m("w", "disk-write", 4096, "bytes"), m("w", "disk-write", 1, "count")];
  const fooMetrics = [
    m("y", "thread-cpu", 1),
    m("y", "None", 0.25),
    m("z", "('foo', 1)", 0.5),
    m("z", "hideme", 7, "custom"),
    m("y", "disk-read", 2048, "bytes"),
    m("y", "memory-read", 8192, "bytes"),
  ];
  const spans = [spanRecord("d", ["default"], null, defaultMetrics, [0, 4, 2]), spanRecord("f", ["foo"], null, fooMetrics, [1, 3, 2])];
  const metrics = [...defaultMetrics, ...fooMetrics, m("", "network", 0.75, "seconds", "get-data"), m("", "serialize", 0.25, "seconds", "get-data")];
  return { metrics, spans, time: 10, source: { description: "test cluster", transfers: true } };
}

const activities = (data: FpmData, selection = {}): string[] => fpmModel(data, { ...DEFAULT_SELECTION, ...selection }).activities.map((s) => s.activity).sort();

describe("the FPM panel's model (Dask's dashboard tests)", () => {
  test("[1] empty: no functions, no activities, the unit seconds", () => {
    const data: FpmData = { metrics: [], spans: [], time: 0 };
    assert.deepEqual(fpmOptions(data), { spans: [], functions: [], units: ["seconds"] });
    const model = fpmModel(data, DEFAULT_SELECTION);
    assert.deepEqual([model.functions, model.activities, model.segments, model.send], [[], [], [], []]);
  });

  test("[2] a workload: functions with N/A, every unit seen, custom labels as text, idle but not 'idle or other spans'", () => {
    const data = workload();
    assert.deepEqual(fpmOptions(data), { spans: ["default", "foo"], functions: ["N/A", "v", "w", "x", "y", "z"], units: ["bytes", "count", "custom", "seconds"] });
    const shown = activities(data);
    for (const activity of ["thread-cpu", "('foo', 1)", "None", "idle"]) assert.ok(shown.includes(activity), activity);
    for (const activity of ["hideme", "idle or other spans"]) assert.ok(!shown.includes(activity), activity);
  });

  test("[3] another unit shows that unit's activities; back to seconds restores the first view", () => {
    const data = workload();
    assert.deepEqual(activities(data, { unit: "bytes" }), ["disk-read", "disk-write", "memory-read"]);
    assert.deepEqual(activities(data, { unit: "count" }), ["disk-write"]);
    assert.deepEqual(activities(data, { unit: "custom" }), ["hideme"]);
    assert.deepEqual(activities(data, { unit: "seconds" }), activities(data));
  });

  test("[4] a span tag filter: that span's functions, its idle named 'idle or other spans', Send data hidden", () => {
    const data = workload();
    const model = fpmModel(data, { ...DEFAULT_SELECTION, spans: ["foo"] });
    assert.deepEqual([...model.functions].sort(), ["N/A", "y", "z"]);
    const shown = model.activities.map((s) => s.activity);
    assert.ok(shown.includes("idle or other spans") && !shown.includes("idle"));
    assert.equal(model.send, null);
    assert.deepEqual(fpmOptions(data).functions, ["N/A", "v", "w", "x", "y", "z"], "options do not shrink");
  });

  test("[5] without spans (no idle known): the execute metrics alone", () => {
    const data: FpmData = { metrics: [m("x", "thread-cpu", 1), m("x", "memory-read", 8, "bytes")], spans: [], time: 0 };
    const model = fpmModel(data, DEFAULT_SELECTION);
    assert.deepEqual(model.functions, ["x"]);
    assert.equal(model.budget, undefined);
    assert.deepEqual(activities(data, { unit: "bytes" }), ["memory-read"]);
  });

  test("a function filter keeps those functions (idle only if N/A is picked) and hides Send data", () => {
    const data = workload();
    const model = fpmModel(data, { ...DEFAULT_SELECTION, functions: ["x"] });
    assert.deepEqual(model.functions, ["x"]);
    assert.equal(model.send, null);
    assert.deepEqual(fpmModel(data, { ...DEFAULT_SELECTION, functions: ["x", "N/A"] }).functions, ["x", "N/A"]);
    const unfiltered = fpmModel(data, DEFAULT_SELECTION);
    assert.deepEqual(unfiltered.send!.map((s) => [s.activity, s.text, s.share]), [["serialize", "250 ms", "25.0 %"], ["network", "750 ms", "75.0 %"]]);
  });

  test("without a filter the execute total is the thread budget of the spans (wall × threads), idle included", () => {
    const model = fpmModel(workload(), DEFAULT_SELECTION);
    // default: 0–4 s and foo: 1–3 s on 2 threads: the union is 4 s × 2 threads.
    assert.equal(model.budget, 8);
    assert.ok(Math.abs(model.total - 8) < 1e-9, `total ${model.total}`);
  });

  test("bars: functions by total (N/A last), segments with readable values and shares of their bar, one colour per activity", () => {
    const model = fpmModel(workload(), DEFAULT_SELECTION);
    // (v and z tie at 0.5 s: by name.)
    assert.deepEqual(model.functions, ["x", "y", "v", "z", "N/A"]);
    const x = model.segments.filter((s) => s.function === "x");
    assert.deepEqual(x.map((s) => [s.activity, s.text, s.share, s.functionTotal]), [["thread-cpu", "2 s", "66.7 %", "3 s"], ["thread-noncpu", "1 s", "33.3 %", "3 s"]]);
    const colours = new Map(model.legend.map((entry) => [entry.activity, entry.color]));
    assert.equal(new Set(colours.values()).size, colours.size, "distinct colours");
    // A filter changes what is drawn, never an activity's colour.
    const filtered = fpmModel(workload(), { ...DEFAULT_SELECTION, functions: ["z"] });
    for (const entry of filtered.legend) assert.equal(entry.color, colours.get(entry.activity));
  });

  test(`more than ${MAX_FUNCTIONS} functions: the smallest share one bar`, () => {
    const metrics = Array.from({ length: 60 }, (_, i) => m(`f${String(i).padStart(2, "0")}`, "thread-cpu", 100 - i));
    const model = fpmModel({ metrics, spans: [], time: 0 }, DEFAULT_SELECTION);
    assert.equal(model.functions.length, MAX_FUNCTIONS);
    assert.equal(model.functions.at(-1), `(${60 - MAX_FUNCTIONS + 1} more)`);
    assert.equal(model.hiddenFunctions, 60 - MAX_FUNCTIONS + 1);
    assert.ok(Math.abs(model.total - metrics.reduce((sum, r) => sum + r.value, 0)) < 1e-9);
  });

  test("merging spans without intervals falls back to their budgets summed", () => {
    const [a, b] = workload().spans.map(({ intervals: _intervals, ...rest }) => rest);
    assert.equal(mergeSpans([a, b], 10).activeCpuSeconds, 8 + 4);
  });
});

describe("formatting", () => {
  test("values in their unit's readable steps", () => {
    const cases: [number, string, string][] = [
      [0, "seconds", "0 s"],
      [1.234, "seconds", "1.23 s"],
      [0.34, "seconds", "340 ms"],
      [12.5e-6, "seconds", "12.5 µs"],
      [150, "seconds", "2.5 min"],
      [7200, "seconds", "2 h"],
      [340 * 2 ** 20, "bytes", "340 MiB"],
      [1536, "bytes", "1.5 KiB"],
      [12, "bytes", "12 B"],
      [12345, "count", "12,345"],
      [0.5, "GB-h", "0.5 GB-h"],
    ];
    for (const [value, unit, text] of cases) assert.equal(formatMetric(value, unit), text, `${value} ${unit}`);
    assert.deepEqual([formatShare(1, 3), formatShare(1e-5, 1), formatShare(1, 1), formatShare(0, 0)], ["33.3 %", "<0.1 %", "100 %", "–"]);
  });
});

describe("the static charts", () => {
  test("compile cleanly and render to SVG in Node, with the three charts and their titles", async () => {
    const model = fpmModel(workload(), DEFAULT_SELECTION);
    const svg = await renderSVG(fpmSpec(model, { title: "Fine performance metrics" }));
    for (const title of ["Task execution, by function", "Task execution, by activity", "Send data, by activity"]) assert.ok(svg.includes(title), title);
    for (const name of Object.values(MARK_NAMES)) assert.ok(svg.includes(name), name);
    // Filtered: no Send-data chart.
    const filtered = await renderSVG(fpmSpec(fpmModel(workload(), { ...DEFAULT_SELECTION, functions: ["x"] })));
    assert.ok(!filtered.includes("Send data, by activity"));
  });

  test("a narrow panel (a dashboard panel beside a notebook) stacks them: the bars above the donuts, nothing past its width", async () => {
    const model = fpmModel(workload(), DEFAULT_SELECTION);
    assert.ok("hconcat" in fpmSpec(model, { width: 1000 }), "one row when wide");
    const narrow = fpmSpec(model, { width: FPM_MIN_WIDTH });
    const rows = narrow.vconcat as Record<string, unknown>[];
    assert.equal(rows.length, 2);
    assert.equal(rows[0].title, "Task execution, by function");
    assert.equal((rows[1].hconcat as unknown[]).length, 2, "both donuts side by side below");
    const svg = await renderSVG(narrow);
    const width = Number(/<svg[^>]* width="([\d.]+)"/.exec(svg)?.[1]);
    assert.ok(width <= FPM_MIN_WIDTH, `drawn ${width} px wide in ${FPM_MIN_WIDTH}`);
  });

  test("on a local scheduler the Send-data chart says why it is empty", async () => {
    const data: FpmData = { metrics: [m("x", "thread-cpu", 1)], spans: [], time: 0, source: { description: "local", transfers: false } };
    const svg = await renderSVG(fpmSpec(fpmModel(data, DEFAULT_SELECTION), { transfers: false }));
    assert.ok(svg.includes("Nothing sent between workers") && svg.includes("local schedulers have no workers to send to"));
  });
});
