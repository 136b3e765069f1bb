// The WebAssembly chunk kernels (asm/, compiled into wasm-binary.ts): one instance per thread,
// made on first use, and a scratch area in its memory that the JavaScript side fills and reads.

import { setFlagsFromString } from "node:v8";
import { KERNELS_WASM_BASE64 } from "./wasm-binary";

// The tsconfig's libraries (ES2022 + @types/node) do not declare WebAssembly; the part used here:
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { readonly exports: unknown };
};

export interface WasmKernels {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  packPanels(b: number, rowStride: number, colStride: number, scale: number, panels: number, depth: number, n: number): void;
  multiplyStrips(a: number, rowStride: number, colStride: number, c: number, ldc: number, strip: number, panels: number, depth: number, n: number, i0: number, i1: number): void;
  reflect(target: number, v: number, m: number, tau: number, rows: number, rangeCount: number, from: number, to: number): void;
  reflectPair(target: number, v0: number, v1: number, m: number, tau0: number, tau1: number, dot01: number, rows: number, rangeCount: number, from: number, to: number): void;
}

/** Byte offset of the scratch area: the first 64 KiB belong to the module's own data. */
export const SCRATCH = 65536;

let instance: WasmKernels | undefined;

export function wasmKernels(): WasmKernels {
  if (instance === undefined) {
    // V8 first runs WebAssembly through its baseline compiler and moves hot functions to the
    // optimising one in the background; in a busy worker pool that move can lag by seconds, with
    // the kernels running about 8× slower meanwhile. These kernels are tiny and always hot, so
    // compile them optimised up front; the flags are read only while compiling, and restored.
    setFlagsFromString("--no-liftoff");
    setFlagsFromString("--no-wasm-lazy-compilation");
    // The block product multiplies and adds in one fused instruction (relaxed SIMD's madd, an
    // FMA on CPUs that have one; it made the product about 1.5× faster here). V8 shipped relaxed
    // SIMD in 11.4; Node 20's V8 11.3 has it behind this flag, left on (later V8s have it on
    // anyway, and may no longer know the flag: V8 prints an error for a flag it does not know).
    if (Number(process.versions.v8.split(".")[0]) < 12) setFlagsFromString("--experimental-wasm-relaxed-simd");
    let module: object;
    try {
      module = new WebAssembly.Module(Buffer.from(KERNELS_WASM_BASE64, "base64"));
    } finally {
      setFlagsFromString("--liftoff");
      setFlagsFromString("--wasm-lazy-compilation");
    }
    const abort = (): never => {
      throw new Error("A WebAssembly array kernel aborted");
    };
    instance = new WebAssembly.Instance(module, { env: { abort } }).exports as unknown as WasmKernels;
  }
  return instance;
}

/**
 * Lays out regions of the given sizes (in doubles) from SCRATCH, each 16-byte aligned, grows the
 * memory to fit, and returns their byte offsets with a view of the whole memory (valid until
 * the next call, which may grow it).
 */
export function scratch(sizes: readonly number[]): { kernels: WasmKernels; offsets: number[]; heap: Float64Array } {
  const kernels = wasmKernels();
  const offsets: number[] = [];
  let end = SCRATCH;
  for (const size of sizes) {
    offsets.push(end);
    end += (size + (size % 2)) * 8;
  }
  const missing = end - kernels.memory.buffer.byteLength;
  if (missing > 0) kernels.memory.grow(Math.ceil(missing / 65536));
  return { kernels, offsets, heap: new Float64Array(kernels.memory.buffer) };
}
