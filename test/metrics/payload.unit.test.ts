// The "fpm" notebook payload: what visualize() sends in a notebook passes the extension's checks
// as it is, and a saved output of unknown origin that does not fit is refused, naming the field.
import assert from "node:assert/strict";
import { test } from "node:test";
import { FinePerformanceMetrics, get, withCallbacks } from "../../src";
import { MIME_TYPE } from "../../src/protocol";
import { PayloadError, parsePayload } from "../../src/views/payload";

async function bundle(): Promise<Record<string, unknown>> {
  const fpm = new FinePerformanceMetrics();
  await withCallbacks(fpm, () => get({ "inc-1": [(x: number) => x + 1, 1] }, "inc-1"));
  const panel = await fpm.visualize({ save: false, selection: { unit: "seconds", functions: ["inc"] } });
  return (await panel.toMimeBundle()) as Record<string, unknown>;
}

test("the panel's notebook bundle: the tsdask payload passes the checks unchanged, with an SVG and a text table", async () => {
  const data = await bundle();
  const payload = data[MIME_TYPE];
  const parsed = parsePayload(JSON.parse(JSON.stringify(payload)));
  assert.equal(parsed.kind, "fpm");
  assert.deepEqual(parsed, JSON.parse(JSON.stringify(payload)));
  assert.ok(String(data["image/svg+xml"]).startsWith("<svg"));
  assert.match(String(data["text/plain"]), /^Fine performance metrics \(local scheduler, 1 thread\): .* in 1 function[^]*\ninc +/);
});

test("bad fpm payloads are refused with a message naming the field", async () => {
  const good = JSON.parse(JSON.stringify((await bundle())[MIME_TYPE])) as { data: Record<string, unknown>; selection: Record<string, unknown> };
  const variants: [string, (p: typeof good) => void, RegExp][] = [
    ["no data", (p) => delete (p as Partial<typeof good>).data, /"data" must be an object/],
    ["a metric value as text", (p) => ((p.data.metrics as Record<string, unknown>[])[0].value = "1"), /"value" must be a number/],
    ["an unknown context", (p) => ((p.data.metrics as Record<string, unknown>[])[0].context = "p2p"), /metrics\[0\]\.context must be one of/],
    ["a span's parent as a number", (p) => ((p.data.spans as Record<string, unknown>[])[0].parent = 3), /spans\[0\]\.parent must be a span id or null/],
    ["malformed intervals", (p) => ((p.data.spans as Record<string, unknown>[])[0].intervals = [[1, 2]]), /spans\[0\]\.intervals must be \[start, stop, threads\] triples/],
    ["a span's metrics missing", (p) => delete (p.data.spans as Record<string, unknown>[])[0].metrics, /"metrics" must be an array/],
    ["selection functions not strings", (p) => (p.selection.functions = [1]), /"functions" must be an array of strings/],
    ["no unit", (p) => delete p.selection.unit, /"unit" must be a string/],
  ];
  for (const [what, spoil, message] of variants) {
    const payload = structuredClone(good);
    spoil(payload);
    assert.throws(() => parsePayload(payload), (error: unknown) => error instanceof PayloadError && message.test(error.message), what);
  }
});
