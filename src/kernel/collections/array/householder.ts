// QR kernels for tall-skinny QR: Householder reflections on a column-major copy of the block,
// so every inner loop runs over contiguous memory. Hand-written because the npm options measured
// far slower (ml-matrix's QrDecomposition walks row arrays column by column; see bench/array.ts)
// and because stacked triangular factors (TSQR's second stage) have a known sparsity that a
// general QR cannot exploit: here each reflection touches only the rows that can be non-zero.

import { type Chunk, allocate } from "./chunk";

/**
 * Rows touched by reflection k, as [start, end) pairs; the first pair starts at row k. For a dense
 * block it is rows k … m; for B stacked n×n upper-triangular blocks, row k of the first block and
 * rows 0 … k of every other one (the rest are zero and stay zero).
 */
type Support = (k: number) => readonly number[];

/** The reduced QR factorisation [q (m×n), r (n×n)] of an m×n block with m ≥ n. */
export function qr(block: Chunk): Chunk[] {
  const [m, n] = block.shape;
  if (block.shape.length !== 2 || m < n) throw new Error(`qr: needs a 2-d block with rows ≥ columns, got shape (${block.shape})`);
  return factor(block.data, m, n, (k) => [k, m]);
}

/** The QR factorisation of upper-triangular n×n blocks stacked on top of one another. */
export function qrStacked(blocks: readonly Chunk[]): Chunk[] {
  const n = blocks[0].shape[1];
  const count = blocks.length;
  const stacked = allocate(count * n * n);
  blocks.forEach((block, b) => stacked.set(block.data, b * n * n));
  return factor(stacked, count * n, n, (k) => {
    const ranges = [k, k + 1];
    for (let b = 1; b < count; b++) ranges.push(b * n, b * n + k + 1);
    return ranges;
  });
}

function factor(rowMajor: Float64Array, m: number, n: number, support: Support): Chunk[] {
  const work = toColumnMajor(rowMajor, m, n);
  const taus = new Float64Array(n);
  const diagonal = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const rows = support(k);
    const [tau, beta] = makeReflector(work, k * m, k, rows);
    taus[k] = tau;
    diagonal[k] = beta;
    // v's leading entry is 1 by construction; storing it lets the loops treat all rows alike.
    work[k * m + k] = 1;
    if (tau !== 0) reflect(work, work, k * m, m, tau, rows, k + 1, n);
  }
  const r = allocate(n * n);
  for (let i = 0; i < n; i++) {
    r[i * n + i] = diagonal[i];
    for (let j = i + 1; j < n; j++) r[i * n + j] = work[j * m + i];
  }
  // Q = H0 H1 … H(n-1) applied to the first n columns of the identity, last reflection first:
  // reflection k leaves columns < k alone, so only columns k … n are touched.
  const q = new Float64Array(m * n);
  for (let j = 0; j < n; j++) q[j * m + j] = 1;
  for (let k = n - 1; k >= 0; k--) {
    if (taus[k] !== 0) reflect(q, work, k * m, m, taus[k], support(k), k, n);
  }
  return [
    { shape: [m, n], data: toRowMajor(q, m, n) },
    { shape: [n, n], data: r },
  ];
}

/**
 * Turns column k (at `offset`) into a Householder vector in place: v with v[k] = 1 below the
 * scaling, and returns [tau, beta] where H = I − tau v vᵀ maps the column to beta·e_k.
 */
function makeReflector(work: Float64Array, offset: number, k: number, rows: readonly number[]): [number, number] {
  const alpha = work[offset + k];
  let tail = 0;
  for (let at = 0; at < rows.length; at += 2) {
    for (let i = at === 0 ? rows[0] + 1 : rows[at]; i < rows[at + 1]; i++) tail += work[offset + i] * work[offset + i];
  }
  if (tail === 0) return [0, alpha];
  const norm = Math.sqrt(alpha * alpha + tail);
  const beta = alpha >= 0 ? -norm : norm;
  const scale = 1 / (alpha - beta);
  for (let at = 0; at < rows.length; at += 2) {
    for (let i = at === 0 ? rows[0] + 1 : rows[at]; i < rows[at + 1]; i++) work[offset + i] *= scale;
  }
  return [(beta - alpha) / beta, beta];
}

/**
 * Applies H = I − tau v vᵀ (v is column `vOffset` of `vectors`) to columns from … to of `target`
 * (column-major, m rows), over the reflection's rows only. Four columns share each pass over v.
 */
function reflect(
  target: Float64Array,
  vectors: Float64Array,
  vOffset: number,
  m: number,
  tau: number,
  rows: readonly number[],
  from: number,
  to: number,
): void {
  let j = from;
  for (; j + 4 <= to; j += 4) {
    const o0 = j * m, o1 = o0 + m, o2 = o1 + m, o3 = o2 + m;
    let w0 = 0, w1 = 0, w2 = 0, w3 = 0;
    for (let at = 0; at < rows.length; at += 2) {
      for (let i = rows[at]; i < rows[at + 1]; i++) {
        const v = vectors[vOffset + i];
        w0 += v * target[o0 + i];
        w1 += v * target[o1 + i];
        w2 += v * target[o2 + i];
        w3 += v * target[o3 + i];
      }
    }
    w0 *= tau; w1 *= tau; w2 *= tau; w3 *= tau;
    for (let at = 0; at < rows.length; at += 2) {
      for (let i = rows[at]; i < rows[at + 1]; i++) {
        const v = vectors[vOffset + i];
        target[o0 + i] -= w0 * v;
        target[o1 + i] -= w1 * v;
        target[o2 + i] -= w2 * v;
        target[o3 + i] -= w3 * v;
      }
    }
  }
  for (; j < to; j++) {
    const o = j * m;
    let w = 0;
    for (let at = 0; at < rows.length; at += 2) {
      for (let i = rows[at]; i < rows[at + 1]; i++) w += vectors[vOffset + i] * target[o + i];
    }
    w *= tau;
    for (let at = 0; at < rows.length; at += 2) {
      for (let i = rows[at]; i < rows[at + 1]; i++) target[o + i] -= w * vectors[vOffset + i];
    }
  }
}

function toColumnMajor(data: Float64Array, m: number, n: number): Float64Array {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) out[j * m + i] = data[i * n + j];
  return out;
}

function toRowMajor(data: Float64Array, m: number, n: number): Float64Array {
  const out = allocate(m * n);
  for (let j = 0; j < n; j++) for (let i = 0; i < m; i++) out[i * n + j] = data[j * m + i];
  return out;
}
