// The Redis client's options, and the checks the Redis cluster's and worker's options share: a bad
// value (negative, NaN, a string…) is a TypeError naming the option and its unit, before anything
// connects. The options are declared here, apart from the code that reads them, because the
// package's public types reach them (RedisClusterOptions): a notebook's TypeScript then loads no
// ioredis or BullMQ declarations, which cost about a CPU-second of every kernel's first cell.

import type { ConnectionOptions as TlsOptions } from "node:tls";

export interface ConnectOptions {
  /** Bound on connecting and on the first reply, seconds (default 5). */
  readonly connectTimeout?: number;
  /** TLS settings for rediss:// (a private CA, say); merged over Node's defaults. */
  readonly tls?: TlsOptions;
  /** Shown by Redis's CLIENT LIST, so an operator can tell connections apart. */
  readonly connectionName?: string;
}

export interface RedisTransportOptions extends ConnectOptions {
  /** The client's name in the registry (default "tsdask-client"). */
  readonly name?: string;
  /** Largest Redis string a stored value is cut into, bytes (default 64 MiB). */
  readonly partSize?: number;
  /** Seconds tasks may wait with no worker connected before a notice says so (default 10). */
  readonly noWorkersTimeout?: number;
  /** Seconds the connection to Redis may stay lost before the transport fails (default 20). */
  readonly connectionLostTimeout?: number;
  /** Seconds between reads of the worker registry (default 1). */
  readonly pollInterval?: number;
  /**
   * Results larger than this many bytes (in memory) stay with the worker that computed it, which
   * serves them to peers and this client; Redis holds where they live (default: each worker's
   * own --hold-above, 64 KiB unless it says otherwise).
   */
  readonly holdAbove?: number;
  /**
   * Seconds a worker keeping results may take to accept this client's connection, or stay silent
   * while it gathers from it, before its results go through Redis or are recomputed (default 30,
   * Dask's distributed.comm.timeouts.connect and .tcp).
   */
  readonly peerTimeout?: number;
}

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
