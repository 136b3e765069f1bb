// The scheduler with the sync executor: ports of dask/tests/test_local.py (L1–L15 in
// shared/research/dask-local.md §8) plus tsdask's own behaviours (promises, abort, errors).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  AbortError,
  Callback,
  CycleError,
  InvalidTaskError,
  type Key,
  MissingDependencyError,
  MissingKeyError,
  type State,
  get,
  quote,
  ref,
} from "../src";

const inc = (x: number): number => x + 1;
const add = (a: number, b: number): number => a + b;
const mul = (a: number, b: number): number => a * b;
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** The state as plain data, for deep comparisons. */
function snapshot(state: State): Record<string, unknown> {
  const setMap = (map: ReadonlyMap<Key, ReadonlySet<Key>>): Record<string, string[]> =>
    Object.fromEntries([...map].map(([key, set]) => [String(key), [...set].map(String).sort()]));
  return {
    cache: Object.fromEntries(state.cache),
    dependencies: setMap(state.dependencies),
    dependents: setMap(state.dependents),
    waiting: setMap(state.waiting),
    waitingData: setMap(state.waitingData),
    ready: [...state.ready],
    running: [...state.running],
    finished: [...state.finished],
    released: [...state.released],
  };
}

/** Captures the state right after it is built. */
async function startState(dsk: Record<string, unknown> | Map<Key, unknown>, keys: Key | Key[], cache?: Map<Key, unknown>) {
  let seen: Record<string, unknown> | undefined;
  const cb = new Callback({ startState: (_dsk, state) => (seen = snapshot(state)) });
  await get(dsk, keys, { callbacks: [cb], cache });
  return seen!;
}

describe("start state (test_local)", () => {
  test("L1 every field has Dask's meaning", async () => {
    const state = await startState({ x: 1, y: 2, z: [inc, "x"], w: [add, "z", "y"] }, "w");
    assert.deepEqual(state, {
      cache: { x: 1, y: 2 },
      dependencies: { w: ["y", "z"], x: [], y: [], z: ["x"] },
      dependents: { w: [], x: ["z"], y: ["w"], z: ["w"] },
      waiting: { w: ["z"] },
      waitingData: { w: [], x: ["z"], y: ["w"], z: ["w"] },
      ready: ["z"],
      running: [],
      finished: [],
      released: [],
    });
  });

  test("L2 a key found only in the cache is a dependency", async () => {
    const state = await startState({ b: [inc, "a"] }, "b", new Map([["a", 1]]));
    assert.deepEqual(state.dependencies, { a: [], b: ["a"] });
    assert.deepEqual(state.ready, ["b"]);
  });

  test("L3 an alias is a task, not data", async () => {
    const state = await startState({ x: 1, y: "x", z: [inc, "y"] }, "z");
    assert.deepEqual(state.cache, { x: 1 });
  });

  test("L4 a task without dependencies is ready at once", async () => {
    assert.deepEqual((await startState({ x: [inc, 1] }, "x")).ready, ["x"]);
  });

  test("L5 lists with tasks are tasks; plain lists are data", async () => {
    const state = await startState({ a: [1, [inc, 2]], b: [1, 2, 3, 4], c: [inc, 3] }, ["a", "b", "c"]);
    assert.deepEqual(Object.keys(state.cache as object), ["b"]);
    assert.deepEqual([...(state.ready as string[])].sort(), ["a", "c"]);
    assert.deepEqual(state.dependencies, { a: [], b: [], c: [] });
    assert.deepEqual(state.dependents, { a: [], b: [], c: [] });
  });

  test("L6 finishing a task wakes its dependents and releases what nobody needs", async () => {
    const afterZ: Record<string, unknown>[] = [];
    const cb = new Callback({ posttask: (key, _r, _d, state) => key === "z" && afterZ.push(snapshot(state)) });
    await get({ x: 1, y: 2, z: [inc, "x"], w: [add, "z", "y"] }, "w", { callbacks: [cb] });
    assert.deepEqual(afterZ[0], {
      cache: { y: 2, z: 2 },
      dependencies: { w: ["y", "z"], x: [], y: [], z: ["x"] },
      dependents: { w: [], x: ["z"], y: ["w"], z: ["w"] },
      waiting: {},
      waitingData: { w: [], y: ["w"], z: ["w"] },
      ready: ["w"],
      running: [],
      finished: ["z"],
      released: ["x"],
    });
  });
});

describe("get (test_local GetFunctionTestMixin)", () => {
  test("L7a values flow through references", async () => {
    const dsk = { ":x": 1, ":y": [inc, ":x"], ":z": [add, ":x", ":y"] };
    assert.equal(await get(dsk, ":x"), 1);
    assert.equal(await get(dsk, ":y"), 2);
    assert.equal(await get(dsk, ":z"), 3);
  });

  test("L7b/c a missing key is an error naming it, nested too", async () => {
    const dsk = { x: 1, y: [inc, "x"] };
    await assert.rejects(get(dsk, "badkey"), (e: unknown) => e instanceof MissingKeyError && /'badkey'/.test(e.message));
    await assert.rejects(get(dsk, [["badkey"], "y"]), MissingKeyError);
  });

  test("L7d a string that is not a key is a literal", async () => {
    assert.equal(await get({ x: 1, y: [add, "x", 10] }, "y"), 11);
    assert.equal(await get({ y: [(a: string) => a + "!", "hello"] }, "y"), "hello!");
  });

  test("L7e/f lists are evaluated element by element, at any depth", async () => {
    const dsk = { x: 1, y: 2, z: [sum, ["x", "y"]] };
    assert.deepEqual(await get(dsk, ["x", "y"]), [1, 2]);
    assert.equal(await get(dsk, "z"), 3);
    const top = {
      a: [1, 2, 3],
      b: "a",
      c: [1, [inc, 1]],
      d: [[sum, "a"]],
      e: ["a", "b"],
      f: [[[[sum, "a"], "c"], [sum, "b"]], 2],
    };
    assert.deepEqual(await get(top, "a"), [1, 2, 3]);
    assert.deepEqual(await get(top, "b"), [1, 2, 3]);
    assert.deepEqual(await get(top, "c"), [1, 2]);
    assert.deepEqual(await get(top, "d"), [6]);
    assert.deepEqual(await get(top, "e"), [[1, 2, 3], [1, 2, 3]]);
    assert.deepEqual(await get(top, "f"), [[[6, [1, 2]], 6], 2]);
  });

  test("L7g nested key lists give nested results", async () => {
    assert.deepEqual(await get({ x: 1, y: 2 }, [["x"], "y"]), [[1], 2]);
  });

  test("L7h unhashable (any) values in tasks are fine", async () => {
    const dsk = { x: 1, y: [(x: number, s: Set<number>) => x + s.size, "x", new Set([1])] };
    assert.equal(await get(dsk, "y"), 2);
  });

  test("L7i tasks nest", async () => {
    assert.equal(await get({ x: 1, y: [inc, "x"], z: [add, [inc, "x"], "y"] }, "z"), 4);
  });

  test("L7j a 10 000-task chain runs without overflowing the stack", async () => {
    const dsk: Record<string, unknown> = { x0: 0 };
    for (let i = 0; i < 10_000; i++) dsk[`x${i + 1}`] = [inc, `x${i}`];
    assert.equal(await get(dsk, "x10000"), 10_000);
  });

  test("L7l the sync scheduler accepts numWorkers", async () => {
    assert.equal(await get({ x: [inc, "y"], y: 1 }, "x", { numWorkers: 2 }), 2);
  });

  test("tuple keys compare by value, in Maps, references and requests", async () => {
    const dsk = new Map<Key, unknown>([
      [["x", 0], 1],
      [["x", 1], 2],
      ["total", [add, ["x", 0], ["x", 1]]],
      [["y", 0, 0], [mul, ["x", 1], 10]],
    ]);
    assert.equal(await get(dsk, "total"), 3);
    assert.equal(await get(dsk, ["y", 0, 0]), 20);
    assert.deepEqual(await get(dsk, [["x", 0], ["y", 0, 0]]), [1, 20]);
    const keys: Key[] = [];
    await get(dsk, "total", { callbacks: [new Callback({ pretask: (key) => keys.push(key) })] });
    assert.deepEqual(keys, ["total"]);
  });

  test("a task may return a promise, which is awaited", async () => {
    const later = (x: number): Promise<number> => new Promise((resolve) => setTimeout(() => resolve(x * 2), 5));
    assert.equal(await get({ a: [later, 21], b: [inc, "a"] }, "b"), 43);
    assert.equal(await get({ a: [add, [later, 1], [later, 2]] }, "a"), 6);
  });

  test("quote() and ref() settle what a bare value leaves ambiguous", async () => {
    const concat = (a: string, b: string): string => a + b;
    assert.equal(await get({ x: "value", y: [concat, quote("x"), "x"] }, "y"), "xvalue");
    assert.deepEqual(await get({ y: [(v: unknown[]) => v.length, quote([inc, 1])] }, "y"), 2);
    assert.equal(await get({ x: 5, y: [inc, ref("x")] }, "y"), 6);
  });
});

describe("graph errors are raised before any task runs", () => {
  const ran: string[] = [];
  const track = (name: string) => (): string => (ran.push(name), name);

  test("L15 a missing explicit dependency names the key and its dependents", async () => {
    await assert.rejects(get({ a: [track("a")], y: [inc, ref("x")], z: [add, ref("x"), "a"] }, ["y", "z"]), (e: unknown) => {
      assert.ok(e instanceof MissingDependencyError);
      assert.equal(e.key, "x");
      assert.deepEqual(e.dependents, ["y", "z"]);
      assert.match(e.message, /Missing dependency 'x' for dependents \{'y', 'z'\}/);
      return true;
    });
    assert.deepEqual(ran, []);
    assert.equal(await get({ y: [inc, ref("x")] }, "y", { cache: new Map([["x", 1]]) }), 2);
  });

  test("a cycle names the keys on it", async () => {
    await assert.rejects(get({ s: [track("s")], a: [add, "s", "c"], b: [inc, "a"], c: [inc, "b"] }, "a"), (e: unknown) => {
      assert.ok(e instanceof CycleError);
      assert.deepEqual([...e.cycle].sort(), ["a", "b", "c"]);
      assert.match(e.message, /'a' -> 'c' -> 'b' -> 'a'|'a' -> 'b' -> 'c' -> 'a'/);
      return true;
    });
    await assert.rejects(get({ x: "x" }, "x"), CycleError);
    assert.deepEqual(ran, []);
  });

  test("a task whose head is undefined (a missing import) is named", async () => {
    const missing = (undefined as unknown) as () => number;
    await assert.rejects(get({ s: [track("s")], t: [add, "s", [missing, 1]] }, "t"), (e: unknown) => {
      assert.ok(e instanceof InvalidTaskError);
      assert.equal(e.key, "t");
      assert.match(e.message, /Task 't' is invalid: a nested task starts with undefined/);
      return true;
    });
    assert.deepEqual(ran, []);
  });

  test("bad options are named", async () => {
    await assert.rejects(get({ x: 1 }, "x", { start_callback: 1 } as never), /Unknown get option "start_callback"/);
    await assert.rejects(get({ x: 1 }, "x", { scheduler: "gpu" } as never), /Option scheduler must be/);
    await assert.rejects(get({ x: 1 }, "x", { numWorkers: 0 }), /numWorkers must be a whole number/);
    await assert.rejects(get([] as never, "x"), /A graph must be a plain object or a Map/);
  });
});

describe("task errors", () => {
  class MyException extends Error {
    override name = "MyException";
    constructor(
      readonly a: number,
      readonly b: number,
    ) {
      super("My Exception!");
    }
  }

  test("L11 the original error reaches the caller: class, message, properties, stack", async () => {
    const raise = (): never => {
      throw new MyException(1, 2);
    };
    await assert.rejects(get({ x: [raise] }, "x"), (e: unknown) => {
      assert.ok(e instanceof MyException);
      assert.equal(e.message, "My Exception!");
      assert.equal(e.a, 1);
      assert.equal(e.b, 2);
      assert.match(e.stack ?? "", /raise/);
      return true;
    });
  });

  test("a rejected promise is the task's error", async () => {
    const fail = async (): Promise<never> => {
      throw Object.assign(new RangeError("too far"), { code: "E_FAR" });
    };
    await assert.rejects(get({ x: [fail] }, "x"), (e: unknown) => e instanceof RangeError && (e as { code?: string }).code === "E_FAR");
  });

  test("L14 only what the requested keys need is computed", async () => {
    let calls = 0;
    const onlyOnce = (): number => {
      if (calls++ > 0) throw new Error("computed twice");
      return 1;
    };
    const never = (): never => {
      throw new Error("x1 should not run");
    };
    assert.equal(await get({ x1: [never], x2: [onlyOnce], y: [add, 1, "x2"] }, "y"), 2);
  });
});

describe("order", () => {
  test("L12 independent siblings run highest key first", async () => {
    const order: number[] = [];
    const dsk = new Map<Key, unknown>();
    const xs: Key[] = [];
    for (let i = 0; i < 10; i++) {
      dsk.set(["x", i], [(n: number) => order.push(n), i]);
      xs.push(["x", i]);
    }
    dsk.set("y", [(...args: unknown[]) => args.length, ...xs]);
    await get(dsk, "y");
    assert.deepEqual(order, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  test("depth first: a reduction holds few intermediates at once", async () => {
    // A binary tree over 1024 leaves: depth-first order keeps at most ~log2(n) partial sums alive.
    const dsk: Record<string, unknown> = {};
    let level = Array.from({ length: 1024 }, (_, i) => {
      dsk[`leaf-${i}`] = [inc, i];
      return `leaf-${i}`;
    });
    for (let depth = 0; level.length > 1; depth++) {
      const next: string[] = [];
      for (let i = 0; i < level.length; i += 2) {
        const key = `sum-${depth}-${i / 2}`;
        dsk[key] = [add, level[i], level[i + 1]];
        next.push(key);
      }
      level = next;
    }
    let peak = 0;
    const cb = new Callback({ posttask: (_k, _r, _d, state) => (peak = Math.max(peak, state.cache.size)) });
    const expected = (1024 * 1025) / 2;
    assert.equal(await get(dsk, level[0], { callbacks: [cb] }), expected);
    assert.ok(peak <= 12, `peak cache size ${peak}`);
  });

  test("an intermediate is released as soon as no remaining task needs it", async () => {
    const dsk = { a: [inc, 1], b: [inc, "a"], c: [inc, "b"], d: [add, "a", "c"] };
    const releasedAt: Record<string, string[]> = {};
    const cb = new Callback({ posttask: (key, _r, _d, state) => (releasedAt[String(key)] = [...state.released].map(String).sort()) });
    await get(dsk, "d", { callbacks: [cb] });
    assert.deepEqual(releasedAt, { a: [], b: [], c: ["b"], d: ["a", "b", "c"] });
  });
});

describe("cache option", () => {
  test("L8 the given cache is the state's cache while tasks run", async () => {
    const cache = new Map<Key, unknown>();
    let sawY = false;
    const check = (x: number): number => ((sawY = cache.has("y")), x + 2);
    assert.equal(await get({ x: 1, y: [inc, "x"], z: [check, "y"] }, "z", { cache }), 4);
    assert.ok(sawY);
    assert.deepEqual([...cache.keys()], ["z"]);
  });

  test("values in the cache are not recomputed", async () => {
    const never = (): never => {
      throw new Error("should come from the cache");
    };
    assert.equal(await get({ x: [never], y: [inc, "x"] }, "y", { cache: new Map([["x", 41]]) }), 42);
  });
});

describe("abort", () => {
  test("aborting stops dispatch, runs finish(errored) and rejects with AbortError", async () => {
    const controller = new AbortController();
    const started: string[] = [];
    let finished: boolean | undefined;
    const slow = (name: string): Promise<string> =>
      new Promise((resolve) => {
        started.push(name);
        if (name === "B") controller.abort();
        setTimeout(() => resolve(name), 5);
      });
    const cb = new Callback({ finish: (_d, _s, errored) => (finished = errored) });
    const dsk = { a: [slow, "A"], b: [slow, "B"], c: [slow, "C"], d: [(...xs: string[]) => xs.join(""), "a", "b", "c"] };
    await assert.rejects(get(dsk, "d", { signal: controller.signal, callbacks: [cb] }), AbortError);
    assert.equal(finished, true);
    assert.deepEqual(started, ["C", "B"]);
  });

  test("an already aborted signal runs nothing", async () => {
    let ran = false;
    await assert.rejects(get({ x: [() => (ran = true)] }, "x", { signal: AbortSignal.abort() }), AbortError);
    assert.equal(ran, false);
  });

  test("a long synchronous run still notices an abort (the loop yields)", async () => {
    const controller = new AbortController();
    const busy = (x: number): number => {
      const until = performance.now() + 1;
      while (performance.now() < until);
      return x + 1;
    };
    const dsk: Record<string, unknown> = { x0: 0 };
    for (let i = 0; i < 2000; i++) dsk[`x${i + 1}`] = [busy, `x${i}`];
    setTimeout(() => controller.abort(), 50);
    const t0 = performance.now();
    await assert.rejects(get(dsk, "x2000", { signal: controller.signal }), AbortError);
    assert.ok(performance.now() - t0 < 1000, "aborted well before the 2 s the run would take");
  });
});
