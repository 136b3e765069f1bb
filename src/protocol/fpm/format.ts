// Metric values as people read them: "1.23 s", "340 ms", "340 MiB", "12,345", "0.5 GB-h".
// Shared by the panel (tooltips, axes) and the kernel's text summary.

const SECOND_STEPS: readonly (readonly [number, string])[] = [
  [3600, "h"],
  [60, "min"],
  [1, "s"],
  [1e-3, "ms"],
  [1e-6, "µs"],
  [1e-9, "ns"],
];
const BYTE_STEPS: readonly (readonly [number, string])[] = [
  [2 ** 50, "PiB"],
  [2 ** 40, "TiB"],
  [2 ** 30, "GiB"],
  [2 ** 20, "MiB"],
  [2 ** 10, "KiB"],
  [1, "B"],
];

/** Three significant digits, no trailing zeros beyond them: 1.23, 12.3, 123, 1230. */
function significant(value: number): string {
  if (value === 0) return "0";
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  const text = value.toFixed(digits);
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}

/** The display step for a magnitude: the largest whose size fits, else the smallest. */
function stepFor(magnitude: number, steps: readonly (readonly [number, string])[]): readonly [number, string] {
  return steps.find(([size]) => magnitude >= size) ?? steps[steps.length - 1];
}

/** A value in `unit` as text: seconds and bytes scaled to a readable step, counts grouped, others as numbers. */
export function formatMetric(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  if (unit === "seconds" || unit === "bytes") {
    if (value === 0) return unit === "seconds" ? "0 s" : "0 B";
    const [size, suffix] = stepFor(Math.abs(value), unit === "seconds" ? SECOND_STEPS : BYTE_STEPS);
    return `${significant(value / size)} ${suffix}`;
  }
  const number = Number.isInteger(value) ? value.toLocaleString("en-US") : significant(value);
  return unit === "count" ? number : `${number} ${unit}`;
}

/** A share as a percentage: "34.5 %", "<0.1 %" for a sliver, "100 %". */
export function formatShare(part: number, whole: number): string {
  if (whole <= 0) return "–";
  const percent = (100 * part) / whole;
  if (percent > 0 && percent < 0.1) return "<0.1 %";
  return `${percent >= 99.95 || percent === 0 ? percent.toFixed(0) : percent.toFixed(1)} %`;
}

/**
 * How an axis in `unit` labels its ticks when the largest value is `max`: a divisor and a suffix
 * (e.g. seconds up to 90 → "s"; bytes up to 3 GiB → "GiB"), so ticks read "0 s, 20 s, 40 s".
 */
export function axisStep(max: number, unit: string): { readonly divisor: number; readonly suffix: string } {
  if (unit === "seconds" || unit === "bytes") {
    const [divisor, suffix] = stepFor(max, unit === "seconds" ? SECOND_STEPS : BYTE_STEPS);
    return { divisor, suffix };
  }
  return { divisor: 1, suffix: unit === "count" ? "" : unit };
}
