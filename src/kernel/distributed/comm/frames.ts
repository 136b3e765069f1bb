// Values as binary frames, for everything that leaves a process (worker to worker, worker to
// client, Redis): part 0 is V8's serialisation of the value with each binary block replaced by a
// placeholder; parts 1… are the blocks' own bytes, not copied on the sending side and copied
// once on the receiving side. V8's serialiser alone would copy them into its buffer, and refuses
// SharedArrayBuffers, which tsdask/array uses for every block.

import { deserialize, serialize } from "node:v8";
import { type Binary, VIEW_TYPES, ValueRebuilder, type ViewTypeName, isBinary, isSharedMemory, someBinary, viewTypeOf } from "../../execution/buffers";

/** Marks a placeholder object in part 0; a user object would need this exact key to be mistaken for one. */
const FRAME = "\u0000tsdask.frame";

type BinaryKind = ViewTypeName | "Buffer" | "ArrayBuffer";

interface Placeholder {
  readonly [FRAME]: number;
  readonly kind: BinaryKind;
  /**
   * The block lived in a SharedArrayBuffer (worker threads share it rather than copy it); not
   * for shared memory standing in for plain memory (see isSharedMemory), which stays plain.
   */
  readonly shared: boolean;
}

class Encoder {
  readonly frames: Buffer[] = [];
  /** Each block becomes a placeholder, once however often it is reached. */
  private readonly rebuilder = new ValueRebuilder((block) => this.placeholder(block));

  encode(value: unknown): unknown {
    return this.rebuilder.rebuild(value);
  }

  private placeholder(block: Binary): Placeholder {
    let kind: BinaryKind;
    let bytes: Buffer;
    let shared: boolean;
    if (ArrayBuffer.isView(block)) {
      kind = Buffer.isBuffer(block) ? "Buffer" : viewTypeOf(block);
      bytes = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
      shared = isSharedMemory(block.buffer);
    } else {
      kind = "ArrayBuffer";
      bytes = Buffer.from(block);
      shared = isSharedMemory(block);
    }
    this.frames.push(bytes);
    return { [FRAME]: this.frames.length, kind, shared };
  }
}

/**
 * The frames of `value`: what structured clone keeps (plain objects, arrays, Maps, Sets, Dates,
 * errors, primitives, BigInts), with typed arrays, Buffers, DataViews, ArrayBuffers and
 * SharedArrayBuffers as raw byte frames that reference the value's own memory (do not change the
 * value until the frames are written).
 */
export function encodeValue(value: unknown): Buffer[] {
  if (!someBinary(value, () => true)) return [serialize(value)];
  const encoder = new Encoder();
  const skeleton = encoder.encode(value);
  return [serialize(skeleton), ...encoder.frames];
}

export interface DecodeOptions {
  /**
   * Where blocks that were shared memory on the sending side go: true (default) rebuilds them in a
   * SharedArrayBuffer, so this process's worker threads share them as the sender's did; false
   * uses plain ArrayBuffers.
   */
  readonly shared?: boolean;
  /**
   * The parts are fresh memory that nobody else uses (read from a socket or a file with
   * `allocatePart`): a shared block whose part is a whole SharedArrayBuffer then keeps that
   * memory instead of a copy. Default false.
   */
  readonly ownParts?: boolean;
}

/** The value `encodeValue` made `parts` from. Each block is copied once, into memory of its own. */
export function decodeValue(parts: readonly Uint8Array[], options: DecodeOptions = {}): unknown {
  const value = deserialize(parts[0]);
  if (parts.length === 1) return value;
  const decoder = new Decoder(parts, options.shared ?? true, options.ownParts ?? false);
  return decoder.restore(value);
}

class Decoder {
  private readonly visited = new Set<object>();
  private readonly blocks = new Map<number, unknown>();

  constructor(
    private readonly parts: readonly Uint8Array[],
    private readonly shared: boolean,
    private readonly ownParts: boolean,
  ) {}

  /** Replaces placeholders inside `value` (a fresh copy from the deserialiser, so it is changed in place). */
  restore(value: unknown): unknown {
    if (value === null || typeof value !== "object") return value;
    if (FRAME in value) return this.block(value as Placeholder);
    if (this.visited.has(value) || isBinary(value) || value instanceof Error || value instanceof Date) return value;
    this.visited.add(value);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.restore(value[i]);
    } else if (value instanceof Map) {
      const entries = [...value];
      value.clear();
      for (const [k, v] of entries) value.set(this.restore(k), this.restore(v));
    } else if (value instanceof Set) {
      const items = [...value];
      value.clear();
      for (const item of items) value.add(this.restore(item));
    } else {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) record[key] = this.restore(record[key]);
    }
    return value;
  }

  private block(placeholder: Placeholder): unknown {
    const index = placeholder[FRAME];
    const known = this.blocks.get(index);
    if (known !== undefined) return known;
    const bytes = this.parts[index];
    if (bytes === undefined) throw new Error(`tsdask frames: block ${index} is missing (got ${this.parts.length - 1} blocks)`);
    const memory = this.memoryFor(bytes, placeholder.shared && this.shared);
    const block = materialize(placeholder.kind, memory);
    this.blocks.set(index, block);
    return block;
  }

  /** Memory holding exactly `bytes`: the part's own buffer when it is all of one buffer of the wanted kind, else a copy. */
  private memoryFor(bytes: Uint8Array, shared: boolean): ArrayBuffer | SharedArrayBuffer {
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    if (whole && !shared && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
    if (whole && shared && this.ownParts && bytes.buffer instanceof SharedArrayBuffer) return bytes.buffer;
    const memory = shared ? new SharedArrayBuffer(bytes.byteLength) : new ArrayBuffer(bytes.byteLength);
    new Uint8Array(memory).set(bytes);
    return memory;
  }
}

function materialize(kind: BinaryKind, memory: ArrayBuffer | SharedArrayBuffer): unknown {
  switch (kind) {
    case "ArrayBuffer":
      return memory;
    case "Buffer":
      return Buffer.from(memory);
    default: {
      const View = VIEW_TYPES[kind] as unknown as new (buffer: ArrayBufferLike) => ArrayBufferView;
      if (View === undefined) throw new Error(`tsdask frames: unknown block type ${JSON.stringify(kind)}`);
      return new View(memory);
    }
  }
}

/** Bytes the frames occupy (without the connection's length headers). */
export function framesByteLength(parts: readonly Uint8Array[]): number {
  let total = 0;
  for (const part of parts) total += part.byteLength;
  return total;
}

/** Marks, in a part's length in the header, a block that lived in shared memory on the sending side. */
const SHARED_FLAG = 0x8000_0000;
/** Parts are limited to 2 GiB − 1: the length's top bit is the shared-memory flag. */
const MAX_PART_BYTES = SHARED_FLAG - 1;

/**
 * The length header that precedes frames on a socket or in a spill file: the number of parts,
 * then each part's length, as 32-bit little-endian integers. A part that is a view of a
 * SharedArrayBuffer has the top bit of its length set, so the reader can land it in shared
 * memory directly (see `frameLength`).
 */
export function framesHeader(parts: readonly Uint8Array[]): Buffer {
  const header = Buffer.allocUnsafe(4 * (parts.length + 1));
  header.writeUInt32LE(parts.length, 0);
  for (let i = 0; i < parts.length; i++) {
    const length = parts[i].byteLength;
    if (length > MAX_PART_BYTES) throw new RangeError(`tsdask frames: a binary block of ${length} bytes is over the 2 GiB limit of one frame`);
    header.writeUInt32LE(isSharedMemory(parts[i].buffer) ? (length | SHARED_FLAG) >>> 0 : length, 4 * (i + 1));
  }
  return header;
}

/** A part's length and shared-memory flag, as read from a header entry. */
export function frameLength(entry: number): { readonly length: number; readonly shared: boolean } {
  return { length: entry & MAX_PART_BYTES, shared: entry >= SHARED_FLAG };
}

/** Memory for a part `frameLength` describes: shared memory for a shared block, so decoding uses it without a copy. */
export function allocatePart(length: number, shared: boolean): Uint8Array {
  return new Uint8Array(shared ? new SharedArrayBuffer(length) : new ArrayBuffer(length));
}
