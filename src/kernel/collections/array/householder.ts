// QR kernels for tall-skinny QR: Householder reflections on a column-major copy of the block,
// so every inner loop runs over contiguous memory. Blocked: a panel of PANEL columns is factored
// with the reflection-at-a-time kernels (asm/householder.ts), then its reflections, gathered as
// I − V·T·Vᵀ (compact WY), update the rest of the matrix, or the Q being formed, with matrix
// products (matmul.ts's kernel), which run two to three times faster per flop than one reflection
// at a time can (they reuse each loaded entry many times): nearly all the work is in those
// products. Hand-written because the npm options measured far slower (ml-matrix's
// QrDecomposition walks row arrays column by column; see bench/array.ts) and because stacked
// triangular factors (TSQR's second stage) have a known sparsity that a general QR cannot
// exploit: here each reflection touches only the rows that can be non-zero.

import { type Chunk, allocate } from "./chunk";
import { type HeapMatrix, type PackingRoom, multiplyInHeap, packingRoom } from "./matmul";
import { type WasmKernels, scratch } from "./wasm";

/**
 * Reflections per panel. Wider panels move more of the work into matrix products, and make
 * those products deeper, but make the panel's own reflection-at-a-time work, and T, larger.
 * Measured on the seeds' QR example's kernels (1000×1000 blocks, 10 stacked triangles): 32 and
 * 48 were best, 24 about 5 % and 16 and 64 about 10 % slower.
 */
const PANEL = 32;

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
  const { space, at } = workspace([m * n, m * n], m, n, 1);
  const [atReflectors, atTarget] = at;
  space.heap.set(reflectors.data, atReflectors / 8);
  const target = space.heap.subarray(atTarget / 8, atTarget / 8 + m * n);
  target.set(small.data);
  target.fill(0, n * n);
  reflectBackwards(space, atReflectors, taus.data, n, dense(m), atTarget, () => 0, n);
  return { shape: [m, n], data: copyOut(target) };
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
  const { space, at } = workspace([m * n], m, n, support(0).length / 2);
  const { kernels, heap, atRows, rowRanges } = space;
  const [atWork] = at;
  const work = heap.subarray(atWork / 8, atWork / 8 + m * n);
  transposeInto(rowMajor, work, m, n, m);
  const taus = allocate(n);
  const diagonal = new Float64Array(n);
  const reflector = (k: number): void => {
    const [tau, beta] = makeReflector(work, k * m, k, support(k));
    taus[k] = tau;
    diagonal[k] = beta;
    // v's leading entry is 1 by construction; storing it lets the kernel treat all rows alike.
    work[k * m + k] = 1;
  };
  const rangeCount = rowRanges.length / 2;
  for (let k0 = 0; k0 < n; k0 += PANEL) {
    const k1 = Math.min(n, k0 + PANEL);
    // Within the panel, reflections two at a time: reflection k reaches column k + 1 first, so
    // that reflection k + 1 can be made, and then both update the panel's other columns in one pass.
    let k = k0;
    for (; k + 1 < k1; k += 2) {
      reflector(k);
      rowRanges.set(support(k));
      if (taus[k] !== 0) kernels.reflect(atWork, atWork + k * m * 8, m, taus[k], atRows, rangeCount, k + 1, k + 2);
      reflector(k + 1);
      // Reflection k + 1's entry k is R's (k, k + 1), not part of its vector: set aside meanwhile.
      const rEntry = work[(k + 1) * m + k];
      work[(k + 1) * m + k] = 0;
      const dot = pairRows(heap, atWork / 8, k, m, support, rowRanges);
      kernels.reflectPair(atWork, atWork + (k + 1) * m * 8, atWork + k * m * 8, m, taus[k + 1], taus[k], dot, atRows, rangeCount, k + 2, k1);
      work[(k + 1) * m + k] = rEntry;
    }
    if (k < k1) reflector(k);
    // The panel's reflections, last first, on the columns right of it: (I − V·T·Vᵀ)ᵀ.
    if (k1 < n) applyPanel(space, makePanel(space, atWork, taus, k0, k1, support), { at: atWork, rowStride: 1, colStride: m }, k1, n, true);
  }
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
  // Only reflections 0 … to − 1 reach these columns.
  const { space, at } = workspace([m * to, m * width], m, width, support(0).length / 2);
  const [atReflectors, atQ] = at;
  space.heap.set(reflectors.subarray(0, m * to), atReflectors / 8);
  const q = space.heap.subarray(atQ / 8, atQ / 8 + m * width);
  q.fill(0);
  for (let j = from; j < to; j++) q[j * width + j - from] = 1;
  reflectBackwards(space, atReflectors, taus, to, support, atQ, (k) => Math.max(k, from) - from, width);
  return copyOut(q);
}

/**
 * Applies reflections count − 1 … 0, last first, a panel at a time, to the target's (row-major,
 * m×width) columns firstColumn(k0) … width, k0 being the panel's first reflection. The panels are
 * those `factor` made (multiples of PANEL), whatever `count` is, so the same column of Q comes out
 * the same, to the bit, whichever column range it is formed in.
 */
function reflectBackwards(space: Workspace, atReflectors: number, taus: Float64Array, count: number, support: Support, atTarget: number, firstColumn: (k: number) => number, width: number): void {
  for (let k0 = Math.floor((count - 1) / PANEL) * PANEL; k0 >= 0; k0 -= PANEL) {
    const panel = makePanel(space, atReflectors, taus, k0, Math.min(count, k0 + PANEL), support);
    applyPanel(space, panel, { at: atTarget, rowStride: width, colStride: 1 }, firstColumn(k0), width, false);
  }
}

/** The WebAssembly memory for one factorisation or application of reflections, and where things are in it. */
interface Workspace {
  kernels: WasmKernels;
  heap: Float64Array;
  /** Rows of the reflections (column-major, so also the distance between their columns) and of the target. */
  m: number;
  /** Byte offset of the current pair's row ranges (i32 pairs) for the reflection-at-a-time kernels, and a view of them. */
  atRows: number;
  rowRanges: Int32Array;
  /** Byte offsets of a panel's V (its rows × PANEL, column-major), VᵀV and T (PANEL², row-major), Vᵀ·C and T·Vᵀ·C (target columns × PANEL). */
  atV: number;
  atGram: number;
  atT: number;
  atW: number;
  atW2: number;
  room: PackingRoom;
}

/**
 * Lays out the caller's `regions` (sizes in doubles; their byte offsets come back in `at`), then
 * room to apply panels of reflections over up to m rows to up to `columns` target columns.
 */
function workspace(regions: readonly number[], m: number, columns: number, rangeCount: number): { space: Workspace; at: number[] } {
  // The products made: Vᵀ·C and VᵀV (inner dimension up to m, PANEL wide), (Vᵀ·C)ᵀ·T (PANEL
  // deep and wide), and C −= V·(T·Vᵀ·C) (PANEL deep, up to m wide, computed transposed).
  const [strip, panelsOfV] = packingRoom(m, PANEL);
  const panels = Math.max(panelsOfV, packingRoom(PANEL, m)[1]);
  const sizes = [...regions, rangeCount, m * PANEL, PANEL * PANEL, PANEL * PANEL, columns * PANEL, columns * PANEL, strip, panels];
  const { kernels, offsets, heap } = scratch(sizes);
  const [atRows, atV, atGram, atT, atW, atW2, atStrip, atPanels] = offsets.slice(regions.length);
  const space = { kernels, heap, m, atRows, rowRanges: new Int32Array(heap.buffer, atRows, 2 * rangeCount), atV, atGram, atT, atW, atW2, room: { atStrip, atPanels } };
  return { space, at: offsets.slice(0, regions.length) };
}

/** Reflections k0 … k1 − 1 as H(k0) ⋯ H(k1 − 1) = I − V·T·Vᵀ; V and T are in the workspace. */
interface Panel {
  /** The rows any of them touches, as [start, end) pairs; V holds just these rows, in order. */
  ranges: number[];
  rows: number;
  width: number;
}

/**
 * Gathers reflections k0 … k1 − 1 (column-major at `atReflectors`, m per reflection, R's entries
 * above their leading 1s) into V, zero above the 1s, and builds T (LAPACK's dlarft, forward):
 * T(i, i) = tau_i and T(0 … i, i) = −tau_i · T(0 … i, 0 … i) · (VᵀV)(0 … i, i).
 */
function makePanel(space: Workspace, atReflectors: number, taus: Float64Array, k0: number, k1: number, support: Support): Panel {
  const { kernels, heap, m, atV, atGram, atT } = space;
  const width = k1 - k0;
  // The union of their rows, range by range: ranges of the same index overlap (see Support).
  const ranges = [...support(k0)];
  for (let k = k0 + 1; k < k1; k++) {
    const own = support(k);
    for (let r = 0; r < ranges.length; r += 2) {
      ranges[r] = Math.min(ranges[r], own[r]);
      ranges[r + 1] = Math.max(ranges[r + 1], own[r + 1]);
    }
  }
  let rows = 0;
  for (let r = 0; r < ranges.length; r += 2) rows += ranges[r + 1] - ranges[r];
  const v = heap.subarray(atV / 8, atV / 8 + rows * width);
  const base = atReflectors / 8;
  for (let j = 0; j < width; j++) {
    const k = k0 + j;
    let at = j * rows;
    for (let r = 0; r < ranges.length; r += 2) {
      v.set(heap.subarray(base + k * m + ranges[r], base + k * m + ranges[r + 1]), at);
      at += ranges[r + 1] - ranges[r];
    }
    // The first range starts at row k0: rows k0 … k − 1 hold R, row k the leading 1.
    v.fill(0, j * rows, j * rows + j);
    v[j * rows + j] = 1;
  }
  const gram = heap.subarray(atGram / 8, atGram / 8 + width * width);
  gram.fill(0);
  multiplyInHeap(kernels, space.room, { at: atGram, ld: width }, { at: atV, rowStride: rows, colStride: 1 }, { at: atV, rowStride: 1, colStride: rows }, width, rows, width);
  const t = heap.subarray(atT / 8, atT / 8 + width * width);
  t.fill(0);
  for (let i = 0; i < width; i++) {
    const tau = taus[k0 + i];
    t[i * width + i] = tau;
    for (let l = 0; l < i; l++) {
      let sum = 0;
      for (let p = l; p < i; p++) sum += t[l * width + p] * gram[p * width + i];
      t[l * width + i] = -tau * sum;
    }
  }
  return { ranges, rows, width };
}

/**
 * Target columns from … to times I − V·T·Vᵀ, or times its transpose (`transpose`: the
 * reflections last first, as factoring applies them): W = Vᵀ·C, then C −= V·(T·W). Each product
 * runs range by range of the panel's rows, so C's rows no reflection touches (the zeros of
 * stacked triangles) cost nothing. The target is column-major (the factor's work) or row-major
 * (the Q being formed or applied, which so needs no transposing in or out); W is kept transposed,
 * Wᵀ = Cᵀ·V, whose wide side is the kernel's fast one either way.
 */
function applyPanel(space: Workspace, panel: Panel, target: HeapMatrix, from: number, to: number, transpose: boolean): void {
  const { kernels, heap, atV, atT, atW, atW2, room } = space;
  const { ranges, rows, width } = panel;
  const columns = to - from;
  if (columns <= 0) return;
  heap.fill(0, atW / 8, atW / 8 + columns * width);
  heap.fill(0, atW2 / 8, atW2 / 8 + columns * width);
  const at = (row: number): number => target.at + (row * target.rowStride + from * target.colStride) * 8;
  let offset = 0;
  for (let r = 0; r < ranges.length; r += 2) {
    const length = ranges[r + 1] - ranges[r];
    const cTransposed = { at: at(ranges[r]), rowStride: target.colStride, colStride: target.rowStride };
    multiplyInHeap(kernels, room, { at: atW, ld: width }, cTransposed, { at: atV + offset * 8, rowStride: 1, colStride: rows }, columns, length, width);
    offset += length;
  }
  // (T·W)ᵀ = Wᵀ·Tᵀ, or Wᵀ·T for the transpose.
  const t = transpose ? { at: atT, rowStride: width, colStride: 1 } : { at: atT, rowStride: 1, colStride: width };
  multiplyInHeap(kernels, room, { at: atW2, ld: width }, { at: atW, rowStride: width, colStride: 1 }, t, columns, width, width);
  offset = 0;
  for (let r = 0; r < ranges.length; r += 2) {
    const length = ranges[r + 1] - ranges[r];
    const v = { at: atV + offset * 8, rowStride: 1, colStride: rows };
    if (target.rowStride === 1) {
      // Column-major: Cᵀ −= (T·W)ᵀ·Vᵀ, rows of the kernel's output being C's columns.
      const vTransposed = { at: v.at, rowStride: rows, colStride: 1 };
      multiplyInHeap(kernels, room, { at: at(ranges[r]), ld: target.colStride }, { at: atW2, rowStride: width, colStride: 1 }, vTransposed, columns, width, length, -1);
    } else {
      const product = { at: atW2, rowStride: 1, colStride: width };
      multiplyInHeap(kernels, room, { at: at(ranges[r]), ld: target.rowStride }, v, product, length, width, columns, -1);
    }
    offset += length;
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

/** A copy of part of the kernel's memory in a chunk's (shared) memory. */
function copyOut(data: Float64Array): Float64Array {
  const out = allocate(data.length);
  out.set(data);
  return out;
}

/**
 * out[j·ld + i] = from[i·cols + j] for i < rows, j < cols, in 32×32 tiles: a plain loop's strided
 * side would touch a new cache line, and for tall blocks a new page, at every step.
 */
function transposeInto(from: Float64Array, out: Float64Array, rows: number, cols: number, ld: number): void {
  for (let i0 = 0; i0 < rows; i0 += 32) {
    const i1 = Math.min(rows, i0 + 32);
    for (let j0 = 0; j0 < cols; j0 += 32) {
      const j1 = Math.min(cols, j0 + 32);
      for (let j = j0; j < j1; j++) for (let i = i0; i < i1; i++) out[j * ld + i] = from[i * cols + j];
    }
  }
}
