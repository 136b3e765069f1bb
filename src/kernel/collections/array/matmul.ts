// The block product kernel. No npm library beat a hand-written loop here (see bench/array.ts):
// ml-matrix's mmul and @stdlib/blas's dgemm are plain triple loops, and no maintained WASM BLAS
// installs from npm. This one packs a 4-row strip of A and a 4-column panel of B so the inner
// loop keeps a 4×4 tile of C in local variables: 8 loads per 32 multiply-adds.

import { type Chunk, allocate } from "./chunk";

/** Panel depth: a 4-wide panel of B (8 KB at 256 deep) stays in L1 while a strip of A streams past. */
const DEPTH = 256;

/** The matrix product of two blocks; a 1-d block is a row (on the left) or a column (on the right). */
export function matmul(left: Chunk, right: Chunk): Chunk {
  const leftIsVector = left.shape.length === 1;
  const rightIsVector = right.shape.length === 1;
  const m = leftIsVector ? 1 : left.shape[0];
  const k = leftIsVector ? left.shape[0] : left.shape[1];
  const n = rightIsVector ? 1 : right.shape[1];
  if (right.shape[0] !== k) {
    throw new Error(`matmul: inner dimensions differ: (${left.shape}) · (${right.shape})`);
  }
  const out = allocate(m * n);
  multiplyInto(left.data, right.data, out, m, k, n);
  const shape = leftIsVector && rightIsVector ? [] : leftIsVector ? [n] : rightIsVector ? [m] : [m, n];
  return { shape, data: out };
}

/** c += a · b for row-major a (m×k), b (k×n), c (m×n). */
export function multiplyInto(a: Float64Array, b: Float64Array, c: Float64Array, m: number, k: number, n: number): void {
  const panels = Math.ceil(n / 4);
  const packedB = new Float64Array(panels * 4 * Math.min(DEPTH, k));
  const packedA = new Float64Array(4 * Math.min(DEPTH, k));
  for (let p0 = 0; p0 < k; p0 += DEPTH) {
    const depth = Math.min(DEPTH, k - p0);
    packColumns(b, packedB, p0, depth, n);
    for (let i0 = 0; i0 < m; i0 += 4) {
      const rows = Math.min(4, m - i0);
      packRows(a, packedA, i0, rows, p0, depth, k);
      for (let panel = 0; panel < panels; panel++) {
        tile(packedA, packedB, panel * depth * 4, depth, c, i0, rows, panel * 4, n);
      }
    }
  }
}

/** Copies rows p0 … p0+depth of b into 4-column panels, each laid out [p][0..3], zero-padded. */
function packColumns(b: Float64Array, packed: Float64Array, p0: number, depth: number, n: number): void {
  const panels = Math.ceil(n / 4);
  for (let panel = 0; panel < panels; panel++) {
    const j0 = panel * 4;
    const base = panel * depth * 4;
    const width = Math.min(4, n - j0);
    for (let p = 0; p < depth; p++) {
      const from = (p0 + p) * n + j0;
      const to = base + p * 4;
      for (let q = 0; q < 4; q++) packed[to + q] = q < width ? b[from + q] : 0;
    }
  }
}

/** Copies a 4-row strip of a (columns p0 … p0+depth) laid out [p][0..3], zero-padded. */
function packRows(a: Float64Array, packed: Float64Array, i0: number, rows: number, p0: number, depth: number, k: number): void {
  for (let p = 0; p < depth; p++) {
    for (let r = 0; r < 4; r++) packed[p * 4 + r] = r < rows ? a[(i0 + r) * k + p0 + p] : 0;
  }
}

function tile(
  pa: Float64Array,
  pb: Float64Array,
  base: number,
  depth: number,
  c: Float64Array,
  i0: number,
  rows: number,
  j0: number,
  n: number,
): void {
  let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
  let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
  for (let p = 0; p < depth; p++) {
    const x = p * 4;
    const y = base + x;
    const a0 = pa[x], a1 = pa[x + 1], a2 = pa[x + 2], a3 = pa[x + 3];
    const b0 = pb[y], b1 = pb[y + 1], b2 = pb[y + 2], b3 = pb[y + 3];
    c00 += a0 * b0; c01 += a0 * b1; c02 += a0 * b2; c03 += a0 * b3;
    c10 += a1 * b0; c11 += a1 * b1; c12 += a1 * b2; c13 += a1 * b3;
    c20 += a2 * b0; c21 += a2 * b1; c22 += a2 * b2; c23 += a2 * b3;
    c30 += a3 * b0; c31 += a3 * b1; c32 += a3 * b2; c33 += a3 * b3;
  }
  if (rows === 4 && j0 + 4 <= n) {
    let o = i0 * n + j0;
    c[o] += c00; c[o + 1] += c01; c[o + 2] += c02; c[o + 3] += c03;
    o += n;
    c[o] += c10; c[o + 1] += c11; c[o + 2] += c12; c[o + 3] += c13;
    o += n;
    c[o] += c20; c[o + 1] += c21; c[o + 2] += c22; c[o + 3] += c23;
    o += n;
    c[o] += c30; c[o + 1] += c31; c[o + 2] += c32; c[o + 3] += c33;
    return;
  }
  const sums = [c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33];
  const width = Math.min(4, n - j0);
  for (let r = 0; r < rows; r++) {
    for (let q = 0; q < width; q++) c[(i0 + r) * n + j0 + q] += sums[r * 4 + q];
  }
}
