// The block product kernel: a 4×4-tile matrix product in WebAssembly SIMD (asm/gemm.ts, built by
// scripts/build-wasm.mjs, loaded by wasm.ts). No npm library was close (see bench/array.ts): ml-matrix's mmul and
// @stdlib/blas's dgemm are plain scalar loops, and no maintained WASM BLAS installs from npm.
// The same tiling in plain JavaScript measured 1.5–3× slower than this (JavaScript has no SIMD).

import { type Chunk, allocate } from "./chunk";
import { type WasmKernels, scratch } from "./wasm";

/** Slice of the inner dimension per packing: a 4-wide panel of B (8 KB at 256 deep) stays in L1. */
const DEPTH = 256;
/** Rows per call into WebAssembly; many short calls let V8 move the kernel to its optimising tier early. */
const STRIP = 64;

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

/** c += a · b for row-major a (m×k), b (k×n), c (m×n), computed in the WebAssembly kernel's memory. */
export function multiplyInto(a: Float64Array, b: Float64Array, c: Float64Array, m: number, k: number, n: number): void {
  const { kernels, offsets, heap } = scratch([m * k, k * n, m * n, ...packingRoom(k, n)]);
  const [atA, atB, atC, atStrip, atPanels] = offsets;
  heap.set(a, atA / 8);
  heap.set(b, atB / 8);
  heap.set(c, atC / 8);
  multiplyInHeap(kernels, { atStrip, atPanels }, { at: atC, ld: n }, { at: atA, rowStride: k, colStride: 1 }, { at: atB, rowStride: n, colStride: 1 }, m, k, n);
  c.set(heap.subarray(atC / 8, atC / 8 + m * n));
}

/** A matrix in the kernel's memory: entry (i, j) at byte `at` + 8·(i·rowStride + j·colStride). */
export interface HeapMatrix {
  at: number;
  rowStride: number;
  colStride: number;
}

/** Byte offsets of the room `multiplyInHeap` packs its operands into (sizes from `packingRoom`). */
export interface PackingRoom {
  atStrip: number;
  atPanels: number;
}

/** Sizes in doubles of the packing room for products with inner dimension ≤ k and ≤ n columns. */
export function packingRoom(k: number, n: number): [number, number] {
  const depth = Math.max(1, Math.min(DEPTH, k));
  return [4 * depth + 16, Math.ceil(n / 4) * 4 * depth];
}

/**
 * c += scale · a · b for a (m×k) and b (k×n) anywhere in the kernel's memory, any strides (so
 * transposes and column-major sub-blocks cost nothing), and row-major c (m×n, rows `ld` apart).
 */
export function multiplyInHeap(kernels: WasmKernels, room: PackingRoom, c: { at: number; ld: number }, a: HeapMatrix, b: HeapMatrix, m: number, k: number, n: number, scale = 1): void {
  for (let p0 = 0; p0 < k; p0 += DEPTH) {
    const slice = Math.min(DEPTH, k - p0);
    kernels.packPanels(b.at + p0 * b.rowStride * 8, b.rowStride, b.colStride, scale, room.atPanels, slice, n);
    const atA = a.at + p0 * a.colStride * 8;
    for (let i0 = 0; i0 < m; i0 += STRIP) {
      kernels.multiplyStrips(atA, a.rowStride, a.colStride, c.at, c.ld, room.atStrip, room.atPanels, slice, n, i0, Math.min(m, i0 + STRIP));
    }
  }
}
