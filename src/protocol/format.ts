// Durations as Dask prints them, and the order names are listed in, shared by the kernel's text
// and the extension's widgets so both show the same string and order for the same data.

/** Names in natural order: "worker-2" before "worker-10". */
export const naturalOrder: (a: string, b: string) => number = new Intl.Collator("en", { numeric: true }).compare;

/**
 * A duration in seconds as Dask's `format_time` prints it: `"185.10 us"`, `"100.36 ms"`,
 * `"1.20 s"`, `"10m 0s"`, `"2hr 46m"`, `"3d 1hr"`.
 */
export function formatTime(seconds: number): string {
  const n = seconds;
  if (n > 2 * 24 * 60 * 60) {
    const days = Math.trunc(n / 3600 / 24);
    return `${days}d ${Math.trunc((n - days * 3600 * 24) / 3600)}hr`;
  }
  if (n > 60 * 60 * 2) {
    const hours = Math.trunc(n / 3600);
    return `${hours}hr ${Math.trunc((n - hours * 3600) / 60)}m`;
  }
  if (n > 60 * 10) {
    const minutes = Math.trunc(n / 60);
    return `${minutes}m ${Math.trunc(n - minutes * 60)}s`;
  }
  if (n >= 1) return `${fixed2(n)} s`;
  if (n >= 1e-3) return `${fixed2(n * 1e3)} ms`;
  return `${fixed2(n * 1e6)} us`;
}

/**
 * Python's `"%.2f" % x` for x ≥ 0. `toFixed` agrees except on exact binary ties (x·8 an odd
 * integer, such as 0.125), where Python rounds half to even and `toFixed` rounds up.
 */
function fixed2(x: number): string {
  const eighths = x * 8;
  if (!Number.isInteger(eighths) || eighths % 2 === 0) return x.toFixed(2);
  const below = Math.floor(x * 100); // exact: x·100 is a half-integer here
  const hundredths = below % 2 === 0 ? below : below + 1;
  return `${Math.trunc(hundredths / 100)}.${String(hundredths % 100).padStart(2, "0")}`;
}

const BYTE_UNITS: readonly (readonly [string, number])[] = [
  ["PiB", 2 ** 50],
  ["TiB", 2 ** 40],
  ["GiB", 2 ** 30],
  ["MiB", 2 ** 20],
  ["kiB", 2 ** 10],
];

/** Bytes as Dask's `format_bytes` prints them: `"917 B"`, `"1.21 kiB"`, `"2.00 GiB"` (binary prefixes, from 0.9 of a unit). */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of BYTE_UNITS) if (bytes >= size * 0.9) return `${fixed2(bytes / size)} ${unit}`;
  return `${Math.round(bytes)} B`;
}

/** The binary unit that suits a series whose largest value is `peak`, for an axis ("MiB", 2**20). */
export function byteUnit(peak: number): { readonly unit: string; readonly size: number } {
  for (const [unit, size] of BYTE_UNITS) if (peak >= size * 0.9) return { unit, size };
  return { unit: "B", size: 1 };
}
