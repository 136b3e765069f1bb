// Bandwidth from transfer logs (synthetic now; the cluster's workers supply real ones): Dask's
// "Bandwidth Types" and "Bandwidth Workers", time-weighted, and their views.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bandwidthSummary } from "../../src";
import { MIXED_TYPES, UNKNOWN_TYPE, bandwidthTypesSpec, bandwidthWorkersSpec } from "../../src/kernel/diagnostics/bandwidth";
import type { TransferLogEntry } from "../../src/protocol/records";

function entry(who: string, bytes: number, seconds: number, types?: string[]): TransferLogEntry {
  return { start: 10, stop: 10 + seconds, middle: 10 + seconds / 2, duration: seconds, who, keys: { "('x', 0)": bytes }, total: bytes, compressed: bytes, bandwidth: bytes / seconds, ...(types === undefined ? {} : { types }) };
}

const logs = {
  "tcp://a": [entry("tcp://b", 100e6, 1, ["Float64Array"]), entry("tcp://b", 100e6, 0.25, ["Float64Array"]), entry("tcp://c", 1e3, 0.001, ["number"])],
  "tcp://b": [entry("tcp://a", 50e6, 1, ["Float64Array", "number"]), entry("tcp://a", 10e6, 0.5)],
};

test("by worker pair: bytes over time spent, source → destination from the incoming logs", () => {
  const summary = bandwidthSummary(logs);
  const pair = (source: string, destination: string) => summary.byWorkers.find((p) => p.source === source && p.destination === destination)!;
  assert.equal(pair("tcp://b", "tcp://a").bandwidth, 200e6 / 1.25, "time-weighted, not the mean of 100 and 400 MB/s");
  assert.equal(pair("tcp://b", "tcp://a").transfers, 2);
  assert.equal(pair("tcp://c", "tcp://a").bandwidth, 1e6);
  assert.equal(pair("tcp://a", "tcp://b").bytes, 60e6);
  assert.deepEqual(summary.byWorkers.map((p) => `${p.source}>${p.destination}`), ["tcp://a>tcp://b", "tcp://b>tcp://a", "tcp://c>tcp://a"]);
  assert.equal(summary.total, (200e6 + 1e3 + 60e6) / (1.25 + 0.001 + 1.5));
  assert.equal(summary.transfers, 5);
});

test("outgoing logs read the other way round", () => {
  const summary = bandwidthSummary({ "tcp://a": [entry("tcp://b", 8e6, 2)] }, { direction: "outgoing" });
  assert.deepEqual(summary.byWorkers.map((p) => [p.source, p.destination, p.bandwidth]), [["tcp://a", "tcp://b", 4e6]]);
  assert.throws(() => bandwidthSummary({}, { direction: "sideways" as never }), /direction must be "incoming" or "outgoing"/);
  assert.throws(() => bandwidthSummary({ w: "x" as never }), /transfer log of worker w must be an array/);
});

test("by type: single-type batches under their type; mixed and untyped batches apart; fastest first", () => {
  const summary = bandwidthSummary(logs);
  const types = Object.fromEntries(summary.byType.map((t) => [t.type, t.bandwidth]));
  assert.equal(types.Float64Array, 200e6 / 1.25);
  assert.equal(types.number, 1e6);
  assert.equal(types[MIXED_TYPES], 50e6);
  assert.equal(types[UNKNOWN_TYPE], 20e6);
  assert.equal(summary.byType[0].type, "Float64Array");
});

test("the views: bars per type, a source × destination heatmap, readable units, every worker on both axes", () => {
  const summary = bandwidthSummary(logs);
  const types = bandwidthTypesSpec(summary, { width: 500 }) as { data: { values: { type: string; value: number; rate: string }[] }; encoding: { x: { title: string } } };
  assert.equal(types.encoding.x.title, "Bandwidth (MiB/s)");
  assert.equal(types.data.values[0].rate, "152.59 MiB/s");
  const workers = bandwidthWorkersSpec(summary, { width: 500 }) as { data: { values: unknown[] }; layer: { encoding: { x: { scale: { domain: string[] } } } }[] };
  assert.equal(workers.data.values.length, 3);
  assert.deepEqual(workers.layer[0].encoding.x.scale.domain, ["tcp://a", "tcp://b", "tcp://c"]);
  const empty = bandwidthSummary({});
  assert.deepEqual([empty.total, empty.byType.length, empty.byWorkers.length], [0, 0, 0]);
});
