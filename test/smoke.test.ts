import assert from "node:assert/strict";
import { test } from "node:test";
import { get } from "../src";

test("the README's first graph computes", async () => {
  const add = (a: number, b: number): number => a + b;
  const mul = (a: number, b: number): number => a * b;
  const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
  assert.equal(await get(dsk, "e"), 6);
  assert.deepEqual(await get(dsk, [["c"], "d"]), [[3], 2]);
});
