// nbytes(value): an estimate of the memory a task result holds, a ready CacheProfiler metric
// (Dask's docs suggest cachey's nbytes for the same job); estimateNbytes(value): a cheaper one for
// every task (pool transfers, span sizes), which samples long arrays and objects.

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

/**
 * Roughly `value`'s size in bytes, at a cost that does not grow with it: long arrays, Maps, Sets
 * and objects are sampled (64 items) and extrapolated, nesting is followed 8 levels deep.
 * `sharedIsFree`: shared memory counts 0 (what structured clone moves between threads).
 */
export function estimateNbytes(value: unknown, sharedIsFree = false, depth = 0): number {
  switch (typeof value) {
    case "number":
    case "bigint":
      return 8;
    case "string":
      return value.length + 4;
    case "object":
      break;
    default:
      return 1;
  }
  if (value === null) return 1;
  if (ArrayBuffer.isView(value)) return sharedIsFree && value.buffer instanceof SharedArrayBuffer ? 0 : value.byteLength;
  if (value instanceof ArrayBuffer) return value.byteLength;
  if (value instanceof SharedArrayBuffer) return sharedIsFree ? 0 : value.byteLength;
  if (depth > 8) return 8;
  const items: unknown[] =
    value instanceof Map ? [...value.keys(), ...value.values()] : value instanceof Set ? [...value] : Array.isArray(value) ? value : Object.values(value);
  const sample = Math.min(items.length, 64);
  let total = 0;
  for (let i = 0; i < sample; i++) total += estimateNbytes(items[i], sharedIsFree, depth + 1);
  if (!Array.isArray(value) && !(value instanceof Map) && !(value instanceof Set)) {
    for (const name of Object.keys(value).slice(0, sample)) total += name.length + 4;
  }
  return 8 + (sample === 0 ? 0 : (total * items.length) / sample);
}
