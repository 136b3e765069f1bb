// The big ArrayBuffers a value owns outright, so their memory can be moved to another thread
// (a transfer list) or given back at once (a cluster worker's spilled results), instead of being
// copied, or left for a garbage collection that a quiet thread may not run for a long time.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { MessageChannel, type MessagePort } from "node:worker_threads";

/**
 * Smaller buffers are left alone: copying them costs less than moving them, and the garbage
 * collector reclaims them soon enough.
 */
export const OWNED_BUFFER_MIN_BYTES = 64 * 1024;

/** A block of binary data: what structured clone copies as bytes (or shares, for shared memory). */
export type Binary = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;

export function isBinary(value: object): value is Binary {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof SharedArrayBuffer;
}

/**
 * Calls `visit` with each binary block inside `value` (itself, or in plain objects, arrays, Maps
 * and Sets: where structured clone looks), each object once, until `visit` returns true.
 * Returns whether one did.
 */
export function someBinary(value: unknown, visit: (binary: Binary) => boolean | void): boolean {
  const visited = new Set<object>();
  // A work list, not recursion: a deep value must not overflow the stack.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (item === null || typeof item !== "object" || visited.has(item)) continue;
    visited.add(item);
    if (isBinary(item)) {
      if (visit(item) === true) return true;
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

/**
 * Rebuilds a value for another thread or process around its binary blocks: `replace` decides
 * what each block becomes; plain objects (own enumerable properties), arrays (holes kept), Maps
 * and Sets are rebuilt where `descend` says so (everywhere by default) and left as they are
 * elsewhere, as are errors, dates and regular expressions. An object reached twice is rebuilt
 * once, so shared references stay shared and cycles finite. Recursive: a value too deep throws
 * RangeError.
 */
export class ValueRebuilder {
  /** Original → its rebuilt form. */
  private readonly rebuilt = new Map<object, unknown>();

  constructor(
    private readonly replace: (binary: Binary) => unknown,
    private readonly descend: (value: object) => boolean = () => true,
  ) {}

  rebuild(value: unknown): unknown {
    if (value === null || typeof value !== "object") return value;
    const known = this.rebuilt.get(value);
    if (known !== undefined) return known;
    if (isBinary(value)) return this.remember(value, this.replace(value));
    if (value instanceof Error || value instanceof Date || value instanceof RegExp || !this.descend(value)) return value;
    if (Array.isArray(value)) {
      const array: unknown[] = this.remember(value, new Array(value.length));
      for (let i = 0; i < value.length; i++) if (i in value) array[i] = this.rebuild(value[i]);
      return array;
    }
    if (value instanceof Map) {
      const map = this.remember(value, new Map<unknown, unknown>());
      for (const [key, entry] of value) map.set(this.rebuild(key), this.rebuild(entry));
      return map;
    }
    if (value instanceof Set) {
      const set = this.remember(value, new Set<unknown>());
      for (const entry of value) set.add(this.rebuild(entry));
      return set;
    }
    const record = this.remember(value, {} as Record<string, unknown>);
    for (const key of Object.keys(value)) record[key] = this.rebuild((value as Record<string, unknown>)[key]);
    return record;
  }

  private remember<T>(original: object, rebuilt: T): T {
    this.rebuilt.set(original, rebuilt);
    return rebuilt;
  }
}

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
  someBinary(value, (item) => {
    if (item instanceof ArrayBuffer) {
      whole.add(item);
    } else if (ArrayBuffer.isView(item) && item.buffer instanceof ArrayBuffer) {
      if (item.byteOffset === 0 && item.byteLength === item.buffer.byteLength) whole.add(item.buffer);
      else partial.add(item.buffer);
    }
  });
  return [...whole].filter((buffer) => !partial.has(buffer) && buffer.byteLength >= OWNED_BUFFER_MIN_BYTES);
}

/** The ArrayBuffer a message to another thread would copy: plain (not shared), not resizable, and big. */
function isBigPlainBuffer(buffer: ArrayBufferLike): buffer is ArrayBuffer {
  return buffer instanceof ArrayBuffer && buffer.byteLength >= OWNED_BUFFER_MIN_BYTES && (buffer as { resizable?: boolean }).resizable !== true;
}

/** The buffer behind a binary block. */
function bufferOf(binary: Binary): ArrayBufferLike {
  return ArrayBuffer.isView(binary) ? binary.buffer : binary;
}

/**
 * Whether `value` holds what a task thread must get as plain memory of its own: a big plain
 * ArrayBuffer (see isBigPlainBuffer) or shared memory standing in for one (see standsInForPlain),
 * itself or through a view, anywhere structured clone reaches.
 */
export function holdsBigBuffer(value: unknown): boolean {
  return someBinary(value, (binary) => {
    const buffer = bufferOf(binary);
    return isBigPlainBuffer(buffer) || standsInForPlain(buffer);
  });
}

// ---- Plain memory kept in shared memory --------------------------------------------------------

/**
 * Shared memory standing in for a plain ArrayBuffer. A cluster worker keeps the big plain
 * buffers of its results in shared memory (the task thread that made one copied it there, see
 * inSharedMemory), so that its task threads take them without a copy on the worker's main thread,
 * which meanwhile serves its peers. Whoever gets such a value gets plain memory again, as if it
 * had never been shared: a task (its thread copies it, see PlainRestorer), a peer or the client
 * (frames mark it plain, see isSharedMemory), a `client.run` function.
 */
const plainStandIns = new WeakSet<SharedArrayBuffer>();

/** Marks `buffers` as standing in for plain ones (a task thread made them so; see inSharedMemory). */
export function markPlainStandIns(buffers: readonly SharedArrayBuffer[]): void {
  for (const buffer of buffers) plainStandIns.add(buffer);
}

/** Whether `buffer` is shared memory standing in for a plain ArrayBuffer (see markPlainStandIns). */
export function standsInForPlain(buffer: ArrayBufferLike): buffer is SharedArrayBuffer {
  return buffer instanceof SharedArrayBuffer && plainStandIns.has(buffer);
}

/** Whether `buffer` is shared memory that its owner shares on purpose (not a stand-in for plain memory). */
export function isSharedMemory(buffer: ArrayBufferLike): buffer is SharedArrayBuffer {
  return buffer instanceof SharedArrayBuffer && !plainStandIns.has(buffer);
}

/** Whether `value` holds shared memory standing in for plain memory (see standsInForPlain). */
export function holdsPlainStandIn(value: unknown): boolean {
  return someBinary(value, (binary) => standsInForPlain(bufferOf(binary)));
}

/**
 * The largest buffer a task thread copies into a stand-in (see inSharedMemory). While it copies,
 * the buffer is in memory twice: a worker near its memory limit with results of 64 MB would come
 * near a restart. A bigger buffer moves to the worker as it is, and its local tasks get a copy
 * made on the worker's main thread: for so big a block, the copy is the lesser cost.
 */
export const STAND_IN_MAX_BYTES = 16 * 2 ** 20;

/**
 * `value` with the big buffers it owns (see ownedBuffers) up to STAND_IN_MAX_BYTES copied into
 * shared memory, for a task thread to hand its result to a cluster worker's main thread: the copy
 * is made here, on the task thread, and the originals are released (detached), as a moved
 * result's would be. `standIns` gets the shared buffers, for the receiver to mark
 * (markPlainStandIns); `moved` the bigger owned buffers, to move with the message. A value too
 * deep to walk is returned as it is, its owned buffers all in `moved`.
 */
export function inSharedMemory(value: unknown, standIns: SharedArrayBuffer[], moved: ArrayBuffer[]): unknown {
  const owned = ownedBuffers(value);
  const copied = owned.filter((buffer) => buffer.byteLength <= STAND_IN_MAX_BYTES);
  moved.push(...owned.filter((buffer) => buffer.byteLength > STAND_IN_MAX_BYTES));
  if (copied.length === 0) return value;
  const copies = new Map<ArrayBufferLike, SharedArrayBuffer>();
  for (const buffer of copied) {
    const shared = new SharedArrayBuffer(buffer.byteLength);
    new Uint8Array(shared).set(new Uint8Array(buffer));
    copies.set(buffer, shared);
  }
  let rebuilt: unknown;
  try {
    rebuilt = rebuiltOn(value, (buffer) => copies.has(buffer), (buffer) => copies.get(buffer)!);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    moved.push(...copied);
    return value;
  }
  standIns.push(...copies.values());
  releaseBuffers(copied);
  return rebuilt;
}

/**
 * Gives plain memory back for shared memory standing in for it: each stand-in is copied once into
 * a fresh ArrayBuffer, and the views on it are rebuilt there with their built-in class, offset and
 * length. A task thread does this with the stand-ins its message named; a worker's main thread
 * with its marked ones, for a `client.run` function.
 */
export class PlainRestorer {
  private readonly copies = new Map<ArrayBufferLike, ArrayBuffer>();

  /** `isStandIn`: which shared buffers stand in for plain ones (default: those marked here). */
  constructor(private readonly isStandIn: (buffer: ArrayBufferLike) => boolean = standsInForPlain) {}

  /** `value` with its stand-ins replaced by plain copies; what holds none, or is too deep to walk, is returned as it is. */
  restore(value: unknown): unknown {
    try {
      return rebuiltOn(value, this.isStandIn, (buffer) => this.plainCopy(buffer));
    } catch (error) {
      if (error instanceof RangeError) return value;
      throw error;
    }
  }

  private plainCopy(buffer: ArrayBufferLike): ArrayBuffer {
    let copy = this.copies.get(buffer);
    if (copy === undefined) {
      copy = new ArrayBuffer(buffer.byteLength);
      new Uint8Array(copy).set(new Uint8Array(buffer));
      this.copies.set(buffer, copy);
    }
    return copy;
  }
}

/** `value` rebuilt with each block on a buffer that `replaced` picks moved onto `replacement` of it (see viewOn). */
function rebuiltOn(value: unknown, replaced: (buffer: ArrayBufferLike) => boolean, replacement: (buffer: ArrayBufferLike) => ArrayBufferLike): unknown {
  const rebuilder = new ValueRebuilder(
    (binary) => {
      const buffer = bufferOf(binary);
      if (!replaced(buffer)) return binary;
      const copy = replacement(buffer);
      return ArrayBuffer.isView(binary) ? viewOn(binary, copy) : copy;
    },
    (item) => someBinary(item, (binary) => replaced(bufferOf(binary))),
  );
  return rebuilder.rebuild(value);
}

let fullCollection: (() => void) | undefined;

/**
 * Runs V8's full garbage collection now. Spilled values leave memory only when collected, and
 * a paused worker allocates nothing that would trigger a collection; without this its process
 * memory would stay high, and it paused, after its results went to disk. Exposing `gc` this way
 * is V8's documented flag, set at run time because the worker's command line is the nanny's.
 */
export function collectGarbage(): void {
  if (fullCollection === undefined) {
    setFlagsFromString("--expose-gc");
    fullCollection = runInNewContext("gc") as () => void;
  }
  fullCollection();
}

/** A port closed as soon as it is made (see releaseBuffers). */
let closedPort: MessagePort | undefined;

/**
 * Gives the memory of `buffers` back now (they are detached: empty from here on). V8 frees an
 * ArrayBuffer's memory only when a garbage collection finds it unreachable, and then on a
 * background thread; a worker that just wrote a result to disk needs that memory back before its
 * next result lands. Posting a message on a closed port still takes its transfer list (the HTML
 * spec's postMessage detaches before it looks at the port) and then drops the message, and with
 * it the buffers' memory, before returning.
 */
export function releaseBuffers(buffers: readonly ArrayBuffer[]): void {
  if (buffers.length === 0) return;
  if (closedPort === undefined) {
    closedPort = new MessageChannel().port1;
    closedPort.close();
  }
  closedPort.postMessage(null, buffers as ArrayBuffer[]);
}

/** The built-in view classes by name: a view of a subclass (a Buffer, say) travels as its built-in base. */
export const VIEW_TYPES = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  DataView,
} as const;
export type ViewTypeName = keyof typeof VIEW_TYPES;

/** The built-in view class of `view`. */
export function viewTypeOf(view: ArrayBufferView): ViewTypeName {
  for (const name of Object.keys(VIEW_TYPES) as ViewTypeName[]) if (view instanceof VIEW_TYPES[name]) return name;
  return "Uint8Array";
}

/** A view of `view`'s built-in class, offset and length, on `buffer`: what structured clone makes of it. */
function viewOn(view: ArrayBufferView, buffer: ArrayBufferLike): ArrayBufferView {
  const name = viewTypeOf(view);
  // Views take shared memory as well; TypeScript's union of their constructors accepts ArrayBuffer only.
  const memory = buffer as ArrayBuffer;
  if (name === "DataView") return new DataView(memory, view.byteOffset, view.byteLength);
  const View = VIEW_TYPES[name];
  return new View(memory, view.byteOffset, view.byteLength / View.BYTES_PER_ELEMENT);
}

/**
 * Rebuilds values for one message to a worker thread with their big plain ArrayBuffers replaced
 * by copies that move with the message (`transfer`), rather than leaving them to be cloned
 * inside it. postMessage clones a message into one buffer of its own on the calling thread, and
 * the thread then copies each block out of that again: two copies into fresh memory, the first
 * on the calling thread (a cluster worker's, which meanwhile neither reads its sockets nor serves
 * its peers). A moved copy is one copy, and nothing on the thread. Fresh memory costs its page
 * faults either way (on this project's 2-core machine a copy into it runs at ~1.5 GB/s against
 * ~6 GB/s into memory already mapped), so the calling thread gains less than half: handing a
 * consumer its 16 blocks of 4 MiB in bench/redis-data took ~25 % less of it.
 *
 * The thread gets what structured clone would give it: each view as its built-in class with the
 * same offset and length, views that shared a buffer still sharing one, and the arrays, Maps,
 * Sets and objects that hold them rebuilt around them (see ValueRebuilder). Whatever holds no big
 * plain buffer, shared memory included, is left as it is for the message's clone. The values
 * themselves are not changed: they can be moved again for another message. Shared memory standing
 * in for plain memory (see standsInForPlain) is shared with the thread, uncopied here, and listed
 * in `standIns` for the thread to copy into plain memory of its own (see PlainRestorer).
 */
export class BufferMover {
  /** The copies (and given buffers) to move with the message. */
  readonly transfer: ArrayBuffer[] = [];
  /** The stand-ins for plain memory the message shares. */
  readonly standIns = new Set<SharedArrayBuffer>();
  /** Each big buffer's copy, across every value of the message (a given buffer is its own). */
  private readonly copies = new Map<ArrayBuffer, ArrayBuffer>();
  private readonly rebuilder = new ValueRebuilder((binary) => this.moved(binary), holdsBigBuffer);

  /**
   * `given`: buffers nobody else uses (a task's inputs fetched for it alone): they move with the
   * message themselves, uncopied, and are detached (empty) on this side afterwards.
   */
  constructor(private readonly given: ReadonlySet<ArrayBuffer> = new Set()) {}

  /** `value` with its big plain buffers as moved copies. Throws RangeError on a value too deep to walk (the caller sends it as it is). */
  move(value: unknown): unknown {
    return this.rebuilder.rebuild(value);
  }

  private moved(binary: Binary): unknown {
    const buffer = bufferOf(binary);
    if (standsInForPlain(buffer)) {
      this.standIns.add(buffer);
      return binary;
    }
    if (!isBigPlainBuffer(buffer)) return binary;
    let copy = this.copies.get(buffer);
    if (copy === undefined) {
      copy = this.given.has(buffer) ? buffer : buffer.slice(0);
      this.copies.set(buffer, copy);
      this.transfer.push(copy);
    }
    return ArrayBuffer.isView(binary) ? viewOn(binary, copy) : copy;
  }
}
