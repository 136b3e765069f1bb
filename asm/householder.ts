// AssemblyScript source of the Householder update that householder.ts uses within a panel (the
// panel's updates of the rest of the matrix are matrix products, asm/gemm.ts) (128-bit SIMD):
// applies H = I − tau·v·vᵀ to columns from … to of a column-major matrix, over the reflection's
// rows only. `rows` points at `rangeCount` pairs of i32 [start, end). Four columns share each
// pass over v, two rows per SIMD lane pair.

export function reflect(target: usize, v: usize, m: i32, tau: f64, rows: usize, rangeCount: i32, from: i32, to: i32): void {
  const stride = <usize>m << 3;
  let j = from;
  for (; j + 4 <= to; j += 4) {
    const c0 = target + <usize>j * stride;
    const c1 = c0 + stride;
    const c2 = c1 + stride;
    const c3 = c2 + stride;
    let s0 = f64x2.splat(0), s1 = f64x2.splat(0), s2 = f64x2.splat(0), s3 = f64x2.splat(0);
    let t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
    for (let r = 0; r < rangeCount; r++) {
      const start = load<i32>(rows + (<usize>r << 3));
      const end = load<i32>(rows + (<usize>r << 3), 4);
      let i = start;
      for (; i + 2 <= end; i += 2) {
        const at = <usize>i << 3;
        const x = v128.load(v + at);
        s0 = f64x2.add(s0, f64x2.mul(x, v128.load(c0 + at)));
        s1 = f64x2.add(s1, f64x2.mul(x, v128.load(c1 + at)));
        s2 = f64x2.add(s2, f64x2.mul(x, v128.load(c2 + at)));
        s3 = f64x2.add(s3, f64x2.mul(x, v128.load(c3 + at)));
      }
      if (i < end) {
        const at = <usize>i << 3;
        const x = load<f64>(v + at);
        t0 += x * load<f64>(c0 + at);
        t1 += x * load<f64>(c1 + at);
        t2 += x * load<f64>(c2 + at);
        t3 += x * load<f64>(c3 + at);
      }
    }
    const w0 = tau * (f64x2.extract_lane(s0, 0) + f64x2.extract_lane(s0, 1) + t0);
    const w1 = tau * (f64x2.extract_lane(s1, 0) + f64x2.extract_lane(s1, 1) + t1);
    const w2 = tau * (f64x2.extract_lane(s2, 0) + f64x2.extract_lane(s2, 1) + t2);
    const w3 = tau * (f64x2.extract_lane(s3, 0) + f64x2.extract_lane(s3, 1) + t3);
    const u0 = f64x2.splat(w0), u1 = f64x2.splat(w1), u2 = f64x2.splat(w2), u3 = f64x2.splat(w3);
    for (let r = 0; r < rangeCount; r++) {
      const start = load<i32>(rows + (<usize>r << 3));
      const end = load<i32>(rows + (<usize>r << 3), 4);
      let i = start;
      for (; i + 2 <= end; i += 2) {
        const at = <usize>i << 3;
        const x = v128.load(v + at);
        v128.store(c0 + at, f64x2.sub(v128.load(c0 + at), f64x2.mul(u0, x)));
        v128.store(c1 + at, f64x2.sub(v128.load(c1 + at), f64x2.mul(u1, x)));
        v128.store(c2 + at, f64x2.sub(v128.load(c2 + at), f64x2.mul(u2, x)));
        v128.store(c3 + at, f64x2.sub(v128.load(c3 + at), f64x2.mul(u3, x)));
      }
      if (i < end) {
        const at = <usize>i << 3;
        const x = load<f64>(v + at);
        store<f64>(c0 + at, load<f64>(c0 + at) - w0 * x);
        store<f64>(c1 + at, load<f64>(c1 + at) - w1 * x);
        store<f64>(c2 + at, load<f64>(c2 + at) - w2 * x);
        store<f64>(c3 + at, load<f64>(c3 + at) - w3 * x);
      }
    }
  }
  for (; j < to; j++) {
    const c = target + <usize>j * stride;
    let w = 0.0;
    for (let r = 0; r < rangeCount; r++) {
      const end = load<i32>(rows + (<usize>r << 3), 4);
      for (let i = load<i32>(rows + (<usize>r << 3)); i < end; i++) w += load<f64>(v + (<usize>i << 3)) * load<f64>(c + (<usize>i << 3));
    }
    w *= tau;
    for (let r = 0; r < rangeCount; r++) {
      const end = load<i32>(rows + (<usize>r << 3), 4);
      for (let i = load<i32>(rows + (<usize>r << 3)); i < end; i++) {
        const at = <usize>i << 3;
        store<f64>(c + at, load<f64>(c + at) - w * load<f64>(v + at));
      }
    }
  }
}

/**
 * Two reflections in one pass over each column: H0·(H1·c) for H = I − tau·v·vᵀ, where
 * `dot01` = v0·v1. Both vectors must be zero outside `rows` (the union of their rows), which
 * halves the passes over the target that `reflect` twice would make.
 */
export function reflectPair(target: usize, v0: usize, v1: usize, m: i32, tau0: f64, tau1: f64, dot01: f64, rows: usize, rangeCount: i32, from: i32, to: i32): void {
  const stride = <usize>m << 3;
  let j = from;
  for (; j + 2 <= to; j += 2) {
    const c0 = target + <usize>j * stride;
    const c1 = c0 + stride;
    let a0 = f64x2.splat(0), a1 = f64x2.splat(0), b0 = f64x2.splat(0), b1 = f64x2.splat(0);
    let ta0 = 0.0, ta1 = 0.0, tb0 = 0.0, tb1 = 0.0;
    for (let r = 0; r < rangeCount; r++) {
      const start = load<i32>(rows + (<usize>r << 3));
      const end = load<i32>(rows + (<usize>r << 3), 4);
      let i = start;
      for (; i + 2 <= end; i += 2) {
        const at = <usize>i << 3;
        const x = v128.load(v0 + at);
        const y = v128.load(v1 + at);
        const p = v128.load(c0 + at);
        const q = v128.load(c1 + at);
        a0 = f64x2.add(a0, f64x2.mul(x, p));
        b0 = f64x2.add(b0, f64x2.mul(y, p));
        a1 = f64x2.add(a1, f64x2.mul(x, q));
        b1 = f64x2.add(b1, f64x2.mul(y, q));
      }
      if (i < end) {
        const at = <usize>i << 3;
        const x = load<f64>(v0 + at);
        const y = load<f64>(v1 + at);
        const p = load<f64>(c0 + at);
        const q = load<f64>(c1 + at);
        ta0 += x * p;
        tb0 += y * p;
        ta1 += x * q;
        tb1 += y * q;
      }
    }
    const w10 = tau1 * (f64x2.extract_lane(b0, 0) + f64x2.extract_lane(b0, 1) + tb0);
    const w11 = tau1 * (f64x2.extract_lane(b1, 0) + f64x2.extract_lane(b1, 1) + tb1);
    const w00 = tau0 * (f64x2.extract_lane(a0, 0) + f64x2.extract_lane(a0, 1) + ta0 - w10 * dot01);
    const w01 = tau0 * (f64x2.extract_lane(a1, 0) + f64x2.extract_lane(a1, 1) + ta1 - w11 * dot01);
    const u00 = f64x2.splat(w00), u01 = f64x2.splat(w01), u10 = f64x2.splat(w10), u11 = f64x2.splat(w11);
    for (let r = 0; r < rangeCount; r++) {
      const start = load<i32>(rows + (<usize>r << 3));
      const end = load<i32>(rows + (<usize>r << 3), 4);
      let i = start;
      for (; i + 2 <= end; i += 2) {
        const at = <usize>i << 3;
        const x = v128.load(v0 + at);
        const y = v128.load(v1 + at);
        v128.store(c0 + at, f64x2.sub(v128.load(c0 + at), f64x2.add(f64x2.mul(u00, x), f64x2.mul(u10, y))));
        v128.store(c1 + at, f64x2.sub(v128.load(c1 + at), f64x2.add(f64x2.mul(u01, x), f64x2.mul(u11, y))));
      }
      if (i < end) {
        const at = <usize>i << 3;
        const x = load<f64>(v0 + at);
        const y = load<f64>(v1 + at);
        store<f64>(c0 + at, load<f64>(c0 + at) - (w00 * x + w10 * y));
        store<f64>(c1 + at, load<f64>(c1 + at) - (w01 * x + w11 * y));
      }
    }
  }
  if (j < to) {
    const c = target + <usize>j * stride;
    let d0 = 0.0, d1 = 0.0;
    for (let r = 0; r < rangeCount; r++) {
      const end = load<i32>(rows + (<usize>r << 3), 4);
      for (let i = load<i32>(rows + (<usize>r << 3)); i < end; i++) {
        const at = <usize>i << 3;
        const p = load<f64>(c + at);
        d0 += load<f64>(v0 + at) * p;
        d1 += load<f64>(v1 + at) * p;
      }
    }
    const w1 = tau1 * d1;
    const w0 = tau0 * (d0 - w1 * dot01);
    for (let r = 0; r < rangeCount; r++) {
      const end = load<i32>(rows + (<usize>r << 3), 4);
      for (let i = load<i32>(rows + (<usize>r << 3)); i < end; i++) {
        const at = <usize>i << 3;
        store<f64>(c + at, load<f64>(c + at) - (w0 * load<f64>(v0 + at) + w1 * load<f64>(v1 + at)));
      }
    }
  }
}
