// The big ArrayBuffers a value owns outright, so their memory can be moved to another thread
// (a transfer list) or given back at once (a cluster worker's spilled results), instead of being
// copied, or left for a garbage collection that a quiet thread may not run for a long time.

/**
 * Smaller buffers are left alone: copying them costs less than moving them, and the garbage
 * collector reclaims them soon enough.
 */
export const OWNED_BUFFER_MIN_BYTES = 64 * 1024;

/**
 * The plain (non-shared) ArrayBuffers of at least OWNED_BUFFER_MIN_BYTES inside `value` (plain
 * objects, arrays, Maps and Sets are searched) that every typed array or DataView of the value
 * covers entirely: detaching one of them changes nothing else of the value. A buffer only partly
 * viewed (a Buffer sliced from a bigger one, say) may hold data of others and is left out, as is
 * shared memory, which other threads may use. Each buffer appears once.
 */
export function ownedBuffers(value: unknown): ArrayBuffer[] {
  const whole = new Set<ArrayBuffer>();
  const partial = new Set<ArrayBuffer>();
  const visited = new Set<object>();
  // A work list, not recursion: a deep value must not overflow the stack.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (item === null || typeof item !== "object" || visited.has(item)) continue;
    visited.add(item);
    if (item instanceof ArrayBuffer) {
      whole.add(item);
    } else if (ArrayBuffer.isView(item)) {
      const buffer = item.buffer;
      if (!(buffer instanceof ArrayBuffer)) continue;
      if (item.byteOffset === 0 && item.byteLength === buffer.byteLength) whole.add(buffer);
      else partial.add(buffer);
    } else if (Array.isArray(item)) {
      for (const element of item) if (typeof element === "object") pending.push(element);
    } else if (item instanceof Map) {
      for (const [key, entry] of item) pending.push(key, entry);
    } else if (item instanceof Set) {
      for (const entry of item) pending.push(entry);
    } else if (!(item instanceof Error || item instanceof Date || item instanceof RegExp)) {
      for (const key of Object.keys(item)) pending.push((item as Record<string, unknown>)[key]);
    }
  }
  return [...whole].filter((buffer) => !partial.has(buffer) && buffer.byteLength >= OWNED_BUFFER_MIN_BYTES);
}
