// The JupyterLab extension's DOM-free parts: payload checks, number formats, tooltip escaping,
// and how plot updates are told apart from new plots. (The rendering itself: browser.test.ts.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatRate, formatTime, percent } from "../src/views/format";
import { PayloadError, parsePayload } from "../src/views/payload";
import { splitSpec } from "../src/views/spec";
import { tooltipHtml } from "../src/views/tooltip";

const progress = {
  version: 1,
  kind: "progress",
  id: "p",
  seq: 3,
  done: 2,
  total: 4,
  elapsed: 1.5,
  state: "running",
  groups: [{ name: "inc", done: 2, total: 4 }],
};

test("payloads are accepted as objects or as the JSON text tslab's display.raw sends", () => {
  assert.deepEqual(parsePayload(progress), progress);
  assert.deepEqual(parsePayload(JSON.stringify(progress)), progress);
  assert.deepEqual(parsePayload({ ...progress, groups: undefined }).kind, "progress");
  const plot = { version: 1, kind: "plot", id: "q", seq: 0, spec: { mark: "bar" } };
  assert.deepEqual(parsePayload(plot), plot);
});

test("bad payloads are refused with a message naming the field", () => {
  const refuses = (data: unknown, message: RegExp): void => assert.throws(() => parsePayload(data), (error: unknown) => {
    assert.ok(error instanceof PayloadError);
    assert.match(error.message, message);
    return true;
  });
  refuses("not json", /not JSON/);
  refuses([1], /not a JSON object/);
  refuses({ ...progress, version: 2 }, /protocol version 2; this extension understands version 1/);
  refuses({ ...progress, kind: "chart" }, /unknown output kind "chart"/);
  refuses({ ...progress, done: -1 }, /"done" must be a non-negative number, got -1/);
  refuses({ ...progress, total: "4" }, /"total" must be a non-negative number/);
  refuses({ ...progress, state: "paused" }, /"state" must be one of running, finished, errored, cancelled/);
  refuses({ ...progress, groups: [{ name: 1, done: 0, total: 1 }] }, /"name" must be a string/);
  refuses({ ...progress, id: undefined }, /"id" must be a string/);
  refuses({ version: 1, kind: "plot", id: "q", seq: 0, spec: "https://example.org/spec.json" }, /"spec" must be a Vega-Lite specification object/);
});

test("times read like Dask's format_time; percent only reaches 100 when all is done", () => {
  assert.equal(formatTime(0.000_004_2), "4.20 us");
  assert.equal(formatTime(0.5), "500.00 ms");
  assert.equal(formatTime(1.2), "1.20 s");
  assert.equal(formatTime(599), "599.00 s");
  assert.equal(formatTime(601), "10m 1s");
  assert.equal(formatTime(3 * 3600 + 125), "3hr 2m");
  assert.equal(formatTime(3 * 86400 + 7200), "3d 2hr");
  assert.equal(percent(199, 200), 99);
  assert.equal(percent(200, 200), 100);
  assert.equal(percent(0, 0), 100);
  assert.equal(percent(0, 0, true), 0, "a running bar whose tasks are not counted yet is empty, not full");
  assert.equal(percent(3, 4, true), 75);
  assert.equal(formatRate(0, 0), "– tasks/s");
  assert.equal(formatRate(30, 2), "15.0 tasks/s");
  assert.equal(formatRate(3000, 2), "1500 tasks/s");
});

test("tooltips escape every value and key and never emit an image", () => {
  const html = tooltipHtml({ title: "<b>t</b>", "<k>": `<img src=x onerror=alert(1)>`, image: "http://x/y.png", n: 3, o: { a: '"' } });
  assert.equal(
    html,
    "<h2>&lt;b&gt;t&lt;/b&gt;</h2><table>" +
      '<tr><td class="key">&lt;k&gt;</td><td class="value">&lt;img src=x onerror=alert(1)&gt;</td></tr>' +
      '<tr><td class="key">image</td><td class="value">http://x/y.png</td></tr>' +
      '<tr><td class="key">n</td><td class="value">3</td></tr>' +
      '<tr><td class="key">o</td><td class="value">{&quot;a&quot;:&quot;\\&quot;&quot;}</td></tr></table>',
  );
  assert.equal(tooltipHtml("<script>"), "&lt;script&gt;");
});

test("a plot update differing only in data rows keeps its shape; other changes do not", () => {
  const spec = (rows: number[], mark = "bar") => ({
    layer: [{ data: { values: rows.map((x) => ({ x })) }, mark }, { data: { name: "fixed" }, mark: "rule" }],
    datasets: { fixed: [{ x: 0 }] },
  });
  const first = splitSpec(spec([1, 2]), "JupyterLab Light");
  const more = splitSpec(spec([1, 2, 3]), "JupyterLab Light");
  assert.equal(first.shape, more.shape);
  assert.deepEqual([...more.datasets.keys()], ["fixed", "tsdask_inline_0"]);
  assert.deepEqual(more.datasets.get("tsdask_inline_0"), [{ x: 1 }, { x: 2 }, { x: 3 }]);
  assert.deepEqual((more.spec.layer as { data: unknown }[])[0]?.data, { name: "tsdask_inline_0" });
  assert.notEqual(splitSpec(spec([1, 2], "point"), "JupyterLab Light").shape, first.shape);
  assert.notEqual(splitSpec(spec([1, 2]), "JupyterLab Dark").shape, first.shape);
  const source = spec([1]);
  splitSpec(source, "");
  assert.deepEqual(source.layer[0]?.data, { values: [{ x: 1 }] }, "the payload itself is left as it was");
});
