// xoshiro128**: a small, fast, well-studied generator (Blackman & Vigna, public domain).
// Written out here rather than taken from a library because the per-number cost matters at
// 10^8 numbers (a library's generator object adds a call and an allocation per value) and the
// algorithm is eight lines. Each chunk gets its own 128-bit state, so chunks are independent
// of the order and the thread they run on.

/** The generator's state: four 32-bit words, not all zero. */
export type Seed = readonly [number, number, number, number];

/** Four 32-bit words from a 32-hex-digit token (the array's token hashed with the chunk index). */
export function seedFromHex(hex: string): Seed {
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`A chunk seed needs 32 hex digits, got ${JSON.stringify(hex)}`);
  const words = [0, 8, 16, 24].map((at) => parseInt(hex.slice(at, at + 8), 16) >>> 0);
  if (!words.some((word) => word !== 0)) words[0] = 1;
  return words as unknown as Seed;
}

/** Fills `out` with uniform doubles in [0, 1), each built from 53 random bits. */
export function fillUniform(seed: Seed, out: Float64Array): void {
  let [s0, s1, s2, s3] = seed;
  s0 |= 0;
  s1 |= 0;
  s2 |= 0;
  s3 |= 0;
  for (let i = 0; i < out.length; i++) {
    let hi = 0;
    let lo = 0;
    for (let draw = 0; draw < 2; draw++) {
      const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = rotl(s3, 11);
      if (draw === 0) hi = result;
      else lo = result;
    }
    out[i] = ((hi >>> 5) * 67108864 + (lo >>> 6)) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** Fills `out` with normal deviates (Box–Muller on pairs of uniforms). */
export function fillNormal(seed: Seed, out: Float64Array, loc: number, scale: number): void {
  const uniform = new Float64Array(out.length + (out.length % 2));
  fillUniform(seed, uniform);
  for (let i = 0; i < out.length; i += 2) {
    // 1 - u is in (0, 1], so the logarithm is finite.
    const radius = Math.sqrt(-2 * Math.log(1 - uniform[i]));
    const angle = 2 * Math.PI * uniform[i + 1];
    out[i] = loc + scale * radius * Math.cos(angle);
    if (i + 1 < out.length) out[i + 1] = loc + scale * radius * Math.sin(angle);
  }
}
