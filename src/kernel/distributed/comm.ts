// A message connection over a Unix domain socket, for LocalCluster (the scheduler in the client's
// process ↔ its workers, and worker ↔ worker for peer data). Each message is one value in frames
// (./frames): a header of 32-bit lengths — the number of parts, then each part's length — and
// the parts. Parts are written as they are (typed-array contents go to the socket uncopied) and
// each received part lands in memory of its own, ready to back a typed array.

import { EventEmitter } from "node:events";
import { type Server, type Socket, createConnection, createServer } from "node:net";
import { decodeValue, encodeValue, framesByteLength, framesHeader } from "./frames";

/** Anything longer is a corrupt stream, not a message (4 GiB per part, 1 M parts). */
const MAX_PARTS = 1 << 20;

export interface ConnectionEvents {
  /** A message arrived; `bytes` is its size on the wire, `decodeSeconds` the time its frames took to decode. */
  message: [value: unknown, bytes: number, decodeSeconds: number];
  /** The socket closed; `error` when it broke rather than ended. */
  close: [error: Error | undefined];
}

export class Connection extends EventEmitter<ConnectionEvents> {
  private readonly reader = new MessageReader();
  private closedWith: Error | undefined | null = null;

  constructor(private readonly socket: Socket) {
    super();
    socket.setNoDelay?.(true);
    socket.on("data", (chunk: Buffer) => {
      try {
        this.reader.push(chunk, (parts, bytes) => {
          const decodeStart = performance.now();
          const value = decodeValue(parts);
          this.emit("message", value, bytes, (performance.now() - decodeStart) / 1000);
        });
      } catch (error) {
        socket.destroy(error as Error);
      }
    });
    let failure: Error | undefined;
    socket.on("error", (error) => (failure = error));
    socket.on("close", () => {
      this.closedWith = failure;
      this.emit("close", failure);
    });
  }

  /** Connects to a listening socket; rejects with an error naming the path. */
  static connect(path: string): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(path);
      const onError = (error: Error): void => reject(new Error(`Cannot connect to ${path}: ${error.message}`, { cause: error }));
      socket.once("error", onError);
      socket.once("connect", () => {
        socket.off("error", onError);
        resolve(new Connection(socket));
      });
    });
  }

  get closed(): boolean {
    return this.closedWith !== null || this.socket.destroyed;
  }

  /** Sends one value; returns the bytes it takes on the wire. Throws if the connection is closed. */
  send(value: unknown): number {
    return this.sendFrames(encodeValue(value));
  }

  /**
   * Sends a value already encoded with `encodeValue` (so the caller can time the encoding);
   * returns the bytes on the wire. `onWritten` is called once the last byte was handed to the
   * operating system (or with the error that stopped it).
   */
  sendFrames(parts: readonly Buffer[], onWritten?: (error?: Error) => void): number {
    if (this.closed) throw new Error("Cannot send: the connection is closed");
    const header = framesHeader(parts);
    const bytes = header.length + framesByteLength(parts);
    const written = onWritten === undefined ? undefined : (error?: Error | null): void => onWritten(error ?? undefined);
    const nonEmpty = parts.filter((part) => part.byteLength > 0);
    this.socket.cork();
    this.socket.write(header, nonEmpty.length === 0 ? written : undefined);
    nonEmpty.forEach((part, i) => this.socket.write(part, i === nonEmpty.length - 1 ? written : undefined));
    this.socket.uncork();
    return bytes;
  }

  /** Bytes queued in this process and not yet handed to the OS (back-pressure). */
  get pendingBytes(): number {
    return this.socket.writableLength;
  }

  /** Whether this connection alone may keep the process alive. */
  setKeepsAlive(keep: boolean): void {
    if (keep) this.socket.ref();
    else this.socket.unref();
  }

  close(): void {
    this.socket.end();
    this.socket.destroySoon();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Listens on `path` (a socket file, which must not exist yet); calls `onConnection` for each peer. */
export function listen(path: string, onConnection: (connection: Connection) => void): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => onConnection(new Connection(socket)));
    server.once("error", (error) => reject(new Error(`Cannot listen on ${path}: ${error.message}`, { cause: error })));
    server.listen(path, () => resolve(server));
  });
}

/** Cuts the byte stream into messages: header (part count, part lengths), then the parts. */
class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Part lengths of the message being read, once its header is complete. */
  private lengths: number[] | undefined;
  private parts: Uint8Array[] = [];
  /** Bytes already copied into the part being filled. */
  private filled = 0;
  private messageBytes = 0;

  push(chunk: Buffer, onMessage: (parts: Uint8Array[], bytes: number) => void): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.lengths === undefined && !this.readHeader()) return;
      if (!this.fillParts()) return;
      const parts = this.parts;
      const bytes = this.messageBytes;
      this.lengths = undefined;
      this.parts = [];
      onMessage(parts, bytes);
    }
  }

  private readHeader(): boolean {
    if (this.buffered < 4) return false;
    const count = this.peekUInt32(0);
    if (count === 0 || count > MAX_PARTS) throw new Error(`Corrupt message stream: ${count} parts`);
    const headerBytes = 4 * (count + 1);
    if (this.buffered < headerBytes) return false;
    const header = this.take(headerBytes);
    this.lengths = [];
    this.messageBytes = headerBytes;
    for (let i = 1; i <= count; i++) {
      const length = header.readUInt32LE(4 * i);
      this.lengths.push(length);
      this.messageBytes += length;
    }
    this.parts = [];
    this.filled = 0;
    return true;
  }

  /** Copies buffered bytes into the parts; true when all parts are complete. */
  private fillParts(): boolean {
    const lengths = this.lengths!;
    for (;;) {
      const current = this.parts[this.parts.length - 1];
      if (current !== undefined && this.filled < current.length) {
        if (this.buffered === 0) return false;
        const chunk = this.chunks[0];
        const n = Math.min(chunk.length, current.length - this.filled);
        current.set(chunk.subarray(0, n), this.filled);
        this.filled += n;
        this.consume(n);
        continue;
      }
      if (this.parts.length === lengths.length) return true;
      // Each part gets an ArrayBuffer of its own, so a typed array can use it as it is.
      this.parts.push(new Uint8Array(new ArrayBuffer(lengths[this.parts.length])));
      this.filled = 0;
    }
  }

  private peekUInt32(offset: number): number {
    if (this.chunks[0].length >= offset + 4) return this.chunks[0].readUInt32LE(offset);
    return Buffer.concat(this.chunks).readUInt32LE(offset);
  }

  private take(n: number): Buffer {
    if (this.chunks[0].length < n) this.chunks = [Buffer.concat(this.chunks)];
    const taken = this.chunks[0].subarray(0, n);
    this.consume(n);
    return taken;
  }

  private consume(n: number): void {
    this.buffered -= n;
    const first = this.chunks[0];
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
  }
}
