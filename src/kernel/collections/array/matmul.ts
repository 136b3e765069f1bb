// The block product kernel: a 4×4-tile matrix product in WebAssembly SIMD (asm/gemm.ts, built by
// scripts/build-wasm.mjs, loaded by wasm.ts). No npm library was close (see bench/array.ts): ml-matrix's mmul and
// @stdlib/blas's dgemm are plain scalar loops, and no maintained WASM BLAS installs from npm.
// The same tiling in plain JavaScript measured 1.5–3× slower than this (JavaScript has no SIMD).

import { type Chunk, allocate } from "./chunk";
import { scratch } from "./wasm";

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
  const depth = Math.min(DEPTH, k);
  const { kernels, offsets, heap } = scratch([m * k, k * n, m * n, 4 * depth + 16, Math.ceil(n / 4) * 4 * depth]);
  const [atA, atB, atC, atStrip, atPanels] = offsets;
  heap.set(a, atA / 8);
  heap.set(b, atB / 8);
  heap.set(c, atC / 8);
  for (let p0 = 0; p0 < k; p0 += DEPTH) {
    const slice = Math.min(DEPTH, k - p0);
    kernels.packPanels(atB, atPanels, p0, slice, n);
    for (let i0 = 0; i0 < m; i0 += STRIP) kernels.multiplyStrips(atA, atC, atStrip, atPanels, p0, slice, k, n, i0, Math.min(m, i0 + STRIP));
  }
  c.set(heap.subarray(atC / 8, atC / 8 + m * n));
}
