// formatTime against Dask's own dask.utils.format_time, run in the project's Python (.venv).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { formatTime } from "../../src";

test("formatTime matches dask.utils.format_time", () => {
  const values = [
    0, 1e-7, 0.000125, 0.00018510, 0.000999999, 0.001, 0.0015, 0.1, 0.125, 0.375, 0.5, 0.99999, 1, 1.125, 1.2, 1.005, 2.675,
    59.999, 60, 600, 600.5, 601, 3599, 7200, 7201, 10000.4, 172800, 172801, 1e6, 123456.789,
  ];
  const python = process.env.TSDASK_PYTHON;
  assert.ok(python, "TSDASK_PYTHON is set by the test runner");
  const script = "import json,sys\nfrom dask.utils import format_time\nprint(json.dumps([format_time(v) for v in json.loads(sys.argv[1])]))";
  const expected = JSON.parse(execFileSync(python, ["-c", script, JSON.stringify(values)], { encoding: "utf8" })) as string[];
  assert.deepEqual(values.map(formatTime), expected);
  assert.equal(formatTime(1.2), "1.20 s");
  assert.equal(formatTime(0.125), "125.00 ms");
});
