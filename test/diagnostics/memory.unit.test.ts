// MemorySampler on the local schedulers: Dask's test cases (diagnostics/tests/test_memory_sampler.py)
// — a first sample at once, one labelled series per block, align, series that end where they end —
// plus the local meaning of each measure and a source that can be swapped (the cluster's, later).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemorySampler, get, now, type MemorySource } from "../../src";
import { memorySpec } from "../../src/kernel/diagnostics/memory";
import { filled } from "./hot";
import { nap } from "./tasks";

type Row = { label: string; x: number; value: number; bytes: string };
const rowsOf = (spec: Record<string, unknown>): Row[] => (spec.data as { values: Row[] }).values;

/** A source whose readings are scripted: what a cluster source does with heartbeat memory. */
function scripted(readings: number[], step = 0.1): MemorySource & { measures: string[] } {
  const measures: string[] = [];
  return {
    description: "scripted",
    measures,
    record(measure) {
      measures.push(measure);
      const start = 1000;
      return { run: (block) => block(), stop: async () => readings.map((bytes, i) => [start + i * step, bytes] as const) };
    },
  };
}

describe("MemorySampler", () => {
  test("an empty block still has one sample, under a fresh label", async () => {
    const ms = new MemorySampler();
    await ms.sample(undefined, () => undefined);
    assert.equal(ms.samples.size, 1);
    const [[label, points]] = [...ms.samples];
    assert.match(label, /^[0-9a-f-]{36}$/);
    assert.ok(points.length >= 1);
    assert.ok(points[0][1] > 10e6, "the first sample is this process's resident memory");
  });

  test("process memory while a block runs: first sample at its start, growing with the data", async () => {
    const ms = new MemorySampler();
    const started = now();
    const result = await ms.sample("big", async () => {
      const held = await get({ a: [filled, 30e6], b: [nap, "a", 300] }, "b", { scheduler: "sync" });
      return (held as Float64Array).length;
    }, { interval: 0.05 });
    assert.equal(result, 30e6);
    const points = ms.samples.get("big")!;
    assert.ok(points.length >= 3, `${points.length} samples`);
    assert.ok(Math.abs(points[0][0] - started) < 0.05, "the first sample is taken at once");
    const peak = Math.max(...points.map(([, bytes]) => bytes));
    assert.ok(peak - points[0][1] > 150e6, `the 240 MB array shows: ${points[0][1]} → ${peak}`);
    const records = ms.toRecords();
    assert.deepEqual(Object.keys(records[0]), ["label", "time", "bytes", "measure"]);
    assert.equal(records[0].measure, "process");
    assert.equal(records.length, points.length);
  });

  test("managed memory is the results the scheduler holds: 0 at the start, then the array", async () => {
    const ms = new MemorySampler();
    await ms.sample("managed", () => get({ a: [filled, 1e6], b: [nap, "a", 250] }, "b"), { measure: "managed", interval: 0.05 });
    const points = ms.samples.get("managed")!;
    assert.equal(points[0][1], 0);
    assert.ok(points.some(([, bytes]) => bytes >= 8e6), JSON.stringify(points.map(([, b]) => b)));
    await ms.sample("unmanaged", () => get({ a: [filled, 1e6], b: [nap, "a", 100] }, "b"), { measure: "unmanaged", interval: 0.05 });
    assert.ok(ms.samples.get("unmanaged")!.every(([, bytes]) => bytes > 0));
    assert.equal(ms.measures.get("unmanaged"), "unmanaged");
  });

  test("measures: Dask's names in either spelling; cluster-only ones are refused with the reason", async () => {
    const ms = new MemorySampler();
    await ms.sample("total", () => 1, { measure: "managed_total" });
    assert.equal(ms.measures.get("total"), "managedTotal");
    await assert.rejects(ms.sample("s", () => 1, { measure: "spilled" }), /measure "spilled" .* needs a cluster: the local schedulers never spill/);
    await assert.rejects(ms.sample("s", () => 1, { measure: "unmanaged_old" }), /needs a cluster/);
    await assert.rejects(ms.sample("s", () => 1, { measure: "rss" }), /unknown measure "rss"; the measures are process, managed/);
    await assert.rejects(ms.sample("s", () => 1, { interval: 0 }), /interval must be a number of seconds > 0/);
    await assert.rejects(ms.sample("s", () => 1, { every: 1 } as never), /Unknown MemorySampler.sample option "every"/);
    assert.equal(ms.samples.has("s"), false, "a refused sample leaves nothing behind");
  });

  test("a block that throws keeps its series and raises its error", async () => {
    const ms = new MemorySampler();
    await assert.rejects(ms.sample("fails", () => Promise.reject(new Error("nope"))), /nope/);
    assert.ok(ms.samples.get("fails")!.length >= 1);
  });

  test("the source is pluggable: a cluster's heartbeat memory will come in the same way", async () => {
    const source = scripted([0, 5, 9]);
    const ms = new MemorySampler({ source });
    await ms.sample("foo", () => 1, { measure: "managed" });
    assert.deepEqual(source.measures, ["managed"]);
    assert.deepEqual(ms.samples.get("foo"), [[1000, 0], [1000.1, 5], [1000.2, 9]]);
  });
});

describe("MemorySampler's plot", () => {
  const series = [
    { label: "long", measure: "process" as const, points: [[100, 1 * 2 ** 30], [101, 2 * 2 ** 30], [102, 3 * 2 ** 30]] as const },
    { label: "short", measure: "process" as const, points: [[200, 2 ** 30], [200.5, 1.5 * 2 ** 30]] as const },
  ];

  test("align: every series starts at 0 s; the shorter one ends where it ends (nothing carried past)", () => {
    const rows = rowsOf(memorySpec(series, { align: true, width: 600, height: 300, title: "m" }));
    const long = rows.filter((r) => r.label === "long");
    const short = rows.filter((r) => r.label === "short");
    assert.deepEqual(long.map((r) => r.x), [0, 1, 2]);
    assert.deepEqual(short.map((r) => r.x), [0, 0.5]);
    assert.equal(Math.max(...short.map((r) => r.x)), 0.5, "no point of 'short' after its last sample");
  });

  test("align: each line its own dash, the first solid, so runs that coincide stay visible; without align, plain lines", () => {
    type Layer = { encoding: { strokeDash?: { field: string; scale: { domain: string[]; range: number[][] } } } };
    const [aligned] = memorySpec(series, { align: true, width: 600, height: 300, title: "m" }).layer as Layer[];
    const dash = aligned.encoding.strokeDash!;
    assert.equal(dash.field, "label");
    assert.deepEqual(dash.scale.domain, series.map((s) => s.label));
    assert.deepEqual(dash.scale.range[0], [1, 0], "the first series is solid");
    assert.equal(new Set(dash.scale.range.map((d) => d.join(","))).size, series.length, "no two series share a dash");
    const [plain] = memorySpec(series, { align: false, width: 600, height: 300, title: "m" }).layer as Layer[];
    assert.equal(plain.encoding.strokeDash, undefined);
  });

  test("without align: wall-clock time; memory in the unit that suits it", () => {
    const spec = memorySpec(series, { align: false, width: 600, height: 300, title: "m" });
    const rows = rowsOf(spec);
    assert.deepEqual(rows.filter((r) => r.label === "short").map((r) => r.x), [200_000, 200_500]);
    assert.deepEqual(rows.filter((r) => r.label === "long").map((r) => r.value), [1, 2, 3]);
    assert.equal(rows[0].bytes, "1.00 GiB");
    const layer = (spec.layer as { encoding: { y: { title: string }; x: { type: string } } }[])[0];
    assert.equal(layer.encoding.y.title, "Process memory (GiB)");
    assert.equal(layer.encoding.x.type, "temporal");
  });

  test("plot() checks align", async () => {
    const sampler = new MemorySampler();
    assert.throws(() => sampler.plot({ align: "yes" as never }), /Option align must be true or false/);
  });
});
