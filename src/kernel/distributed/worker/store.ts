// A worker's results: kept in memory with their estimated sizes, the least recently used moved
// to files in the worker's folder when managed memory passes the target (Dask's SpillBuffer),
// and read back transparently. Files hold the values as frames (../comm/frames): typed arrays and
// shared memory are written and read as raw bytes. A value spilled or deleted gives its buffers'
// memory back at once when nobody else can be using it (see Slot.lent).

import { closeSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { OWNED_BUFFER_MIN_BYTES, collectGarbage, holdsPlainStandIn, ownedBuffers, releaseBuffers } from "../../execution/buffers";
import { allocatePart, decodeValue, encodeValue, frameLength, framesByteLength, framesHeader } from "../comm/frames";

/** Where the store reports the time and bytes its disk work cost (a InstructionLedger, say). */
export interface StoreMeter {
  add(activity: string, value: number, unit: string): void;
}

interface Slot {
  readonly nbytes: number;
  /** The value's type name, for task records and transfer logs. */
  readonly type: string;
  /** Set while the value is in memory. */
  value: unknown;
  /** Set while the value is on disk. */
  file: string | undefined;
  diskBytes: number;
  /** Its frames could not be made (a value V8 cannot serialise): it stays in memory. */
  unspillable: boolean;
  /**
   * Handed out by `get` since it was stored: a task's queued inputs, a reply still being written
   * to a socket or a `client.run` function may use its memory, so dropping it leaves that memory
   * to the garbage collector instead of releasing it.
   */
  lent: boolean;
  /** The big buffers the value owns (see ownedBuffers), while it is in memory. */
  buffers: readonly ArrayBuffer[];
  /**
   * The value holds shared memory standing in for plain memory (a result's, see
   * standsInForPlain): only garbage collections (this thread's and the task threads') give it back.
   */
  standsIn: boolean;
}

const NO_METER: StoreMeter = { add() {} };

export class DataStore {
  /** In memory, least recently used first (a Map keeps insertion order). */
  private readonly memory = new Map<string, Slot>();
  private readonly disk = new Map<string, Slot>();
  private fileCounter = 0;
  /** Σ nbytes of the values in memory. */
  managedBytes = 0;
  /** Σ nbytes of the values on disk, and the bytes their files take. */
  spilledBytes = 0;
  spilledDiskBytes = 0;
  /** Values were dropped whose memory only a garbage collection gives back (they had been lent, or held stand-ins). */
  awaitsCollection = false;
  /** `put` spilled values held in stand-ins for plain memory (see collectSpilledStandIns). */
  private spilledStandIns = false;
  /**
   * How many values in memory hold each big buffer: one buffer in two results (a task that
   * returned the same array under two keys, say) is given back with the last of them.
   */
  private readonly holders = new WeakMap<ArrayBuffer, number>();

  /**
   * `directory`: the worker's own folder (it exists). `target`: managed bytes above which values
   * are spilled, least recently used first (Infinity: never).
   */
  constructor(
    private readonly directory: string,
    readonly target: number,
  ) {}

  get size(): number {
    return this.memory.size + this.disk.size;
  }

  has(key: string): boolean {
    return this.memory.has(key) || this.disk.has(key);
  }

  isSpilled(key: string): boolean {
    return this.disk.has(key);
  }

  nbytesOf(key: string): number | undefined {
    return (this.memory.get(key) ?? this.disk.get(key))?.nbytes;
  }

  typeOf(key: string): string | undefined {
    return (this.memory.get(key) ?? this.disk.get(key))?.type;
  }

  keys(): string[] {
    return [...this.memory.keys(), ...this.disk.keys()];
  }

  /** Keys in memory and on disk. */
  layout(): { memory: string[]; disk: string[] } {
    return { memory: [...this.memory.keys()], disk: [...this.disk.keys()] };
  }

  /**
   * Stores a value (replacing any under the same key), which the store owns from now on: the
   * caller keeps no reference to it. A value larger than the target alone goes straight to disk;
   * otherwise older values are spilled first, so that managed memory never passes the target.
   * Disk work is reported to `meter`.
   */
  put(key: string, value: unknown, nbytes: number, type: string, meter: StoreMeter = NO_METER): void {
    this.delete(key);
    const slot: Slot = { nbytes, type, value, file: undefined, diskBytes: 0, unspillable: false, lent: false, buffers: [], standsIn: false };
    this.hold(slot);
    if (nbytes > this.target && this.spill(key, slot, meter)) {
      this.collectSpilledStandIns();
      return;
    }
    this.evictDownTo(this.target - nbytes, meter);
    this.toMemory(key, slot);
    this.collectSpilledStandIns();
  }

  /** The value of `key`, read back from disk if it was spilled (it then counts as recently used). */
  get(key: string, meter: StoreMeter = NO_METER): unknown {
    const inMemory = this.memory.get(key);
    if (inMemory !== undefined) {
      this.memory.delete(key);
      this.memory.set(key, inMemory);
      inMemory.lent = true;
      meter.add("memory-read", 1, "count");
      meter.add("memory-read", inMemory.nbytes, "bytes");
      return inMemory.value;
    }
    const slot = this.disk.get(key);
    if (slot === undefined) throw new Error(`No data for key ${JSON.stringify(key)} on this worker`);
    const value = this.readBack(slot, meter);
    if (slot.nbytes <= this.target) {
      this.disk.delete(key);
      this.spilledBytes -= slot.nbytes;
      this.spilledDiskBytes -= slot.diskBytes;
      rmSync(slot.file!, { force: true });
      slot.file = undefined;
      slot.diskBytes = 0;
      slot.value = value;
      slot.lent = true;
      this.hold(slot);
      this.toMemory(key, slot);
      this.evictDownTo(this.target, meter, key);
    }
    return value;
  }

  delete(key: string): boolean {
    const inMemory = this.memory.get(key);
    if (inMemory !== undefined) {
      this.memory.delete(key);
      this.managedBytes -= inMemory.nbytes;
      this.drop(inMemory);
      return true;
    }
    const slot = this.disk.get(key);
    if (slot === undefined) return false;
    this.disk.delete(key);
    this.spilledBytes -= slot.nbytes;
    this.spilledDiskBytes -= slot.diskBytes;
    rmSync(slot.file!, { force: true });
    return true;
  }

  /** Spills the least recently used value that can be; its nbytes, or 0 if none could. */
  spillOldest(meter: StoreMeter = NO_METER): number {
    for (const [key, slot] of this.memory) {
      if (slot.unspillable) continue;
      this.memory.delete(key);
      this.managedBytes -= slot.nbytes;
      if (this.spill(key, slot, meter)) return slot.nbytes;
      this.toMemory(key, slot);
    }
    return 0;
  }

  /** Removes every spill file (the worker removes its folder next). */
  close(): void {
    for (const slot of this.disk.values()) rmSync(slot.file!, { force: true });
    this.disk.clear();
    this.memory.clear();
    this.managedBytes = this.spilledBytes = this.spilledDiskBytes = 0;
  }

  private toMemory(key: string, slot: Slot): void {
    this.memory.set(key, slot);
    this.managedBytes += slot.nbytes;
  }

  /** Spills least recently used values (never `keep`) while managed memory exceeds `limit`. */
  private evictDownTo(limit: number, meter: StoreMeter, keep?: string): void {
    if (this.managedBytes <= limit) return;
    for (const [key, slot] of this.memory) {
      if (this.managedBytes <= limit) return;
      if (key === keep || slot.unspillable) continue;
      this.memory.delete(key);
      this.managedBytes -= slot.nbytes;
      if (!this.spill(key, slot, meter)) this.toMemory(key, slot);
    }
  }

  /** Writes `slot`'s value to a file of its own; false (and marked unspillable) if it has no frames. */
  private spill(key: string, slot: Slot, meter: StoreMeter): boolean {
    let parts: Buffer[];
    const serializeStart = performance.now();
    try {
      parts = encodeValue(slot.value);
    } catch {
      slot.unspillable = true;
      return false;
    }
    meter.add("serialize", (performance.now() - serializeStart) / 1000, "seconds");
    const writeStart = performance.now();
    const file = join(this.directory, `spill-${++this.fileCounter}`);
    const header = framesHeader(parts);
    // Spilled results are the user's data: readable by this user only.
    const fd = openSync(file, "w", 0o600);
    try {
      writeAll(fd, header);
      for (const part of parts) writeAll(fd, part);
    } finally {
      closeSync(fd);
    }
    const diskBytes = header.length + framesByteLength(parts);
    meter.add("disk-write", (performance.now() - writeStart) / 1000, "seconds");
    meter.add("disk-write", 1, "count");
    meter.add("disk-write", diskBytes, "bytes");
    if (slot.standsIn) this.spilledStandIns = true;
    this.drop(slot);
    slot.file = file;
    slot.diskBytes = diskBytes;
    this.disk.set(key, slot);
    this.spilledBytes += slot.nbytes;
    this.spilledDiskBytes += diskBytes;
    return true;
  }

  /** Counts the big buffers of a slot's value, now in memory. */
  private hold(slot: Slot): void {
    // A value with a buffer worth releasing is at least that big: smaller ones are not searched.
    const big = slot.nbytes >= OWNED_BUFFER_MIN_BYTES;
    slot.buffers = big ? ownedBuffers(slot.value) : [];
    slot.standsIn = big && holdsPlainStandIn(slot.value);
    for (const buffer of slot.buffers) this.holders.set(buffer, (this.holders.get(buffer) ?? 0) + 1);
  }

  /**
   * Spilling values held in stand-ins for plain memory (see Slot.standsIn) is to give their memory
   * back as a spilled plain value's is, before the next result lands: only a collection does that.
   */
  private collectSpilledStandIns(): void {
    if (!this.spilledStandIns) return;
    this.spilledStandIns = false;
    collectGarbage();
    this.awaitsCollection = false;
  }

  /** Lets go of an in-memory slot's value, giving its memory back at once if nobody else can hold it. */
  private drop(slot: Slot): void {
    const unheld: ArrayBuffer[] = [];
    for (const buffer of slot.buffers) {
      const left = (this.holders.get(buffer) ?? 1) - 1;
      if (left > 0) {
        this.holders.set(buffer, left);
      } else {
        this.holders.delete(buffer);
        unheld.push(buffer);
      }
    }
    if (slot.lent || slot.standsIn) this.awaitsCollection = true;
    if (!slot.lent) releaseBuffers(unheld);
    slot.value = undefined;
    slot.buffers = [];
  }

  private readBack(slot: Slot, meter: StoreMeter): unknown {
    const readStart = performance.now();
    const fd = openSync(slot.file!, "r");
    const parts: Uint8Array[] = [];
    try {
      const count = Buffer.from(readExactly(fd, allocatePart(4, false), 0).buffer).readUInt32LE(0);
      const header = Buffer.from(readExactly(fd, allocatePart(4 * count, false), 4).buffer);
      let position = 4 * (count + 1);
      for (let i = 0; i < count; i++) {
        const { length, shared } = frameLength(header.readUInt32LE(4 * i));
        // Each part in memory of its own (shared memory for shared blocks), which decoding keeps as it is.
        parts.push(readExactly(fd, allocatePart(length, shared), position));
        position += length;
      }
    } finally {
      closeSync(fd);
    }
    meter.add("disk-read", (performance.now() - readStart) / 1000, "seconds");
    meter.add("disk-read", 1, "count");
    meter.add("disk-read", slot.diskBytes, "bytes");
    const decodeStart = performance.now();
    const value = decodeValue(parts, { ownParts: true });
    meter.add("deserialize", (performance.now() - decodeStart) / 1000, "seconds");
    return value;
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset, bytes.byteLength - offset);
}

/** Fills `bytes` from the file at `position`. */
function readExactly(fd: number, bytes: Uint8Array, position: number): Uint8Array {
  for (let offset = 0; offset < bytes.length; ) {
    const read = readSync(fd, bytes, offset, bytes.length - offset, position + offset);
    if (read === 0) throw new Error(`Spill file ended early (wanted ${bytes.length} bytes at ${position})`);
    offset += read;
  }
  return bytes;
}
