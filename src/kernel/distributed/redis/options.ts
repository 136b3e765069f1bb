// The checks the Redis cluster's and worker's options share: a bad value (negative, NaN, a
// string…) is a TypeError naming the option and its unit, before anything connects.

type Unit = "seconds" | "bytes" | "whole number ≥ 0" | "whole number ≥ 1";

/** Throws for the first option of `units` that is given and is not a number in that unit. */
export function checkOptionUnits<Options extends object>(options: Options, units: { readonly [Name in keyof Options]?: Unit }, owner: string): void {
  for (const [name, unit] of Object.entries(units) as [keyof Options & string, Unit][]) {
    const value = options[name];
    if (value === undefined || fits(value, unit)) continue;
    const wanted = unit === "seconds" || unit === "bytes" ? `a positive number of ${unit}` : `a ${unit}`;
    throw new TypeError(`${owner} option ${name} must be ${wanted}, got ${describe(value)}`);
  }
}

function fits(value: unknown, unit: Unit): boolean {
  if (typeof value !== "number") return false;
  if (unit === "whole number ≥ 0") return Number.isInteger(value) && value >= 0;
  if (unit === "whole number ≥ 1") return Number.isInteger(value) && value >= 1;
  return Number.isFinite(value) && value > 0;
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value === "object" && value !== null ? "an object" : String(value);
}

/**
 * Seconds a peer (a worker's data listener) may take to accept a connection, or leave a request
 * with no byte moving, before the fetch fails and goes elsewhere: Dask's
 * distributed.comm.timeouts.connect and .tcp, both 30 s by default.
 */
export const DEFAULT_PEER_TIMEOUT = 30;
