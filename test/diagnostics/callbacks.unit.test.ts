// Custom callbacks as the docs write them (PrintKeys), and the callback protocol under each
// scheduler (test/callbacks.test.ts has the full port of dask/tests/test_callbacks.py).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Callback, type Graph, type Key, type State, formatKey, get, withCallbacks } from "../../src";
import { SCHEDULERS } from "./fixtures";
import { add, boom, mul } from "./tasks";

for (const scheduler of SCHEDULERS) {
  describe(`custom callbacks (${scheduler})`, () => {
    const graph = { a: [add, 1, 2], b: [add, 3, "a"], c: [mul, "a", "b"] };

    test("PrintKeys as a subclass", async () => {
      const printed: string[] = [];
      class PrintKeys extends Callback {
        override pretask(key: Key, _dask: Graph, _state: State): void {
          printed.push(`Computing: ${formatKey(key)}!`);
        }
      }
      assert.equal(await withCallbacks(new PrintKeys(), () => get(graph, "c", { scheduler })), 18);
      assert.deepEqual(printed, ["Computing: 'a'!", "Computing: 'b'!", "Computing: 'c'!"]);
    });

    test("PrintKeys as a hook function", async () => {
      const printed: string[] = [];
      const printkeys = (key: Key): void => void printed.push(`Computing: ${formatKey(key)}!`);
      await withCallbacks(new Callback({ pretask: printkeys }), () => get(graph, "c", { scheduler }));
      assert.deepEqual(printed, ["Computing: 'a'!", "Computing: 'b'!", "Computing: 'c'!"]);
    });

    test("C3: finish is always called, with errored and the error", async () => {
      const seen: [boolean, unknown][] = [];
      const cb = new Callback({ finish: (_dsk, _state, errored, error) => void seen.push([errored, error]) });
      await assert.rejects(withCallbacks(cb, () => get({ x: [boom] }, "x", { scheduler })), RangeError);
      assert.equal(seen.length, 1);
      assert.equal(seen[0][0], true);
      assert.ok(seen[0][1] instanceof RangeError && seen[0][1].message === "boom", "finish gets the error");
    });

    test("X1: an error in a start hook propagates", async () => {
      const ok = (): void => undefined;
      const broken = new Callback({
        start: () => {
          throw new Error("my_exception");
        },
        finish: ok,
      });
      await assert.rejects(
        withCallbacks(broken, () => withCallbacks(new Callback({ start: ok, finish: ok }), () => get({ x: [add, 1, 2] }, "x", { scheduler }))),
        /my_exception/,
      );
    });
  });
}
