// AssemblyScript source of the Householder update used by householder.ts (128-bit SIMD):
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
