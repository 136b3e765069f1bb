// nbytes(value): an estimate of the memory a task result holds, a ready CacheProfiler metric
// (Dask's docs suggest cachey's nbytes for the same job).

/**
 * A value that knows its size without being here (a result held on a cluster worker) carries
 * it under this symbol, so `nbytes` reports the result's size rather than the stand-in's.
 */
export const NBYTES: unique symbol = Symbol.for("tsdask.nbytes") as never;

/**
 * Bytes held by `value`:
 * - a value with an `[NBYTES]` number (a cluster result seen by callbacks): that number.
 * - TypedArrays, DataViews and Buffers: their `byteLength` (the view, not a larger shared buffer);
 *   ArrayBuffers and SharedArrayBuffers: `byteLength`.
 * - strings: 2 bytes per UTF-16 code unit — JavaScript's own string model, and O(1), where
 *   counting UTF-8 bytes would mean encoding the string.
 * - numbers 8, bigints 8 per 64 bits, booleans 4, null/undefined/symbols/functions 0.
 * - arrays: 8 bytes per slot plus their elements; Maps, Sets and other objects: their own
 *   enumerable keys and values, recursively. An object reached twice (shared or cyclic) counts once.
 */
export function nbytes(value: unknown): number {
  return sizeOf(value, new Set());
}

function sizeOf(value: unknown, seen: Set<object>): number {
  switch (typeof value) {
    case "string":
      return value.length * 2;
    case "number":
      return 8;
    case "boolean":
      return 4;
    case "bigint":
      return 8 * Math.max(1, Math.ceil((value < 0n ? -value : value).toString(16).length / 16));
    case "object":
      break;
    default:
      return 0; // undefined, symbol, function
  }
  if (value === null || seen.has(value)) return 0;
  const declared = (value as { [NBYTES]?: unknown })[NBYTES];
  if (typeof declared === "number") return declared;
  seen.add(value);
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof SharedArrayBuffer) {
    return value.byteLength;
  }
  let total = 0;
  if (Array.isArray(value)) {
    total += 8 * value.length;
    for (const item of value) total += sizeOf(item, seen);
  } else if (value instanceof Map) {
    for (const [k, v] of value) total += sizeOf(k, seen) + sizeOf(v, seen);
  } else if (value instanceof Set) {
    for (const item of value) total += sizeOf(item, seen);
  } else {
    for (const k of Object.keys(value)) total += k.length * 2 + sizeOf((value as Record<string, unknown>)[k], seen);
  }
  return total;
}
