// AssemblyScript source of the block-product kernel (WebAssembly with 128-bit SIMD), part of asm/index.ts.
// scripts/build-wasm.mjs compiles asm/index.ts into src/kernel/collections/array/wasm-binary.ts; the
// JavaScript side (matmul.ts) calls packPanels once per slice of the inner dimension, then
// multiplyStrips over row strips. Operands are strided (entry (i, j) of a matrix at
// 8·(i·rowStride + j·colStride) bytes from its start), so the Householder kernels can multiply
// transposed or column-major sub-blocks in place; the packing absorbs the layout.
// Why: JavaScript has no SIMD, and V8 compiles this to SSE/AVX pairs of f64 lanes; relaxed_madd
// is a fused multiply-add where the CPU has one (else a multiply and an add: only rounding differs).

/**
 * Copies `depth` rows of b (depth×n, strided) times `scale` into 4-column panels laid out
 * [panel][p][0..3], zero-padded: a panel is a strip of bᵀ.
 */
export function packPanels(b: usize, rowStride: i32, colStride: i32, scale: f64, panels: usize, depth: i32, n: i32): void {
  for (let j0 = 0; j0 < n; j0 += 4) {
    packStrip(b, colStride, rowStride, scale, panels + (<usize>(j0 * depth) << 3), depth, j0, min(4, n - j0));
  }
}

/**
 * c[i0 … i1] += a[i0 … i1, 0 … depth] · (the packed rows of b), for strided a (m×depth) and
 * row-major c (m×n, `ldc` doubles from row to row). Each 4-row strip of a is packed [p][0..3]
 * into `strip` (4·depth + 16 doubles), then every 4×4 tile of c is accumulated in eight f64x2
 * registers.
 */
export function multiplyStrips(a: usize, rowStride: i32, colStride: i32, c: usize, ldc: i32, strip: usize, panels: usize, depth: i32, n: i32, i0: i32, i1: i32): void {
  const count = (n + 3) >> 2;
  for (let r0 = i0; r0 < i1; r0 += 4) {
    const rows = min(4, i1 - r0);
    packStrip(a, rowStride, colStride, 1.0, strip, depth, r0, rows);
    for (let panel = 0; panel < count; panel++) {
      const base = panels + (<usize>(panel * depth * 4) << 3);
      let c00 = f64x2.splat(0), c01 = f64x2.splat(0), c10 = f64x2.splat(0), c11 = f64x2.splat(0);
      let c20 = f64x2.splat(0), c21 = f64x2.splat(0), c30 = f64x2.splat(0), c31 = f64x2.splat(0);
      const end = strip + (<usize>(depth * 4) << 3);
      for (let x = strip, y = base; x < end; x += 32, y += 32) {
        const b0 = v128.load(y);
        const b1 = v128.load(y, 16);
        const a0 = v128.load64_splat(x);
        const a1 = v128.load64_splat(x, 8);
        const a2 = v128.load64_splat(x, 16);
        const a3 = v128.load64_splat(x, 24);
        c00 = f64x2.relaxed_madd(a0, b0, c00);
        c01 = f64x2.relaxed_madd(a0, b1, c01);
        c10 = f64x2.relaxed_madd(a1, b0, c10);
        c11 = f64x2.relaxed_madd(a1, b1, c11);
        c20 = f64x2.relaxed_madd(a2, b0, c20);
        c21 = f64x2.relaxed_madd(a2, b1, c21);
        c30 = f64x2.relaxed_madd(a3, b0, c30);
        c31 = f64x2.relaxed_madd(a3, b1, c31);
      }
      const j0 = panel << 2;
      if (rows == 4 && j0 + 4 <= n) {
        const stride = <usize>ldc << 3;
        let o = c + (<usize>(r0 * ldc + j0) << 3);
        v128.store(o, f64x2.add(v128.load(o), c00));
        v128.store(o, f64x2.add(v128.load(o, 16), c01), 16);
        o += stride;
        v128.store(o, f64x2.add(v128.load(o), c10));
        v128.store(o, f64x2.add(v128.load(o, 16), c11), 16);
        o += stride;
        v128.store(o, f64x2.add(v128.load(o), c20));
        v128.store(o, f64x2.add(v128.load(o, 16), c21), 16);
        o += stride;
        v128.store(o, f64x2.add(v128.load(o), c30));
        v128.store(o, f64x2.add(v128.load(o, 16), c31), 16);
      } else {
        // An edge tile: spill the sums after the packed strip and add only the cells inside c.
        const sums = strip + (<usize>(depth * 4) << 3);
        v128.store(sums, c00);
        v128.store(sums, c01, 16);
        v128.store(sums, c10, 32);
        v128.store(sums, c11, 48);
        v128.store(sums, c20, 64);
        v128.store(sums, c21, 80);
        v128.store(sums, c30, 96);
        v128.store(sums, c31, 112);
        const width = min(4, n - j0);
        for (let r = 0; r < rows; r++) {
          for (let q = 0; q < width; q++) {
            const o = c + (<usize>((r0 + r) * ldc + j0 + q) << 3);
            store<f64>(o, load<f64>(o) + load<f64>(sums + (<usize>(r * 4 + q) << 3)));
          }
        }
      }
    }
  }
}

/**
 * Packs rows r0 … r0 + rows of a (strided, `depth` wide) times `scale` as [p][0..3] into `strip`,
 * zero-padded. Whole strips whose rows or columns are contiguous (every caller's operands are one
 * or the other) move two entries per load, which matters when c is narrow or the product shallow,
 * and the packing so a large share of the work.
 */
@inline
function packStrip(a: usize, rowStride: i32, colStride: i32, scale: f64, strip: usize, depth: i32, r0: i32, rows: i32): void {
  const factor = f64x2.splat(scale);
  let p = 0;
  if (rows == 4 && colStride == 1) {
    const x0 = a + (<usize>(r0 * rowStride) << 3);
    const x1 = x0 + (<usize>rowStride << 3);
    const x2 = x1 + (<usize>rowStride << 3);
    const x3 = x2 + (<usize>rowStride << 3);
    for (; p + 2 <= depth; p += 2) {
      const at = <usize>p << 3;
      const v0 = v128.load(x0 + at);
      const v1 = v128.load(x1 + at);
      const v2 = v128.load(x2 + at);
      const v3 = v128.load(x3 + at);
      const to = strip + (<usize>(p * 4) << 3);
      v128.store(to, f64x2.mul(factor, i64x2.shuffle(v0, v1, 0, 2)));
      v128.store(to, f64x2.mul(factor, i64x2.shuffle(v2, v3, 0, 2)), 16);
      v128.store(to, f64x2.mul(factor, i64x2.shuffle(v0, v1, 1, 3)), 32);
      v128.store(to, f64x2.mul(factor, i64x2.shuffle(v2, v3, 1, 3)), 48);
    }
  } else if (rows == 4 && rowStride == 1) {
    for (; p < depth; p++) {
      const from = a + (<usize>(r0 + p * colStride) << 3);
      const to = strip + (<usize>(p * 4) << 3);
      v128.store(to, f64x2.mul(factor, v128.load(from)));
      v128.store(to, f64x2.mul(factor, v128.load(from, 16)), 16);
    }
  }
  for (; p < depth; p++) {
    for (let r = 0; r < 4; r++) {
      store<f64>(strip + (<usize>(p * 4 + r) << 3), r < rows ? scale * load<f64>(a + (<usize>((r0 + r) * rowStride + p * colStride) << 3)) : 0.0);
    }
  }
}
