// Sizes as Dask's configuration takes them: `"2 GiB"`, `"512MB"`, `"1.5 gb"`, or a number of bytes.

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  p: 1e15,
  pb: 1e15,
  ki: 2 ** 10,
  kib: 2 ** 10,
  mi: 2 ** 20,
  mib: 2 ** 20,
  gi: 2 ** 30,
  gib: 2 ** 30,
  ti: 2 ** 40,
  tib: 2 ** 40,
  pi: 2 ** 50,
  pib: 2 ** 50,
};

/**
 * Bytes in `size` (Dask's `parse_bytes`): a number of bytes, or a number and a unit, decimal
 * (kB, MB, GB…) or binary (KiB, MiB, GiB…), case-insensitive. Throws a RangeError naming
 * `option` for anything else.
 */
export function parseBytes(size: number | string, option: string): number {
  const refuse = (why: string): never => {
    throw new RangeError(`Option ${option} must be a number of bytes or a size such as "2 GiB" or "512 MB"; got ${JSON.stringify(size)} (${why})`);
  };
  if (typeof size === "number") {
    if (!Number.isFinite(size) || size < 0) refuse("not a finite number ≥ 0");
    return Math.floor(size);
  }
  if (typeof size !== "string") return refuse(`a ${typeof size}`);
  const match = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)?\s*([a-z]*)\s*$/i.exec(size);
  if (match === null) return refuse("not a number and a unit");
  const unit = UNITS[match[2].toLowerCase()];
  if (unit === undefined) return refuse(`unknown unit "${match[2]}"`);
  const bytes = Number(match[1] ?? "1") * unit;
  if (!Number.isFinite(bytes)) return refuse("too large");
  return Math.floor(bytes);
}
