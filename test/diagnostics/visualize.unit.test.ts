// The plot specs (structure, shared axis, colours, aggregation), the outputs rendered in Node
// (SVG, standalone HTML, files), option checking, and the Chrome trace export.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { inspect } from "node:util";
import { CacheProfiler, Profiler, ResourceProfiler, get } from "../../src";
import { withCallbacks } from "../../src/kernel/callbacks/callback";
import type { ProfileSnapshot } from "../../src/kernel/diagnostics/types";
import { DisplayHandle } from "../../src/kernel/display";
import { staticImage } from "../../src/kernel/display/plot";
import { ProfilePlot, buildSpec, exportTrace, visualize } from "../../src/kernel/diagnostics/visualize";
import { binCount } from "../../src/protocol/plot/bins";
import type { VegaLiteSpec } from "../../src/kernel/diagnostics/visualize/plot";
import { compileSpec, renderSVG } from "../../src/kernel/display/vega";
import { traceEvents } from "../../src/kernel/diagnostics/visualize/trace";
import {
  T0,
  TaskRecorder,
  XSS_KEY,
  cacheSnapshot,
  makeCache,
  makeResources,
  makeTasks,
  profiler,
  resourcesSnapshot,
  tasksSnapshot,
} from "./visualize-fixtures";

const dir = mkdtempSync(join(tmpdir(), "tsdask-visualize-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const OPTIONS = { width: 600, height: 200, title: "Profile Results", palette: ["#111111", "#222222", "#333333"] };

type Row = Record<string, unknown>;
const views = (spec: VegaLiteSpec): VegaLiteSpec[] => spec.vconcat as VegaLiteSpec[];
const rows = (view: VegaLiteSpec): Row[] => (view.data as { values: Row[] }).values;
const enc = (view: VegaLiteSpec): Record<string, Record<string, unknown>> => view.encoding as never;
/** The first x encoding in a view or its layers. */
function xEncoding(view: VegaLiteSpec): Row {
  const own = (view.encoding as Record<string, Row> | undefined)?.x;
  return own ?? xEncoding((view.layer as VegaLiteSpec[])[0]);
}

test("tasks plot: one rect per task, rows by busy time, colour by key group, tooltip with the formatted key", async () => {
  const tasks = makeTasks(12, 3);
  tasks.push({ key: "inc-1", task: 5, startTime: T0 + 0.02, endTime: T0 + 0.021, workerId: null });
  const spec = buildSpec([tasksSnapshot(tasks)], OPTIONS);
  const [view] = views(spec);
  assert.deepEqual(view.mark, { type: "rect", stroke: "white", strokeWidth: 0.5, strokeOpacity: 0.6 });
  const data = rows(view);
  assert.equal(data.length, 13);
  const e = enc(view);
  assert.equal(e.x.field, "t");
  assert.equal(e.x2.field, "t2");
  // Worker 0 runs 15 ms tasks, the others 10 ms; the sync scheduler's null worker is "main" and least busy.
  assert.deepEqual((e.y.scale as { domain: string[] }).domain, ["0", "1", "2", "main"]);
  assert.equal(e.color.field, "color");
  const first = data.find((row) => row.worker === "0" && row.t === 0.01) as Row;
  assert.deepEqual(
    { key: first.key, group: first.group, fn: first.fn, t2: first.t2, color: first.color },
    { key: "('load-0123456789abcdef0123456789abcdef', 0)", group: "load", fn: "max", t2: 0.025, color: "load" },
  );
  assert.equal(data.find((row) => row.worker === "main")?.key, "'inc-1'");
  const tooltip = (e.tooltip as unknown as { field: string }[]).map((t) => t.field);
  assert.deepEqual(tooltip, ["key", "group", "fn", "worker", "t", "dur"]);
  // Grouped by key prefix, not one colour per key (the regression Dask shipped).
  const scale = e.color.scale as { domain: string[]; range: string[] };
  assert.deepEqual(scale.domain, ["load", "add", "sum", "inc"]);
  assert.deepEqual(scale.range, ["#111111", "#222222", "#333333", "#111111"]);
  await compileSpec(spec);
});

test("resources plot: CPU % and memory MB as two lines on independent y axes", async () => {
  const spec = buildSpec([resourcesSnapshot(makeResources(10))], OPTIONS);
  const [view] = views(spec);
  assert.deepEqual(view.resolve, { scale: { y: "independent" } });
  const layers = view.layer as VegaLiteSpec[];
  assert.equal(layers.length, 2);
  const series = layers.map((layer) => {
    const [line, points] = layer.layer as VegaLiteSpec[];
    assert.equal((line.mark as Row).type, "line");
    assert.equal((points.mark as Row).type, "point");
    const y = enc(line).y;
    return { field: y.field, title: y.title, orient: (y.axis as Row).orient, domain: (y.scale as Row).domain };
  });
  assert.deepEqual(series, [
    { field: "cpu", title: "% CPU", orient: "left", domain: [0, 198] },
    { field: "mem", title: "Memory (MB)", orient: "right", domain: [200, 300] },
  ]);
  assert.deepEqual(rows(view)[3], { t: 0.3, cpu: 161, mem: 230 });
  await compileSpec(spec);
});

test("cache plot: a step line per group of the summed metric, titled by the metric name", async () => {
  const tasks = makeTasks(8, 2);
  const spec = buildSpec([cacheSnapshot(makeCache(tasks, 1000), "nbytes")], OPTIONS);
  const [view] = views(spec);
  const [line, points] = view.layer as VegaLiteSpec[];
  assert.deepEqual(line.mark, { type: "line", interpolate: "step-after", strokeWidth: 2 });
  assert.equal((points.mark as Row).type, "point");
  assert.equal(enc(view).y.title, "Cache Size (nbytes)");
  assert.equal(enc(view).color.field, "group");
  const load = rows(view).filter((row) => row.group === "load");
  // "load" results (tasks 0, 1, 6, 7) arrive at 25, 20, 70 and 50 ms and stay 50 ms each; at 70 ms
  // one leaves as another arrives: one point, the value after both.
  assert.deepEqual(
    load.map((row) => [row.t, row.value]),
    [[0, 0], [0.02, 1000], [0.025, 2000], [0.05, 3000], [0.07, 3000], [0.075, 2000], [0.1, 1000], [0.12, 0]],
  );
  await compileSpec(spec);
});

test("stacked: one shared, zoomable time axis; group colours identical in the task and cache plots", async () => {
  const tasks = makeTasks(30, 3);
  const snapshots = [tasksSnapshot(tasks), resourcesSnapshot(makeResources(5)), cacheSnapshot(makeCache(tasks))];
  const spec = buildSpec(snapshots, { ...OPTIONS, palette: "tableau20" });
  assert.equal(views(spec).length, 3);
  assert.equal(spec.title, "Profile Results");
  assert.deepEqual((spec.resolve as { scale: Row }).scale.x, "shared");
  const zoom = (spec.params as Row[])[0];
  assert.deepEqual(zoom, { name: "zoom", select: { type: "interval", encodings: ["x"] }, bind: "scales", views: ["plot_0", "plot_1", "plot_2"] });
  // Only the bottom plot names the time axis; every x encoding has the same domain.
  const xs = views(spec).map(xEncoding);
  assert.deepEqual(xs.map((x) => x.title), [null, null, "Time (s)"]);
  assert.equal(new Set(xs.map((x) => JSON.stringify(x.scale))).size, 1);
  assert.deepEqual(enc(views(spec)[0]).color.scale, enc(views(spec)[2]).color.scale);
  // The cache plot leaves the group legend to the task plot above it.
  assert.equal(enc(views(spec)[2]).color.legend, null);
  const vega = await compileSpec(spec);
  const xScales = (vega.scales as { name: string; domainRaw?: unknown }[]).filter((s) => s.name === "x");
  assert.deepEqual(xScales.map((s) => s.domainRaw), [{ signal: 'zoom["t"]' }]);
});

test("colour groups past 20 share one grey 'other' entry, the busiest groups keep their colours", () => {
  const tasks = Array.from({ length: 30 }, (_, i) => ({
    key: `g${String(i).padStart(2, "0")}_x-1`,
    task: null,
    startTime: T0 + i,
    endTime: T0 + i + 1 + i / 100,
    workerId: 1,
  }));
  const spec = buildSpec([tasksSnapshot(tasks)], OPTIONS);
  const scale = enc(views(spec)[0]).color.scale as { domain: string[]; range: string[] };
  assert.equal(scale.domain.length, 20);
  assert.equal(scale.domain[0], "g29_x");
  assert.equal(scale.domain[19], "other");
  assert.equal(scale.range[19], "#b0b0b0");
  assert.equal(rows(views(spec)[0]).find((row) => row.group === "g00_x")?.color, "other");
});

test("above 5 000 tasks the task plot shows per-worker time bins: dominant group and busy fraction", async () => {
  const workers = 4;
  const tasks = makeTasks(20_000, workers);
  const spec = buildSpec([tasksSnapshot(tasks)], OPTIONS);
  const [view] = views(spec);
  const data = rows(view);
  assert.ok(data.length <= workers * binCount(OPTIONS.width), `${data.length} marks`);
  assert.equal(enc(view).opacity.field, "busy");
  for (const row of data) assert.ok((row.busy as number) >= 0 && (row.busy as number) <= 1);
  // Back-to-back tasks: every full bin of a worker is fully busy.
  const worker1 = data.filter((row) => row.worker === "1");
  assert.ok(worker1.slice(1, -1).every((row) => Math.abs((row.busy as number) - 1) < 1e-6));
  assert.equal((data.reduce((n, row) => n + (row.started as number), 0)), 20_000);
  await compileSpec(spec);

  // A worker running "a" for the first half and "b" for the second: bins take the dominant group.
  const halves = Array.from({ length: 6000 }, (_, i) => ({
    key: i < 3000 ? `a-${i}` : `b-${i}`,
    task: null,
    startTime: T0 + i / 1000,
    endTime: T0 + (i + 1) / 1000,
    workerId: 7,
  }));
  const binned = rows(views(buildSpec([tasksSnapshot(halves)], OPTIONS))[0]);
  assert.equal(binned[0].color, "a");
  assert.equal(binned[binned.length - 1].color, "b");
  assert.equal(binned.filter((row) => row.color === "a").length, binCount(OPTIONS.width) / 2);
});

test("a large cache recording is thinned to each bin's peak per group", () => {
  // 3 000 results of one group, each held 1 s, started every ms: 1 000 held at the plateau.
  const entries = Array.from({ length: 3000 }, (_, i) => ({ key: `x-${i}`, task: null, metric: 2, cacheTime: T0 + i / 1000, freeTime: T0 + i / 1000 + 1 }));
  const view = views(buildSpec([cacheSnapshot(entries)], OPTIONS))[0];
  const values = rows(view).map((row) => row.value as number);
  assert.ok(values.length <= binCount(OPTIONS.width) + 1);
  assert.equal(Math.max(...values), 2000);
  // The last bin (13 ms wide) starts while the last dozen or so results are still held.
  assert.ok(values[values.length - 1] > 0 && values[values.length - 1] <= 2 * 14, String(values[values.length - 1]));
});

test("empty profilers and a single resource sample render, on a 1 s time axis instead of an empty one", async () => {
  const empty = [tasksSnapshot([], 0), resourcesSnapshot([], 0), cacheSnapshot([], "count", 0)];
  for (const snapshots of [empty, [resourcesSnapshot([{ time: T0, mem: 10, cpu: 0 }], 0)], []]) {
    const spec = buildSpec(snapshots, OPTIONS);
    for (const view of views(spec)) assert.deepEqual((xEncoding(view).scale as Row).domain, [0, 1]);
    const svg = await renderSVG(spec);
    assert.match(svg, /^<svg[^>]*>/);
  }
});

test("visualize() rejects unknown options naming them, bad values, bad palettes and non-profilers, at once", () => {
  const p = profiler(tasksSnapshot(makeTasks(3)));
  assert.throws(() => visualize(p, { widht: 3 } as never), /Unknown visualize option "widht"/);
  assert.throws(() => visualize(p, { height: -1 }), /Option height must be a positive number/);
  assert.throws(() => visualize(p, { palette: "no-such-scheme", save: false }), /palette: "no-such-scheme" is not a Vega colour scheme/);
  assert.throws(() => visualize([p, {} as never]), /objects with snapshot\(\).*position 1/);
});

test("visualize() writes a standalone offline HTML file and returns the spec, SVG and HTML", async () => {
  const filename = join(dir, "profile.html");
  const tasks = makeTasks(20, 2, XSS_KEY);
  const plot = await visualize([profiler(tasksSnapshot(tasks)), profiler(cacheSnapshot(makeCache(tasks)))], { filename, palette: "viridis" });
  assert.ok(plot instanceof ProfilePlot);
  assert.equal(plot.file, filename);
  const html = readFileSync(filename, "utf8");
  assert.equal(html, plot.toHTML());
  // Offline: the libraries are inlined, nothing is loaded from anywhere.
  assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=/i);
  assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
  // The key is inside the JSON with "<" escaped, so it cannot open a tag in the page.
  assert.ok(!html.includes(XSS_KEY));
  assert.ok(html.includes("\\u003cimg src=x onerror=window.__xss=1>"));
  const svg = await plot.toSVG();
  assert.match(svg, /^<svg/);
  // The key's group is the legend label: drawn as escaped text.
  assert.ok(svg.includes(">&lt;img src=x onerror=wind…</text>"));
  assert.ok(!svg.includes("<img"));
  // viridis is a continuous scheme: sampled into distinct colours, "other" absent.
  const scale = enc(views(plot.spec)[0]).color.scale as { range: string[] };
  assert.equal(new Set(scale.range).size, scale.range.length);
  assert.equal(plot.summary, "tsdask profile: 20 tasks on 2 workers; 20 cache entries (count)");
  // The image a notebook stores leaves out the per-mark labels the interactive plot keeps.
  const stored = await staticImage(plot.spec);
  assert.match(stored, /^<svg/);
  const markLabels = (image: string): number => (image.match(/aria-roledescription="rect mark"/g) ?? []).length;
  assert.ok(markLabels(svg) >= 20 && markLabels(stored) === 0, `${markLabels(svg)} and ${markLabels(stored)} labelled rectangles`);
});

test("visualize() with save: false writes nothing; a restyled spec renders as edited", async () => {
  const filename = join(dir, "never.html");
  const plot = await visualize(profiler(tasksSnapshot(makeTasks(5))), { filename, save: false, title: "Mine", config: { background: "#fafafa" } });
  assert.equal(plot.file, undefined);
  assert.throws(() => readFileSync(filename));
  assert.equal((plot.spec.config as Row).background, "#fafafa");
  plot.spec.title = "Restyled <b>";
  assert.match(await plot.toSVG(), /Restyled &lt;b&gt;/);
  assert.match(plot.toHTML(), /<title>Restyled &lt;b&gt;<\/title>/);
});

test("by default the plot goes to ./profile.html; show: true on a machine without an opener only warns", async (t) => {
  const cwd = process.cwd();
  const path = process.env.PATH;
  const warn = t.mock.method(console, "warn", () => undefined);
  const folder = mkdtempSync(join(dir, "cwd-"));
  process.chdir(folder);
  process.env.PATH = folder; // no xdg-open / open here
  try {
    const plot = await visualize(profiler(tasksSnapshot(makeTasks(3))), { show: true });
    assert.equal(plot.file, join(realpathSync(folder), "profile.html"));
    assert.match(readFileSync("profile.html", "utf8"), /^<!DOCTYPE html>/);
    const deadline = Date.now() + 5000;
    while (warn.mock.callCount() === 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20));
    assert.match(String(warn.mock.calls[0]?.arguments[0]), /Could not open .*profile\.html.*open it in a browser yourself/);
  } finally {
    process.chdir(cwd);
    process.env.PATH = path;
  }
});

test("a real run recorded by a Callback visualizes with one rect per task on the main row", async () => {
  const recorder = new TaskRecorder();
  const slow = (x: number): number => {
    const until = Date.now() + 5;
    while (Date.now() < until);
    return x + 1;
  };
  const dsk = { "a-1": 1, "inc-1": [slow, "a-1"], "inc-2": [slow, "inc-1"], "sum-1": [Math.max, "inc-1", "inc-2"] };
  await withCallbacks(recorder, () => get(dsk, "sum-1"));
  const plot = await visualize(recorder, { save: false });
  const data = rows(views(plot.spec)[0]);
  assert.deepEqual(data.map((row) => row.key), ["'inc-1'", "'inc-2'", "'sum-1'"]);
  assert.ok(data.every((row) => row.worker === "main"));
  assert.ok((data[1].dur as number) >= 0.004);
  assert.ok((data[0].t as number) >= 0 && (data[2].t2 as number) <= (enc(views(plot.spec)[0]).x.scale as { domain: number[] }).domain[1]);
});

test("exportTrace: tasks as X events per worker thread, counters, metadata, µs since the block start", () => {
  const tasks = makeTasks(9, 3);
  const file = exportTrace(
    [profiler(tasksSnapshot(tasks)), profiler(resourcesSnapshot(makeResources(3))), profiler(cacheSnapshot(makeCache(tasks), "nbytes"))],
    join(dir, "trace.json"),
  );
  const trace = JSON.parse(readFileSync(file, "utf8")) as { traceEvents: Row[]; displayTimeUnit: string };
  assert.equal(trace.displayTimeUnit, "ms");
  const events = trace.traceEvents;
  const complete = events.filter((e) => e.ph === "X");
  assert.equal(complete.length, 9);
  const first = complete.find((e) => (e.args as Row).key === "('load-0123456789abcdef0123456789abcdef', 0)") as Row;
  // Epoch seconds carry ~0.2 µs of precision, so times are compared to within 1 µs.
  assert.ok(Math.abs((first.ts as number) - 10_000) < 1 && Math.abs((first.dur as number) - 15_000) < 1);
  assert.deepEqual({ ...first, ts: 0, dur: 0 }, {
    name: "load",
    cat: "task",
    ph: "X",
    pid: 1,
    tid: 1,
    ts: 0,
    dur: 0,
    args: { key: "('load-0123456789abcdef0123456789abcdef', 0)", function: "max" },
  });
  const threads = events.filter((e) => e.name === "thread_name").map((e) => [e.tid, (e.args as Row).name]);
  assert.deepEqual(threads, [[1, "worker 0"], [2, "worker 1"], [3, "worker 2"]]);
  assert.deepEqual(events.filter((e) => e.name === "process_name").map((e) => (e.args as Row).name), ["Tasks", "Resources", "Cache (nbytes)"]);
  assert.deepEqual(events.filter((e) => e.ph === "C" && e.pid === 2).slice(0, 2), [
    { name: "CPU", ph: "C", pid: 2, ts: 0, args: { "% CPU": 50 } },
    { name: "Memory", ph: "C", pid: 2, ts: 0, args: { MB: 200 } },
  ]);
  const cache = events.filter((e) => e.ph === "C" && e.pid === 3);
  assert.equal(cache.length, 18);
  assert.ok(cache.every((e) => typeof (e.args as Row).nbytes === "number" && (e.args as Row).nbytes as number >= 0));
  assertNoOverlap(complete);
});

test("exportTrace moves overlapping intervals of one worker onto extra threads", () => {
  const overlapping: ProfileSnapshot = tasksSnapshot([
    { key: "a-1", task: null, startTime: T0, endTime: T0 + 1, workerId: "w" },
    { key: "a-2", task: null, startTime: T0 + 0.5, endTime: T0 + 1.5, workerId: "w" },
    { key: "a-3", task: null, startTime: T0 + 1, endTime: T0 + 2, workerId: "w" },
  ]);
  const events = [...traceEvents([overlapping])];
  const complete = events.filter((e) => e.ph === "X");
  assert.deepEqual(complete.map((e) => [(e.args as Row).key, e.tid]), [["'a-1'", 1], ["'a-2'", 2], ["'a-3'", 1]]);
  assert.deepEqual(events.filter((e) => e.name === "thread_name").map((e) => (e.args as Row).name), ["worker w", "worker w (overlap 1)"]);
  assertNoOverlap(complete as unknown as Row[]);
});

function assertNoOverlap(events: Row[]): void {
  const byThread = new Map<string, Row[]>();
  for (const e of events) byThread.set(`${e.pid}/${e.tid}`, [...(byThread.get(`${e.pid}/${e.tid}`) ?? []), e]);
  for (const [thread, list] of byThread) {
    list.sort((a, b) => (a.ts as number) - (b.ts as number));
    for (let i = 1; i < list.length; i++) {
      assert.ok((list[i - 1].ts as number) + (list[i - 1].dur as number) <= (list[i].ts as number), `overlap on ${thread}`);
    }
  }
}

test("each profiler's own visualize() is Dask's prof.visualize(): its plot alone, same options", async () => {
  const prof = new Profiler();
  const rprof = new ResourceProfiler({ dt: 0.01 });
  const inc = (x: number): number => x + 1;
  await withCallbacks([prof, rprof], () => get({ a: [inc, 1], b: [inc, "a"] }, "b"));
  const filename = join(dir, "single.html");
  const plot = await prof.visualize({ filename, title: "Just the tasks" });
  assert.equal(plot.file, filename);
  assert.equal(plot.summary, "tsdask profile: 2 tasks on 1 worker");
  assert.equal(plot.spec.title, "Just the tasks");
  assert.equal(readFileSync(filename, "utf8"), plot.toHTML());
  const alone = await rprof.visualize({ save: false });
  assert.match(alone.summary, /^tsdask profile: \d+ resource samples$/);
  assert.throws(() => new CacheProfiler().visualize({ width: 0 }), /Option width must be a positive number/);
});

test("visualize() returns at once: a handle that prints one line and resolves to the ProfilePlot, never to itself", async () => {
  const handle = visualize(profiler(tasksSnapshot(makeTasks(4))), { save: false });
  assert.ok(handle instanceof DisplayHandle);
  assert.equal(handle.shown, false, "no notebook here");
  assert.ok(handle.value instanceof ProfilePlot);
  assert.equal(inspect(handle), "tsdask profile: 4 tasks on 4 workers");
  const plot = await handle;
  assert.equal(plot, handle.value);
  assert.equal(typeof (plot as unknown as { then?: unknown }).then, "undefined");
  assert.equal(inspect(plot), "ProfilePlot { tsdask profile: 4 tasks on 4 workers }");
  // then() behaves as a promise's: handlers run once, rejections of the handler propagate.
  assert.equal(await handle.then((p) => p.summary), plot.summary);
  await assert.rejects(handle.then(() => Promise.reject(new Error("later"))), /later/);
});
