import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Key, type SchedulerName, keyPrefix } from "../src";
import * as da from "../src/kernel/collections/array";
import * as kernels from "../src/kernel/collections/array/kernels";
import { applyQ, householderQ, qr as qrBlock, qrReflectors, qrStackedReflectors, stackedQColumns } from "../src/kernel/collections/array/householder";
import { matmul } from "../src/kernel/collections/array/matmul";

// Every array test runs on each scheduler: chunk kernels travel to pool workers by reference.
const schedulers: SchedulerName[] = ["sync", "threads", "processes"];

type Matrix = { rows: number; cols: number; data: Float64Array };

function counting(length: number): Float64Array {
  return Float64Array.from({ length }, (_, i) => ((i * 7919) % 101) / 13 - 3);
}

function reference(rows: number, cols: number, data: Float64Array): Matrix {
  return { rows, cols, data };
}

function refMatmul(a: Matrix, b: Matrix): Matrix {
  const out = new Float64Array(a.rows * b.cols);
  for (let i = 0; i < a.rows; i++) {
    for (let j = 0; j < b.cols; j++) {
      let total = 0;
      for (let p = 0; p < a.cols; p++) total += a.data[i * a.cols + p] * b.data[p * b.cols + j];
      out[i * b.cols + j] = total;
    }
  }
  return { rows: a.rows, cols: b.cols, data: out };
}

function refTranspose(a: Matrix): Matrix {
  const out = new Float64Array(a.rows * a.cols);
  for (let i = 0; i < a.rows; i++) for (let j = 0; j < a.cols; j++) out[j * a.rows + i] = a.data[i * a.cols + j];
  return { rows: a.cols, cols: a.rows, data: out };
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-9, what = "values"): void {
  assert.equal(actual.length, expected.length, `${what}: lengths differ`);
  for (let i = 0; i < expected.length; i++) {
    const scale = Math.max(1, Math.abs(expected[i]));
    if (!(Math.abs(actual[i] - expected[i]) <= tolerance * scale)) {
      assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
    }
  }
}

for (const scheduler of schedulers) {
  describe(`tsdask/array on the ${scheduler} scheduler`, () => {
    const opts = { scheduler };

    test("fromArray then compute returns the same numbers, whatever the chunks", async () => {
      const values = counting(7 * 5);
      for (const chunks of [3, [4, 2], [[2, 5], [1, 3, 1]]] as const) {
        const a = da.fromArray(values, [7, 5], { chunks });
        const out = await a.compute(opts);
        assert.deepEqual(out.shape, [7, 5]);
        assert.deepEqual([...out.data], [...values]);
      }
      const vector = await da.fromArray([1, 2, 3, 4, 5], 5, { chunks: 2 }).compute(opts);
      assert.deepEqual(vector.shape, [5]);
      assert.deepEqual([...vector.data], [1, 2, 3, 4, 5]);
    });

    test("shape, chunks, name and tuple keys follow Dask's conventions", () => {
      const a = da.ones([5, 4], { chunks: [2, 3] });
      assert.deepEqual(a.shape, [5, 4]);
      assert.deepEqual(a.chunks, [[2, 2, 1], [3, 1]]);
      assert.deepEqual(a.numblocks, [3, 2]);
      assert.match(a.name, /^ones-[0-9a-f]{32}$/);
      assert.equal(a.dask.size, 6);
      for (const key of a.dask.keys()) {
        assert.ok(Array.isArray(key) && key[0] === a.name && key.length === 3, `key ${JSON.stringify(key)}`);
        assert.equal(keyPrefix(key), "ones");
      }
      assert.deepEqual(a.keys()[2], [[a.name, 2, 0], [a.name, 2, 1]]);
      assert.equal(String(a), "dask.array<ones, shape=(5, 4), dtype=float64, chunksize=(2, 3)>");
      // Same expression → same keys (deterministic tokens).
      assert.equal(da.ones([5, 4], { chunks: [2, 3] }).name, a.name);
    });

    test("ones and zeros", async () => {
      assert.deepEqual([...(await da.ones(5, { chunks: 2 }).compute(opts)).data], [1, 1, 1, 1, 1]);
      assert.deepEqual([...(await da.zeros([2, 2], { chunks: 1 }).compute(opts)).data], [0, 0, 0, 0]);
    });

    test("element-wise arithmetic with arrays and scalars", async () => {
      const x = counting(6 * 4);
      const y = Float64Array.from(x, (v, i) => v * 0.5 + i + 1);
      const a = da.fromArray(x, [6, 4], { chunks: [4, 3] });
      const b = da.fromArray(y, [6, 4], { chunks: [4, 3] });
      const cases: [da.ChunkedArray, (i: number) => number][] = [
        [a.add(b), (i) => x[i] + y[i]],
        [a.sub(b), (i) => x[i] - y[i]],
        [a.mul(b), (i) => x[i] * y[i]],
        [a.div(b), (i) => x[i] / y[i]],
        [a.add(2), (i) => x[i] + 2],
        [a.sub(2), (i) => x[i] - 2],
        [a.mul(-3), (i) => x[i] * -3],
        [a.div(4), (i) => x[i] / 4],
        [a.mul(b).add(a).div(2), (i) => (x[i] * y[i] + x[i]) / 2],
      ];
      for (const [array, expected] of cases) {
        const out = await array.compute(opts);
        assertClose(out.data, Float64Array.from({ length: x.length }, (_, i) => expected(i)), 1e-12, array.name);
      }
      assert.equal(keyPrefix(a.add(b).blockKey([0, 0])), "add");
      assert.equal(keyPrefix(a.div(b).blockKey([0, 0])), "truediv");
    });

    test("mismatched shapes or chunks give errors that name both", () => {
      const a = da.ones([6, 4], { chunks: [3, 2] });
      assert.throws(() => a.add(da.ones([6, 5], { chunks: [3, 2] })), /add: shapes \(6, 4\) and \(6, 5\) differ/);
      assert.throws(() => a.mul(da.ones([6, 4], { chunks: [2, 2] })), /mul: chunks differ: \(\(3, 3\), \(2, 2\)\) and \(\(2, 2, 2\), \(2, 2\)\)/);
      assert.throws(() => a.dot(da.ones([5, 3], { chunks: 2 })), /dot: shapes \(6, 4\) and \(5, 3\) not aligned: 4 \(dim 1\) != 5 \(dim 0\)/);
      assert.throws(() => a.dot(da.ones([4, 3], { chunks: 3 })), /dot: chunks along the contracted axis differ: \(2, 2\) and \(3, 1\)/);
      assert.throws(() => a.sum({ axis: 2 }), /sum: axis 2 is out of bounds for a 2-d array/);
      assert.throws(() => da.fromArray([1, 2, 3], [2, 2]), /fromArray: 3 values do not fill shape \(2, 2\)/);
      assert.throws(() => da.ones([4, 4], { chunks: [[2, 1], 2] }), /chunks \(2, 1\) for axis 0 do not add up to its length 4/);
      assert.throws(() => da.ones([4, 4], { chunks: [0, 2] }), /Block size must be a whole number ≥ 1, got 0 for axis 0/);
    });

    test("transpose, T and 1-d transpose", async () => {
      const x = counting(5 * 3);
      const a = da.fromArray(x, [5, 3], { chunks: [2, 2] });
      const t = await a.T.compute(opts);
      assert.deepEqual(t.shape, [3, 5]);
      assert.deepEqual(a.T.chunks, [[2, 1], [2, 2, 1]]);
      assert.deepEqual([...t.data], [...refTranspose(reference(5, 3, x)).data]);
      assert.deepEqual([...(await a.transpose().T.compute(opts)).data], [...x]);
      const v = da.fromArray([1, 2, 3], 3, { chunks: 2 });
      assert.equal(v.T, v);
    });

    test("dot: blocked products summed over the contracted chunks", async () => {
      const x = counting(7 * 9);
      const y = Float64Array.from(counting(9 * 5), (v) => v * 1.5 - 1);
      const a = da.fromArray(x, [7, 9], { chunks: [[3, 4], [4, 4, 1]] });
      const b = da.fromArray(y, [9, 5], { chunks: [[4, 4, 1], 2] });
      const product = a.dot(b);
      assert.deepEqual(product.chunks, [[3, 4], [2, 2, 1]]);
      const expected = refMatmul(reference(7, 9, x), reference(9, 5, y));
      assertClose((await product.compute(opts)).data, expected.data, 1e-12, "a·b");
      assertClose((await a.matmul(b).compute(opts)).data, expected.data, 1e-12, "matmul");
      const prefixes = new Set([...product.dask.keys()].map((key) => keyPrefix(key)));
      assert.deepEqual([...prefixes].sort(), ["array", "array-original", "dot", "sum"]);

      // a · aᵀ, the seed's example, and matrix-vector / vector-matrix / vector-vector products.
      const gram = await a.dot(a.T).compute(opts);
      assertClose(gram.data, refMatmul(reference(7, 9, x), refTranspose(reference(7, 9, x))).data, 1e-12, "a·aᵀ");
      const v = Float64Array.from({ length: 9 }, (_, i) => i - 4);
      const vector = da.fromArray(v, 9, { chunks: [[4, 4, 1]] });
      const av = await a.dot(vector).compute(opts);
      assert.deepEqual(av.shape, [7]);
      assertClose(av.data, refMatmul(reference(7, 9, x), reference(9, 1, v)).data, 1e-12, "a·v");
      const vb = await vector.dot(b).compute(opts);
      assert.deepEqual(vb.shape, [5]);
      assertClose(vb.data, refMatmul(reference(1, 9, v), reference(9, 5, y)).data, 1e-12, "v·b");
      const vv = await vector.dot(vector).compute(opts);
      assert.deepEqual(vv.shape, []);
      assertClose(vv.data, [v.reduce((total, value) => total + value * value, 0)], 1e-12, "v·v");
    });

    test("sum and mean over all, axis 0, axis 1 and axis -1", async () => {
      const rows = 6;
      const cols = 5;
      const x = counting(rows * cols);
      const a = da.fromArray(x, [rows, cols], { chunks: [4, 2] });
      const total = x.reduce((s, v) => s + v, 0);
      const colSums = Array.from({ length: cols }, (_, j) => Array.from({ length: rows }, (_, i) => x[i * cols + j]).reduce((s, v) => s + v, 0));
      const rowSums = Array.from({ length: rows }, (_, i) => x.subarray(i * cols, (i + 1) * cols).reduce((s, v) => s + v, 0));

      const all = await a.sum().compute(opts);
      assert.deepEqual(all.shape, []);
      assertClose(all.data, [total], 1e-12, "sum()");
      assertClose((await a.mean().compute(opts)).data, [total / x.length], 1e-12, "mean()");
      const axis0 = await a.sum({ axis: 0 }).compute(opts);
      assert.deepEqual(axis0.shape, [cols]);
      assertClose(axis0.data, colSums, 1e-12, "sum(axis=0)");
      assertClose((await a.mean({ axis: 0 }).compute(opts)).data, colSums.map((s) => s / rows), 1e-12, "mean(axis=0)");
      const axis1 = await a.sum({ axis: 1 }).compute(opts);
      assert.deepEqual(axis1.shape, [rows]);
      assert.deepEqual(a.sum({ axis: 1 }).chunks, [[4, 2]]);
      assertClose(axis1.data, rowSums, 1e-12, "sum(axis=1)");
      assertClose((await a.mean({ axis: -1 }).compute(opts)).data, rowSums.map((s) => s / cols), 1e-12, "mean(axis=-1)");
      assert.equal(keyPrefix(a.mean({ axis: 0 }).blockKey([0])), "mean_agg-aggregate");
      const vector = await da.fromArray([1, 2, 3, 4], 4, { chunks: 3 }).mean({ axis: 0 }).compute(opts);
      assertClose(vector.data, [2.5], 1e-12, "1-d mean");
    });

    test("the seed's a.dot(a.T).mean(axis=0) matches a reference", async () => {
      const a = da.random.normal([30, 30], { chunks: [10, 10], seed: 7 });
      const x = (await a.compute(opts)).data;
      const gram = refMatmul(reference(30, 30, x), refTranspose(reference(30, 30, x)));
      const expected = Array.from({ length: 30 }, (_, j) => Array.from({ length: 30 }, (_, i) => gram.data[i * 30 + j]).reduce((s, v) => s + v, 0) / 30);
      assertClose((await a.dot(a.T).mean({ axis: 0 }).compute(opts)).data, expected, 1e-10, "mean(a·aᵀ, axis=0)");
    });

    test("linalg.qr: q·r = a, qᵀq = I, r upper-triangular; layers grouped as tsqr", async () => {
      const cases: [number, number, da.ChunksInput][] = [[40, 6, [10, 6]], [23, 5, [[5, 10, 8], 5]], [12, 4, [12, 4]], [120, 17, [[40, 41, 39], 17]]];
      for (const [rows, cols, chunks] of cases) {
        const a = da.random.random([rows, cols], { chunks, seed: 3 });
        const [q, r] = da.linalg.qr(a);
        assert.deepEqual(q.shape, [rows, cols]);
        assert.deepEqual(q.chunks, a.chunks);
        assert.deepEqual(r.shape, [cols, cols]);
        const A = (await a.compute(opts)).data;
        const Q = (await q.compute(opts)).data;
        const R = (await r.compute(opts)).data;
        assertClose(refMatmul(reference(rows, cols, Q), reference(cols, cols, R)).data, A, 1e-10, "q·r");
        const qtq = refMatmul(refTranspose(reference(rows, cols, Q)), reference(rows, cols, Q));
        assertClose(qtq.data, Float64Array.from({ length: cols * cols }, (_, i) => (i % (cols + 1) === 0 ? 1 : 0)), 1e-10, "qᵀq");
        for (let i = 1; i < cols; i++) for (let j = 0; j < i; j++) assert.equal(R[i * cols + j], 0, `r[${i},${j}]`);
        assertClose((await q.dot(r).compute(opts)).data, A, 1e-10, "q.dot(r) computed lazily");
        const groups = new Set([...q.dask.keys()].filter((key) => Array.isArray(key) && String(key[0]).startsWith("tsqr")).map((key) => keyPrefix(key)));
        assert.deepEqual([...groups], ["tsqr"]);
      }
      assert.throws(() => da.linalg.qr(da.ones([10, 4], { chunks: [5, 2] })), /one block across the columns, got column chunks \(2, 2\)/);
      assert.throws(() => da.linalg.qr(da.ones([10, 4], { chunks: [[2, 8], 4] })), /block 0 has 2/);
    });

    test("seeded random arrays are reproducible per chunk and differ otherwise", async () => {
      const first = await da.random.random([20, 10], { chunks: 5, seed: 42 }).compute(opts);
      const again = await da.random.random([20, 10], { chunks: 5, seed: 42 }).compute(opts);
      const other = await da.random.random([20, 10], { chunks: 5, seed: 43 }).compute(opts);
      const unseeded = [await da.random.random([20, 10], { chunks: 5 }).compute(opts), await da.random.random([20, 10], { chunks: 5 }).compute(opts)];
      assert.deepEqual([...again.data], [...first.data]);
      assert.notDeepEqual([...other.data], [...first.data]);
      assert.notDeepEqual([...unseeded[0].data], [...unseeded[1].data]);
      // Blocks draw from independent streams: no two blocks repeat each other.
      assert.notDeepEqual([...first.data.subarray(0, 5)], [...first.data.subarray(5, 10)]);
      assert.ok(first.data.every((v) => v >= 0 && v < 1));
    });

    test("random samples have the right distribution", async () => {
      const uniform = (await da.random.random(40000, { chunks: 10000, seed: 1 }).compute(opts)).data;
      const mean = uniform.reduce((s, v) => s + v, 0) / uniform.length;
      assert.ok(Math.abs(mean - 0.5) < 0.01, `uniform mean ${mean}`);
      const normal = (await da.random.normal(40001, { chunks: 10000, seed: 1, loc: 2, scale: 3 }).compute(opts)).data;
      const m = normal.reduce((s, v) => s + v, 0) / normal.length;
      const sd = Math.sqrt(normal.reduce((s, v) => s + (v - m) ** 2, 0) / normal.length);
      assert.ok(Math.abs(m - 2) < 0.06, `normal mean ${m}`);
      assert.ok(Math.abs(sd - 3) < 0.06, `normal sd ${sd}`);
      assert.ok(normal.every(Number.isFinite));
    });

    test("persist computes the blocks into the graph", async () => {
      const a = da.random.random([6, 6], { chunks: 3, seed: 5 }).mul(2);
      const persisted = await a.persist(opts);
      assert.equal(persisted.name, a.name);
      assert.deepEqual(persisted.chunks, a.chunks);
      assert.equal(persisted.dask.size, 4);
      for (const value of persisted.dask.values()) {
        const block = value as da.Chunk;
        assert.ok(block.data instanceof Float64Array && block.data.buffer instanceof SharedArrayBuffer);
      }
      assert.deepEqual([...(await persisted.compute(opts)).data], [...(await a.compute(opts)).data]);
      assertClose((await persisted.add(1).sum().compute(opts)).data, (await a.add(1).sum().compute(opts)).data, 1e-12);
    });
  });
}

describe("chunk kernels", () => {
  test("every function in an array graph is a module export, and data is shared memory", () => {
    const exported = new Set<unknown>([...Object.values(kernels), matmul, qrReflectors, householderQ, applyQ, qrStackedReflectors, stackedQColumns]);
    const a = da.random.normal([20, 4], { chunks: [10, 4], seed: 1 });
    const [q, r] = da.linalg.qr(a);
    const graph = q.dot(r).add(a).mean({ axis: 0 }).dask;
    const functions = new Set<unknown>();
    const visit = (value: unknown): void => {
      if (!Array.isArray(value)) return;
      if (typeof value[0] === "function") functions.add(value[0]);
      value.forEach(visit);
    };
    for (const task of graph.values()) visit(task);
    assert.ok(functions.size >= 6);
    for (const fn of functions) assert.ok(exported.has(fn), `${(fn as { name: string }).name} is not a module export`);
    const block = kernels.randomSample([1, 2, 3, 4], [2, 2]);
    assert.ok(block.data.buffer instanceof SharedArrayBuffer);
  });

  test("matmul kernel matches the reference on sizes that are not multiples of its tile", () => {
    for (const [m, k, n] of [[1, 1, 1], [5, 3, 7], [9, 300, 6], [13, 257, 11], [70, 520, 9]]) {
      const a = Float64Array.from({ length: m * k }, (_, i) => Math.sin(i));
      const b = Float64Array.from({ length: k * n }, (_, i) => Math.cos(i));
      const out = matmul({ shape: [m, k], data: a }, { shape: [k, n], data: b });
      assert.deepEqual(out.shape, [m, n]);
      assertClose(out.data, refMatmul(reference(m, k, a), reference(k, n, b)).data, 1e-12, `${m}×${k}×${n}`);
    }
    assert.throws(() => matmul({ shape: [2, 3], data: new Float64Array(6) }, { shape: [2, 2], data: new Float64Array(4) }), /inner dimensions differ/);
  });

  test("applyQ multiplies by q without forming it", () => {
    const [m, n] = [13, 6];
    const block = { shape: [m, n], data: Float64Array.from({ length: m * n }, (_, i) => Math.sin(i * 1.7)) };
    const small = { shape: [n, n], data: Float64Array.from({ length: n * n }, (_, i) => Math.cos(i)) };
    const [reflectors, taus] = qrReflectors(block);
    const q = householderQ(reflectors, taus);
    const out = applyQ(reflectors, taus, small);
    assert.deepEqual(out.shape, [m, n]);
    assertClose(out.data, refMatmul(reference(m, n, q.data), reference(n, n, small.data)).data, 1e-12, "applyQ");
  });

  test("the structured QR of stacked triangles gives the same R (up to signs) as a dense QR", () => {
    const n = 5;
    const triangles = [0, 1, 2].map((b) => {
      const data = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = i; j < n; j++) data[i * n + j] = Math.sin(b * 31 + i * 7 + j) + (i === j ? 2 : 0);
      return { shape: [n, n], data };
    });
    const stacked = new Float64Array(3 * n * n);
    triangles.forEach((t, b) => stacked.set(t.data, b * n * n));
    const [reflectors, taus, rs] = qrStackedReflectors(triangles);
    const qs = stackedQColumns(reflectors, taus, 0, n);
    const [qd, rd] = qrBlock({ shape: [3 * n, n], data: stacked });
    for (let i = 0; i < n; i++) {
      const sign = Math.sign(rs.data[i * n + i]) * Math.sign(rd.data[i * n + i]);
      for (let j = 0; j < n; j++) assert.ok(Math.abs(rs.data[i * n + j] - sign * rd.data[i * n + j]) < 1e-10, `r[${i},${j}]`);
    }
    assertClose(refMatmul(reference(3 * n, n, qs.data), reference(n, n, rs.data)).data, stacked, 1e-10, "q·r (stacked)");
    assertClose(refMatmul(reference(3 * n, n, qd.data), reference(n, n, rd.data)).data, stacked, 1e-10, "q·r (dense)");
  });

  test("the stacked q formed a column range at a time, side by side, is the whole q", () => {
    const n = 9;
    const triangles = [0, 1, 2, 3].map((b) => {
      const data = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = i; j < n; j++) data[i * n + j] = Math.cos(b * 13 + i * 5 + j) + (i === j ? 3 : 0);
      return { shape: [n, n], data };
    });
    const [reflectors, taus] = qrStackedReflectors(triangles);
    const whole = stackedQColumns(reflectors, taus, 0, n);
    const bounds = [0, 4, 5, 9];
    const pieces = bounds.slice(1).map((to, p) => stackedQColumns(reflectors, taus, bounds[p], to));
    assert.deepEqual(pieces.map((piece) => piece.shape), [[4 * n, 4], [4 * n, 1], [4 * n, 4]]);
    for (let b = 0; b < 4; b++) {
      const rows = kernels.sliceRowsSideBySide(pieces, b * n, n);
      assert.deepEqual(rows.shape, [n, n]);
      assertClose(rows.data, whole.data.subarray(b * n * n, (b + 1) * n * n), 1e-14, `block ${b}`);
    }
  });
});

// Keys of different arrays never collide, so graphs merge safely.
test("different operations give different layer names", () => {
  const a = da.ones([4, 4], { chunks: 2 });
  const names = new Set<Key>([a.name, a.T.name, a.add(1).name, a.add(2).name, a.mul(1).name, a.sum().name, a.mean().name, a.dot(a).name]);
  assert.equal(names.size, 8);
});
