// The block product kernel: a 4×4-tile matrix product in WebAssembly SIMD (asm/gemm.ts, built by
// scripts/build-wasm.mjs). No npm library was close (see bench/array.ts): ml-matrix's mmul and
// @stdlib/blas's dgemm are plain scalar loops, and no maintained WASM BLAS installs from npm.
// The same tiling in plain JavaScript measured 1.5–3× slower than this (JavaScript has no SIMD).

import { type Chunk, allocate } from "./chunk";
import { GEMM_WASM_BASE64 } from "./gemm-wasm";

/** Slice of the inner dimension per packing: a 4-wide panel of B (8 KB at 256 deep) stays in L1. */
const DEPTH = 256;
/** Rows per call into WebAssembly; many short calls let V8 move the kernel to its optimising tier early. */
const STRIP = 64;
/** The first 64 KiB belong to the module's own data. */
const BASE = 65536;

// The tsconfig's libraries (ES2022 + @types/node) do not declare WebAssembly; the part used here:
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { readonly exports: unknown };
};

interface GemmKernel {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  packPanels(b: number, panels: number, p0: number, depth: number, n: number): void;
  multiplyStrips(a: number, c: number, strip: number, panels: number, p0: number, depth: number, k: number, n: number, i0: number, i1: number): void;
}

/** One instance per thread (each worker makes its own on first use). */
let kernel: GemmKernel | undefined;

function gemmKernel(): GemmKernel {
  if (kernel === undefined) {
    const module = new WebAssembly.Module(Buffer.from(GEMM_WASM_BASE64, "base64"));
    const abort = (): never => {
      throw new Error("matmul: the WebAssembly kernel aborted");
    };
    kernel = new WebAssembly.Instance(module, { env: { abort } }).exports as unknown as GemmKernel;
  }
  return kernel;
}

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
  const gemm = gemmKernel();
  const even = (count: number): number => count + (count % 2); // keeps every region 16-byte aligned
  const depth = Math.min(DEPTH, k);
  const at = { a: BASE, b: 0, c: 0, strip: 0, panels: 0, end: 0 };
  at.b = at.a + even(m * k) * 8;
  at.c = at.b + even(k * n) * 8;
  at.strip = at.c + even(m * n) * 8;
  at.panels = at.strip + (4 * depth + 16) * 8;
  at.end = at.panels + Math.ceil(n / 4) * 4 * depth * 8;
  const missing = at.end - gemm.memory.buffer.byteLength;
  if (missing > 0) gemm.memory.grow(Math.ceil(missing / 65536));
  const heap = new Float64Array(gemm.memory.buffer);
  heap.set(a, at.a / 8);
  heap.set(b, at.b / 8);
  heap.set(c, at.c / 8);
  for (let p0 = 0; p0 < k; p0 += DEPTH) {
    const slice = Math.min(DEPTH, k - p0);
    gemm.packPanels(at.b, at.panels, p0, slice, n);
    for (let i0 = 0; i0 < m; i0 += STRIP) gemm.multiplyStrips(at.a, at.c, at.strip, at.panels, p0, slice, k, n, i0, Math.min(m, i0 + STRIP));
  }
  c.set(heap.subarray(at.c / 8, at.c / 8 + m * n));
}
