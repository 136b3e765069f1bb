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

/** The ArrayBuffer a message to another thread would copy: plain (not shared), not resizable, and big. */
function isBigPlainBuffer(buffer: ArrayBufferLike): buffer is ArrayBuffer {
  return buffer instanceof ArrayBuffer && buffer.byteLength >= OWNED_BUFFER_MIN_BYTES && (buffer as { resizable?: boolean }).resizable !== true;
}

/** Whether `value` holds a big plain ArrayBuffer (see isBigPlainBuffer), itself or through a view, anywhere structured clone reaches. */
export function holdsBigBuffer(value: unknown): boolean {
  const visited = new Set<object>();
  // A work list, not recursion: a deep value must not overflow the stack.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (item === null || typeof item !== "object" || visited.has(item)) continue;
    visited.add(item);
    if (item instanceof ArrayBuffer) {
      if (isBigPlainBuffer(item)) return true;
    } else if (ArrayBuffer.isView(item)) {
      if (isBigPlainBuffer(item.buffer)) return true;
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
  return false;
}

/** The built-in view classes, in the order a view is matched against them (a subclass, Buffer say, travels as its base). */
const VIEW_CLASSES = [
  Uint8Array,
  Int8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;

/** A view of `view`'s class (its built-in base), offset and length, on `buffer`: what structured clone makes of it. */
function viewOn(view: ArrayBufferView, buffer: ArrayBuffer): ArrayBufferView {
  if (view instanceof DataView) return new DataView(buffer, view.byteOffset, view.byteLength);
  for (const View of VIEW_CLASSES) {
    if (view instanceof View) return new View(buffer, view.byteOffset, view.byteLength / View.BYTES_PER_ELEMENT);
  }
  return new Uint8Array(buffer, view.byteOffset, view.byteLength);
}

/**
 * Rebuilds values for one message to a worker thread with their big plain ArrayBuffers replaced
 * by copies that move with the message (`transfer`), rather than leaving them to be cloned
 * inside it. postMessage clones a message into one buffer of its own on the calling thread, and
 * the thread then copies each block out of that again; for a task whose inputs are 16 blocks of
 * 4 MiB, that buffer is 64 MiB of memory the allocator maps afresh every time (~50 ms of the
 * calling thread: a cluster worker's, which then neither reads its sockets nor serves its peers).
 * A moved copy costs one copy, in pieces the size of the blocks, and nothing on the thread.
 *
 * The thread gets what structured clone would give it: each view as its built-in class with the
 * same offset and length, views that shared a buffer still sharing one, and the arrays (holes
 * kept), Maps, Sets and objects (own enumerable properties) that hold them rebuilt around them.
 * Whatever holds no big plain buffer, shared memory included, is left as it is for the
 * message's clone. The values themselves are not changed: they can be moved again for another
 * message.
 */
export class BufferMover {
  /** The copies to move with the message. */
  readonly transfer: ArrayBuffer[] = [];
  /** Original → its rebuilt form, across every value of the message: identity and cycles survive. */
  private readonly rebuilt = new Map<object, unknown>();

  /** `value` with its big plain buffers as moved copies. Throws RangeError on a value too deep to walk (the caller sends it as it is). */
  move(value: unknown): unknown {
    if (value === null || typeof value !== "object") return value;
    const known = this.rebuilt.get(value);
    if (known !== undefined) return known;
    if (value instanceof ArrayBuffer) return isBigPlainBuffer(value) ? this.copyOf(value) : value;
    if (ArrayBuffer.isView(value)) {
      if (!isBigPlainBuffer(value.buffer)) return value;
      const view = viewOn(value, this.copyOf(value.buffer));
      this.rebuilt.set(value, view);
      return view;
    }
    if (!holdsBigBuffer(value)) return value;
    if (Array.isArray(value)) {
      const array: unknown[] = new Array(value.length);
      this.rebuilt.set(value, array);
      for (let i = 0; i < value.length; i++) if (i in value) array[i] = this.move(value[i]);
      return array;
    }
    if (value instanceof Map) {
      const map = new Map<unknown, unknown>();
      this.rebuilt.set(value, map);
      for (const [key, entry] of value) map.set(this.move(key), this.move(entry));
      return map;
    }
    if (value instanceof Set) {
      const set = new Set<unknown>();
      this.rebuilt.set(value, set);
      for (const entry of value) set.add(this.move(entry));
      return set;
    }
    const record: Record<string, unknown> = {};
    this.rebuilt.set(value, record);
    for (const key of Object.keys(value)) record[key] = this.move((value as Record<string, unknown>)[key]);
    return record;
  }

  private copyOf(buffer: ArrayBuffer): ArrayBuffer {
    const known = this.rebuilt.get(buffer);
    if (known !== undefined) return known as ArrayBuffer;
    const copy = buffer.slice(0);
    this.rebuilt.set(buffer, copy);
    this.transfer.push(copy);
    return copy;
  }
}
