// delayed/compute/tokenize, and the key helpers (key_split, sort order, repr).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Callback, Delayed, type Key, compareKeys, compute, delayed, formatKey, keyPrefix, tokenize } from "../src";
import { keyPrefixer } from "../src/kernel/graph/keys";

const add = (a: number, b: number): number => a + b;

describe("delayed", () => {
  test("keys are <function name>-<token>, deterministic from function and arguments", () => {
    const dadd = delayed(add);
    const x = dadd(1, 2);
    assert.match(x.key, /^add-[0-9a-f]{32}$/);
    assert.equal(dadd(1, 2).key, x.key);
    assert.notEqual(dadd(2, 1).key, x.key);
    assert.equal(delayed(add, { name: "plus" })(1, 2).key.split("-")[0], "plus");
    assert.match(delayed((v: number) => v)(1).key, /^lambda-|^v-/);
  });

  test("Delayed arguments become dependencies; compute runs the graph", async () => {
    const inc = delayed(function inc(x: number) {
      return x + 1;
    });
    const dadd = delayed(add);
    const x = inc(1);
    const y = inc(x);
    const z = dadd(x, y);
    assert.deepEqual([...z.dask.keys()].sort(), [x.key, y.key, z.key].sort());
    assert.equal(await z.compute(), 5);
    const keys: Key[] = [];
    assert.deepEqual(await compute(x, z, "plain", { callbacks: [new Callback({ pretask: (key) => keys.push(key) })] }), [2, 5, "plain"]);
    assert.equal(keys.length, 3, "shared work runs once");
  });

  test("Delayed values inside arrays and objects are found; strings equal to keys stay strings", async () => {
    const inc = delayed((x: number) => x + 1, { name: "inc" });
    const x = inc(1);
    const total = delayed((xs: number[], o: { a: number; s: string }) => xs[0] + xs[1] + o.a + o.s.length);
    const value = total([x, 10], { a: x, s: x.key });
    assert.equal(await value.compute(), 2 + 10 + 2 + x.key.length);
    const echo = delayed((s: string, list: unknown[]) => [s, list.length]);
    assert.deepEqual(await echo(x.key, [add, 1]).compute(), [x.key, 2]);
  });

  test("a 5 000-long chain of Delayed values computes", async () => {
    const inc = delayed((x: number) => x + 1, { name: "inc" });
    let v: Delayed<number> | number = 0;
    for (let i = 0; i < 5000; i++) v = inc(v);
    assert.equal(await (v as Delayed<number>).compute(), 5000);
  });

  test("delayed() of something that is not a function is named", () => {
    assert.throws(() => delayed(42 as never), /delayed\(\) takes a function, got number/);
  });

  test("compute with no Delayed values returns them as they are", async () => {
    assert.deepEqual(await compute(1, "a"), [1, "a"]);
  });
});

describe("tokenize", () => {
  test("equal inputs give equal tokens; different inputs differ", () => {
    assert.equal(tokenize({ a: 1, b: [1, 2] }), tokenize({ b: [1, 2], a: 1 }));
    assert.notEqual(tokenize([1, 2]), tokenize([2, 1]));
    assert.notEqual(tokenize("1"), tokenize(1));
    assert.equal(tokenize(new Float64Array([1, 2])), tokenize(new Float64Array([1, 2])));
    assert.notEqual(tokenize(new Float64Array([1, 2])), tokenize(new Float32Array([1, 2])));
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    assert.match(tokenize(cyclic), /^[0-9a-f]{32}$/);
  });
});

describe("keys", () => {
  test("keyPrefix groups keys like Dask's key_split", () => {
    assert.equal(keyPrefix("x"), "x");
    assert.equal(keyPrefix("x-1"), "x");
    assert.equal(keyPrefix("x-1-2-3"), "x");
    assert.equal(keyPrefix(["x-2", 1]), "x");
    assert.equal(keyPrefix("hello-world-1"), "hello-world");
    assert.equal(keyPrefix("x-abcdefab"), "x");
    assert.equal(keyPrefix("ae05086432ca935f6eba409a8ecd4896"), "data");
    assert.equal(keyPrefix(["tsqr-8d16e396b237bf7a731333130d310cb9_QR_st1", 5, 0]), "tsqr");
    assert.equal(keyPrefix("add-3f2a9c0d1e2f3a4b5c6d7e8f9a0b1c2d"), "add");
  });

  test("keyPrefixer (cached) groups every key exactly as keyPrefix does", () => {
    const keys: Key[] = [
      "x", "x-1", "x-1-2-3", "hello-world-1", "hello-world", "x-abcdefab", "x-ABCDEFAB-1", "x-abcdefabc-2", "inc-abcdef12",
      "inc-3f2a9c0d", "ae05086432ca935f6eba409a8ecd4896", "a--b", "-x", "x-", "_private-3", "('x', 1)-2", "sum-3-17", "sum-3-18",
      "leaf-9", "Ünï-cödé-1", ["x-2", 1], ["tsqr-8d16e396b237bf7a731333130d310cb9_QR_st1", 5, 0], [["x-1", 2], 3], 7, ["a-b-c", 0],
    ];
    const cached = keyPrefixer();
    for (const key of [...keys, ...keys]) assert.equal(cached(key), keyPrefix(key), `key ${JSON.stringify(key)}`);
  });

  test("L9 keys sort by kind, then value; tuples element by element", () => {
    const keys: Key[] = [["z", 0], "x", ["x", 1], ["x", 0], 3];
    assert.deepEqual([...keys].sort(compareKeys), [3, "x", ["x", 0], ["x", 1], ["z", 0]]);
  });

  test("formatKey prints Dask's repr", () => {
    assert.equal(formatKey("x"), "'x'");
    assert.equal(formatKey(["x", 0, 1]), "('x', 0, 1)");
    assert.equal(formatKey(["x"]), "('x',)");
    assert.equal(formatKey("it's"), "'it\\'s'");
  });
});
