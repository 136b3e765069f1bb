// The blocked Householder kernels (householder.ts) against a plain reflection-at-a-time QR:
// the blocked ones regroup the same reflections into matrix products, so R, Q and Q·x must agree
// to rounding, on sizes around the panel width and on stacked triangles (TSQR's second stage).

import assert from "node:assert/strict";
import { test } from "node:test";
import { applyQ, householderQ, qrReflectors, qrStackedReflectors, stackedQColumns } from "../src/kernel/collections/array/householder";
import { multiplyInHeap, packingRoom } from "../src/kernel/collections/array/matmul";
import { scratch } from "../src/kernel/collections/array/wasm";

/** Householder QR one reflection at a time, as LAPACK's dgeqr2 (same signs): q (m×n) and r (n×n), row-major. */
function referenceQr(m: number, n: number, a: Float64Array): { q: Float64Array; r: Float64Array } {
  const w = Float64Array.from(a);
  const vs: Float64Array[] = [];
  const taus: number[] = [];
  const reflect = (target: Float64Array, cols: number, k: number, from: number): void => {
    for (let j = from; j < cols; j++) {
      let s = 0;
      for (let i = k; i < m; i++) s += vs[k][i] * target[i * cols + j];
      for (let i = k; i < m; i++) target[i * cols + j] -= taus[k] * s * vs[k][i];
    }
  };
  for (let k = 0; k < n; k++) {
    const alpha = w[k * n + k];
    let tail = 0;
    for (let i = k + 1; i < m; i++) tail += w[i * n + k] ** 2;
    const v = new Float64Array(m);
    vs.push(v);
    if (tail === 0) {
      taus.push(0);
      continue;
    }
    const norm = Math.sqrt(alpha * alpha + tail);
    const beta = alpha >= 0 ? -norm : norm;
    v[k] = 1;
    for (let i = k + 1; i < m; i++) v[i] = w[i * n + k] / (alpha - beta);
    taus.push((beta - alpha) / beta);
    reflect(w, n, k, k);
  }
  const r = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) r[i * n + j] = w[i * n + j];
  const q = new Float64Array(m * n);
  for (let j = 0; j < n; j++) q[j * n + j] = 1;
  for (let k = n - 1; k >= 0; k--) reflect(q, n, k, 0);
  return { q, r };
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: lengths differ`);
  let scale = 0;
  for (let i = 0; i < expected.length; i++) scale = Math.max(scale, Math.abs(expected[i]));
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i] - expected[i]) <= tolerance * scale)) assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

function block(m: number, n: number, seed: number): Float64Array {
  return Float64Array.from({ length: m * n }, (_, i) => Math.sin(seed * 1.3 + i * 0.71) + Math.cos(i * i * 0.013));
}

/** `count` upper-triangular n×n blocks with a dominant diagonal, as stage 1's R factors are. */
function triangles(count: number, n: number): Float64Array[] {
  return Array.from({ length: count }, (_, b) => {
    const data = new Float64Array(n * n);
    for (let i = 0; i < n; i++) for (let j = i; j < n; j++) data[i * n + j] = Math.sin(b * 31 + i * 7 + j) + (i === j ? 2 : 0);
    return data;
  });
}

// Panel width 32: one panel, one column past it, several with a remainder, exact multiples, m = n.
const shapes = [[1, 1], [7, 3], [40, 40], [100, 33], [70, 65], [130, 96], [97, 97], [300, 70]];

test("blocked QR gives the R and Q of a reflection-at-a-time QR, to rounding", () => {
  for (const [m, n] of shapes) {
    const a = block(m, n, m + n);
    const [reflectors, taus, r] = qrReflectors({ shape: [m, n], data: a });
    const q = householderQ(reflectors, taus);
    const expected = referenceQr(m, n, a);
    assertClose(r.data, expected.r, 1e-12, `r ${m}×${n}`);
    assertClose(q.data, expected.q, 1e-12, `q ${m}×${n}`);
  }
});

test("blocked applyQ gives q · x, to rounding", () => {
  for (const [m, n] of shapes) {
    const a = block(m, n, 2 * m);
    const small = block(n, n, 5);
    const [reflectors, taus] = qrReflectors({ shape: [m, n], data: a });
    const { q } = referenceQr(m, n, a);
    const expected = new Float64Array(m * n);
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) for (let p = 0; p < n; p++) expected[i * n + j] += q[i * n + p] * small[p * n + j];
    assertClose(applyQ(reflectors, taus, { shape: [n, n], data: small }).data, expected, 1e-12, `applyQ ${m}×${n}`);
  }
});

test("blocked QR of stacked triangles gives a dense QR's R and Q, to rounding", () => {
  for (const [count, n] of [[2, 1], [3, 5], [2, 32], [3, 37], [4, 64], [3, 70]]) {
    const blocks = triangles(count, n);
    const stacked = new Float64Array(count * n * n);
    blocks.forEach((data, b) => stacked.set(data, b * n * n));
    const [reflectors, taus, r] = qrStackedReflectors(blocks.map((data) => ({ shape: [n, n], data })));
    const expected = referenceQr(count * n, n, stacked);
    assertClose(r.data, expected.r, 1e-12, `r ${count}×${n}`);
    assertClose(stackedQColumns(reflectors, taus, 0, n).data, expected.q, 1e-12, `q ${count}×${n}`);
  }
});

test("stacked q's column ranges across panel boundaries are the whole q's columns, to the bit", () => {
  const [count, n] = [3, 70];
  const [reflectors, taus] = qrStackedReflectors(triangles(count, n).map((data) => ({ shape: [n, n], data })));
  const whole = stackedQColumns(reflectors, taus, 0, n).data;
  const bounds = [0, 20, 33, 64, 70];
  for (let p = 0; p + 1 < bounds.length; p++) {
    const [from, to] = [bounds[p], bounds[p + 1]];
    const piece = stackedQColumns(reflectors, taus, from, to).data;
    for (let i = 0; i < count * n; i++) {
      for (let j = from; j < to; j++) assert.equal(piece[i * (to - from) + j - from], whole[i * n + j], `q[${i}, ${j}] from columns ${from} … ${to}`);
    }
  }
});

test("the strided product computes c += scale · a · b for transposed and column-major operands", () => {
  const [m, k, n] = [9, 300, 6];
  const a = block(k, m, 1); // column-major m×k: a(i, p) = a[p·m + i]
  const b = block(n, k, 2); // b(p, j) = b[j·k + p]
  const ld = n + 3;
  const { kernels, offsets, heap } = scratch([m * k, k * n, m * ld, ...packingRoom(k, n)]);
  const [atA, atB, atC, atStrip, atPanels] = offsets;
  heap.set(a, atA / 8);
  heap.set(b, atB / 8);
  heap.fill(1, atC / 8, atC / 8 + m * ld);
  multiplyInHeap(kernels, { atStrip, atPanels }, { at: atC, ld }, { at: atA, rowStride: 1, colStride: m }, { at: atB, rowStride: 1, colStride: k }, m, k, n, -2);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < ld; j++) {
      let expected = 1;
      if (j < n) for (let p = 0; p < k; p++) expected -= 2 * a[p * m + i] * b[j * k + p];
      assert.ok(Math.abs(heap[atC / 8 + i * ld + j] - expected) <= 1e-12 * 300, `c[${i}, ${j}]`);
    }
  }
});
