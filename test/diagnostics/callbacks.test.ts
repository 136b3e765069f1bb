// Custom callbacks (the docs' PrintKeys) and ports of dask/tests/test_callbacks.py.
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

    test("C1/C2: start fires with no tasks; startState sees the cache", async () => {
      let started = false;
      let cacheSize = -1;
      let literal: unknown;
      const cb = new Callback({
        start: () => void (started = true),
        startState: (dsk, state) => {
          cacheSize = state.cache.size;
          literal = dsk.get("x");
        },
      });
      await withCallbacks(cb, () => get({ x: 1 }, "x", { scheduler }));
      assert.deepEqual([started, cacheSize, literal], [true, 1, 1]);
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

test("C4: nested computations see only their own callbacks (sync: the nested get runs in the task)", async () => {
  const seen = { outer: [] as Key[], inner: [] as Key[] };
  const track = (into: Key[]): Callback => new Callback({ pretask: (key) => void into.push(key) });
  const inner = { x: [add, 1, 2], y: [add, "x", 3] };
  const nested = async (x: number): Promise<number> => {
    return ((await withCallbacks(track(seen.inner), () => get(inner, "y"))) as number) + x;
  };
  const outer = withCallbacks(track(seen.outer), () => get({ a: [nested, 1], b: [add, "a", 2] }, "b"));
  assert.equal(await outer, 9);
  assert.deepEqual(seen.outer.sort(), ["a", "b"]);
  assert.deepEqual(seen.inner.sort(), ["x", "y"]);
  assert.equal(Callback.active.size, 0);
});
