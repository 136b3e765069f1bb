// QR kernels for tall-skinny QR: Householder reflections on a column-major copy of the block,
// so every inner loop runs over contiguous memory; the updates, nearly all the work, run in
// WebAssembly SIMD (asm/householder.ts). Hand-written because the npm options measured
// far slower (ml-matrix's QrDecomposition walks row arrays column by column; see bench/array.ts)
// and because stacked triangular factors (TSQR's second stage) have a known sparsity that a
// general QR cannot exploit: here each reflection touches only the rows that can be non-zero.

import { type Chunk, allocate } from "./chunk";
import { type WasmKernels, scratch } from "./wasm";

/**
 * Rows touched by reflection k, as [start, end) pairs; the first pair starts at row k. For a dense
 * block it is rows k … m; for B stacked n×n upper-triangular blocks, row k of the first block and
 * rows 0 … k of every other one (the rest are zero and stay zero).
 */
type Support = (k: number) => readonly number[];

/** The reduced QR factorisation [q (m×n), r (n×n)] of an m×n block with m ≥ n. */
export function qr(block: Chunk): Chunk[] {
  const [reflectors, taus, r] = qrReflectors(block);
  return [householderQ(reflectors, taus), r];
}

/**
 * TSQR's first stage without forming q: [reflectors, taus, r]. Row k of `reflectors` (n×m) holds
 * reflection k's vector in columns k … m (entry k is 1); `householderQ` turns them into q, and
 * `applyQ` multiplies by q without forming it.
 */
export function qrReflectors(block: Chunk): Chunk[] {
  const [m, n] = block.shape;
  if (block.shape.length !== 2 || m < n) throw new Error(`qr: needs a 2-d block with rows ≥ columns, got shape (${block.shape})`);
  const { reflectors, taus, r } = factor(block.data, m, n, dense(m));
  return [
    { shape: [n, m], data: reflectors },
    { shape: [n], data: taus },
    { shape: [n, n], data: r },
  ];
}

/** q (m×n) from `qrReflectors`' reflections. */
export function householderQ(reflectors: Chunk, taus: Chunk): Chunk {
  const [n, m] = reflectors.shape;
  return { shape: [m, n], data: formQ(reflectors.data, taus.data, m, dense(m), 0, n) };
}

/**
 * q · small for q from `qrReflectors` (m×n) and a small n×n block, without forming q: the
 * reflections applied, last first, to `small` padded with zero rows. TSQR's third stage, where
 * it costs less than forming q and multiplying.
 */
export function applyQ(reflectors: Chunk, taus: Chunk, small: Chunk): Chunk {
  const [n, m] = reflectors.shape;
  const { kernels, offsets, heap } = scratch([m * n, m * n, 2]);
  const [atReflectors, atTarget, atRows] = offsets;
  heap.set(reflectors.data, atReflectors / 8);
  const target = heap.subarray(atTarget / 8, atTarget / 8 + m * n);
  target.fill(0);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) target[j * m + i] = small.data[i * n + j];
  reflectBackwards({ kernels, heap, atReflectors, atTarget, atRows }, taus.data, m, n, dense(m), () => 0, n);
  return { shape: [m, n], data: toRowMajor(target, m, n) };
}

/**
 * TSQR's second stage without forming q: [reflectors, taus, r] (as `qrReflectors` gives) for
 * upper-triangular n×n blocks stacked on top of one another. `stackedQColumns` forms q's columns
 * from them a range at a time, so several tasks can share that half of the work.
 */
export function qrStackedReflectors(blocks: readonly Chunk[]): Chunk[] {
  const n = blocks[0].shape[1];
  const m = blocks.length * n;
  const stacked = allocate(m * n);
  blocks.forEach((block, b) => stacked.set(block.data, b * n * n));
  const { reflectors, taus, r } = factor(stacked, m, n, stackedSupport(blocks.length, n));
  return [
    { shape: [n, m], data: reflectors },
    { shape: [n], data: taus },
    { shape: [n, n], data: r },
  ];
}

/** Columns from … to of q (count·n × n) from `qrStackedReflectors`' reflections, as an m×(to − from) block. */
export function stackedQColumns(reflectors: Chunk, taus: Chunk, from: number, to: number): Chunk {
  const [n, m] = reflectors.shape;
  return { shape: [m, to - from], data: formQ(reflectors.data, taus.data, m, stackedSupport(m / n, n), from, to) };
}

/** Rows touched by reflection k in `count` stacked upper-triangular n×n blocks. */
function stackedSupport(count: number, n: number): Support {
  return (k) => {
    const ranges = [k, k + 1];
    for (let b = 1; b < count; b++) ranges.push(b * n, b * n + k + 1);
    return ranges;
  };
}

function dense(m: number): Support {
  return (k) => [k, m];
}

/** Householder reduction of a row-major m×n matrix: the reflections (column-major), their taus, and R. */
function factor(rowMajor: Float64Array, m: number, n: number, support: Support): { reflectors: Float64Array; taus: Float64Array; r: Float64Array } {
  const rangeCount = support(0).length / 2;
  // The matrix and the current reflection's row ranges (i32 pairs: one double's room each).
  const { kernels, offsets, heap } = scratch([m * n, rangeCount]);
  const [atWork, atRows] = offsets;
  const work = heap.subarray(atWork / 8, atWork / 8 + m * n);
  const rowRanges = new Int32Array(heap.buffer, atRows, 2 * rangeCount);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) work[j * m + i] = rowMajor[i * n + j];
  const taus = allocate(n);
  const diagonal = new Float64Array(n);
  const reflector = (k: number): void => {
    const [tau, beta] = makeReflector(work, k * m, k, support(k));
    taus[k] = tau;
    diagonal[k] = beta;
    // v's leading entry is 1 by construction; storing it lets the kernel treat all rows alike.
    work[k * m + k] = 1;
  };
  // Reflections two at a time: reflection k reaches column k + 1 first, so that reflection k + 1
  // can be made, and then both update the rest in one pass.
  let k = 0;
  for (; k + 1 < n; k += 2) {
    reflector(k);
    rowRanges.set(support(k));
    if (taus[k] !== 0) kernels.reflect(atWork, atWork + k * m * 8, m, taus[k], atRows, rangeCount, k + 1, k + 2);
    reflector(k + 1);
    // Reflection k + 1's entry k is R's (k, k + 1), not part of its vector: set aside meanwhile.
    const rEntry = work[(k + 1) * m + k];
    work[(k + 1) * m + k] = 0;
    const dot = pairRows(heap, atWork / 8, k, m, support, rowRanges);
    kernels.reflectPair(atWork, atWork + (k + 1) * m * 8, atWork + k * m * 8, m, taus[k + 1], taus[k], dot, atRows, rangeCount, k + 2, n);
    work[(k + 1) * m + k] = rEntry;
  }
  if (k < n) reflector(k);
  const r = allocate(n * n);
  for (let i = 0; i < n; i++) {
    r[i * n + i] = diagonal[i];
    for (let j = i + 1; j < n; j++) r[i * n + j] = work[j * m + i];
  }
  const reflectors = allocate(m * n);
  reflectors.set(work);
  return { reflectors, taus, r };
}

/**
 * Columns from … to of Q = H0 H1 … H(n-1) (the first n columns of the identity, reflected last
 * reflection first): reflection k leaves columns < k alone, so only columns max(k, from) … to are
 * touched and reflections from `to` on not at all. Returns them row-major, m×(to − from).
 */
function formQ(reflectors: Float64Array, taus: Float64Array, m: number, support: Support, from: number, to: number): Float64Array {
  const width = to - from;
  const rangeCount = support(0).length / 2;
  // Only reflections 0 … to − 1 reach these columns.
  const { kernels, offsets, heap } = scratch([m * to, m * width, rangeCount]);
  const [atReflectors, atQ, atRows] = offsets;
  heap.set(reflectors.subarray(0, m * to), atReflectors / 8);
  const q = heap.subarray(atQ / 8, atQ / 8 + m * width);
  q.fill(0);
  for (let j = from; j < to; j++) q[(j - from) * m + j] = 1;
  reflectBackwards({ kernels, heap, atReflectors, atTarget: atQ, atRows }, taus, m, to, support, (k) => Math.max(k, from) - from, width);
  return toRowMajor(q, m, width);
}

interface Workspace {
  kernels: WasmKernels;
  heap: Float64Array;
  /** Byte offsets: the reflections (column-major, m per reflection), the target, room for the row ranges. */
  atReflectors: number;
  atTarget: number;
  atRows: number;
}

/**
 * Applies reflections count − 1 … 0, last first, to the target's columns firstColumn(k) … width,
 * two at a time (one pass over the target per pair). Pairing needs each vector to be zero on its
 * partner's rows; the one non-zero there is reflection k's entry k − 1, which holds R's entry in
 * the factor's layout and is zeroed here in the heap's copy.
 */
function reflectBackwards(space: Workspace, taus: Float64Array, m: number, count: number, support: Support, firstColumn: (k: number) => number, width: number): void {
  const { kernels, heap, atReflectors, atTarget, atRows } = space;
  const base = atReflectors / 8;
  for (let k = 1; k < count; k++) heap[base + k * m + k - 1] = 0;
  const rangeCount = support(0).length / 2;
  const rowRanges = new Int32Array(heap.buffer, atRows, 2 * rangeCount);
  let k = count - 1;
  for (; k >= 1; k -= 2) {
    const dot = pairRows(heap, base, k - 1, m, support, rowRanges);
    const from = firstColumn(k - 1);
    kernels.reflectPair(atTarget, atReflectors + (k - 1) * m * 8, atReflectors + k * m * 8, m, taus[k - 1], taus[k], dot, atRows, rangeCount, from, width);
  }
  if (k === 0) {
    rowRanges.set(support(0));
    if (taus[0] !== 0) kernels.reflect(atTarget, atReflectors, m, taus[0], atRows, rangeCount, firstColumn(0), width);
  }
}

/**
 * Writes the union of reflections k's and k + 1's rows into `rowRanges`, range by range (their
 * ranges overlap or touch), and returns the two vectors' dot product over it.
 */
function pairRows(heap: Float64Array, base: number, k: number, m: number, support: Support, rowRanges: Int32Array): number {
  const earlier = support(k);
  const later = support(k + 1);
  let dot = 0;
  for (let r = 0; r < earlier.length; r += 2) {
    const start = Math.min(earlier[r], later[r]);
    const end = Math.max(earlier[r + 1], later[r + 1]);
    rowRanges[r] = start;
    rowRanges[r + 1] = end;
    for (let i = start; i < end; i++) dot += heap[base + k * m + i] * heap[base + (k + 1) * m + i];
  }
  return dot;
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

function toRowMajor(data: Float64Array, m: number, n: number): Float64Array {
  const out = allocate(m * n);
  for (let j = 0; j < n; j++) for (let i = 0; i < m; i++) out[i * n + j] = data[j * m + i];
  return out;
}
