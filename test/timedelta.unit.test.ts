// Durations as Dask's parse_timedelta reads them (the task stream's relative start and stop).
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseTimedelta } from "../src/kernel/timedelta";

// Port of dask/tests/test_utils.py::test_parse_timedelta (the strings; numbers, None and
// datetime.timedelta are not durations here: a number is an epoch time where durations are taken).
test("test_parse_timedelta: Dask's strings give Dask's seconds", () => {
  const cases: [string, number][] = [
    ["1s", 1],
    ["100ms", 0.1],
    ["5S", 5],
    ["5.5s", 5.5],
    ["5.5 s", 5.5],
    ["1 second", 1],
    ["3.3 seconds", 3.3],
    ["3.3 milliseconds", 0.0033],
    ["3500 us", 0.0035],
    ["1 ns", 1e-9],
    ["2m", 120],
    ["5 days", 5 * 24 * 60 * 60],
    ["2 w", 2 * 7 * 24 * 60 * 60],
    ["2 minutes", 120],
    ["1", 1],
    ["ms", 0.001],
  ];
  for (const [text, seconds] of cases) {
    const result = parseTimedelta(text, "start");
    assert.ok(result === seconds || Math.abs(result - seconds) < 1e-14, `${text}: ${result}, not ${seconds}`);
  }
});

test("a duration that is not one is refused, naming the option and the unit", () => {
  assert.throws(() => parseTimedelta("1 foo", "start"), /Option start must be a duration .*unknown unit "foo"; known: s, ms/);
  assert.throws(() => parseTimedelta("", "stop"), /Option stop must be a duration .*not a number and a unit/);
  assert.throws(() => parseTimedelta("1.2.3s", "stop"), /Option stop must be a duration/);
});
