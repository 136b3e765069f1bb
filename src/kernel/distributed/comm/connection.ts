// A message connection over a Unix domain socket, for LocalCluster (the scheduler in the client's
// process ↔ its workers, and worker ↔ worker for peer data), or over TCP, optionally under TLS,
// to a Redis worker's data listener (./listen), which first wants the handshake of ./handshake.
// Each message is one value in frames (./frames): a header of 32-bit lengths — the number of
// parts, then each part's length (top bit: a shared-memory block) — and the parts. Parts are
// written as they are (typed-array contents go to the socket uncopied) and each received part
// lands in memory of its own, shared memory for shared blocks, ready to back a typed array. On
// the connecting side the socket reads straight into that memory; a listening side's sockets
// cannot, and copy from Node's read chunks.

import { EventEmitter } from "node:events";
import { chmodSync } from "node:fs";
import { type Server, type Socket, createConnection, createServer, isIP } from "node:net";
import { type ConnectionOptions as TlsOptions, connect as connectTls } from "node:tls";
import { type CommAddress, formatCommAddress } from "./address";
import { PeerHandshake, type PeerSecret } from "./handshake";
import { allocatePart, decodeValue, encodeValue, frameLength, framesByteLength, framesHeader } from "./frames";

/** Anything longer is a corrupt stream, not a message (1 M parts). */
const MAX_PARTS = 1 << 20;
/** Where the connecting side reads headers and small parts. */
const SCRATCH_BYTES = 64 * 1024;
/** Seconds a connection may take to be set up: TCP, TLS and the handshake (a frozen peer does not hold a fetch forever). */
export const CONNECT_TIMEOUT = 10;

/** What a peer shows a data listener: the client it acts for, and that client's secret. */
export interface PeerCredentials {
  readonly clientId: string;
  readonly secret: PeerSecret;
}

export interface ConnectOptions {
  /** For tls:// addresses: the CA that signed the listener's certificate, say; merged over Node's defaults. */
  readonly tls?: TlsOptions;
  /** Required by tcp:// and tls:// listeners (see ./handshake); unix:// ones take none. */
  readonly credentials?: PeerCredentials;
  /** Seconds (default CONNECT_TIMEOUT). */
  readonly timeout?: number;
}

export interface ConnectionEvents {
  /** A message arrived; `bytes` is its size on the wire, `decodeSeconds` the time its frames took to decode. */
  message: [value: unknown, bytes: number, decodeSeconds: number];
  /** The socket closed; `error` when it broke rather than ended. */
  close: [error: Error | undefined];
}

export class Connection extends EventEmitter<ConnectionEvents> {
  private closedWith: Error | undefined | null = null;

  /** `reader`: given when the socket reads into the reader's memory itself (see `connect`). */
  constructor(
    private readonly socket: Socket,
    reader = new MessageReader(),
  ) {
    super();
    socket.setNoDelay?.(true);
    reader.onMessage = (parts, bytes) => {
      const decodeStart = performance.now();
      const value = decodeValue(parts, { ownParts: true });
      this.emit("message", value, bytes, (performance.now() - decodeStart) / 1000);
    };
    reader.onError = (error) => socket.destroy(error);
    socket.on("data", (chunk: Buffer) => reader.push(chunk));
    let failure: Error | undefined;
    socket.on("error", (error) => (failure = error));
    socket.on("timeout", () => socket.destroy(new Error(`nothing sent or received for ${socket.timeout! / 1000} s`)));
    socket.on("close", () => {
      this.closedWith = failure;
      this.emit("close", failure);
    });
  }

  /**
   * Breaks the connection (a "close" with an error) once `seconds` pass with no byte sent or
   * received; 0 turns it off. For a peer awaited for a reply: a frozen one then fails the wait.
   */
  setIdleTimeout(seconds: number): void {
    this.socket.setTimeout(seconds * 1000);
  }

  /** Connects to a listening socket file; rejects with an error naming the path. */
  static connect(path: string): Promise<Connection> {
    return Connection.connectTo({ scheme: "unix", path });
  }

  /**
   * Connects to `address`, with the handshake when `options.credentials` are given; rejects with
   * an error naming the address (the path, for unix://).
   */
  static connectTo(address: CommAddress, options: ConnectOptions = {}): Promise<Connection> {
    const shown = address.scheme === "unix" ? address.path : formatCommAddress(address);
    if (address.scheme !== "unix" && options.credentials === undefined) {
      return Promise.reject(new Error(`Cannot connect to ${shown}: a network data listener wants a client's credentials (its id and peer secret)`));
    }
    return new Promise((resolve, reject) => {
      const reader = new MessageReader();
      const handshake = options.credentials === undefined ? undefined : new PeerHandshake(options.credentials.clientId, options.credentials.secret);
      let handshaking = handshake !== undefined;
      const handshakeBuffer = new Uint8Array(256);
      let socket: Socket;
      const fail = (reason: string, cause?: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(new Error(`Cannot connect to ${shown}: ${reason}`, { cause }));
      };
      const accepted = (): void => {
        clearTimeout(timer);
        socket.off("error", onError);
        socket.off("close", onClose);
        resolve(new Connection(socket, reader));
      };
      // Node reads into the memory the reader names: message parts land where they will stay, uncopied.
      // The handshake's few bytes come first, into a buffer of their own.
      const onread = {
        buffer: () => (handshaking ? handshakeBuffer : reader.nextBuffer()),
        callback: (n: number, buffer: Uint8Array) => {
          if (!handshaking) return reader.received(n, buffer);
          const step = handshake!.receive(Buffer.from(buffer.subarray(0, n)));
          if (step.kind === "send") socket.write(step.bytes);
          else if (step.kind === "fail") fail(`the listener failed the handshake: ${step.reason}`);
          else if (step.kind === "accepted") {
            handshaking = false;
            accepted();
          }
          return true;
        },
      };
      if (address.scheme === "unix") socket = createConnection({ path: address.path, onread });
      else if (address.scheme === "tcp") socket = createConnection({ host: address.host, port: address.port, onread });
      // Server names are host names (RFC 6066): an address is checked against the certificate's IP entries.
      // (Node's tls.connect takes onread as net.connect does; its types leave it out.)
      else socket = connectTls({ host: address.host, port: address.port, ...(isIP(address.host) === 0 ? { servername: address.host } : {}), ...options.tls, onread } as TlsOptions);
      const onError = (error: Error): void => fail(error.message, error);
      const onClose = (): void => fail(handshaking ? "the listener closed the connection during the handshake (does this peer know the cluster's secret?)" : "closed");
      socket.once("error", onError);
      socket.once("close", onClose);
      const timer = setTimeout(() => fail(`not connected within ${options.timeout ?? CONNECT_TIMEOUT} s`), (options.timeout ?? CONNECT_TIMEOUT) * 1000);
      socket.once(address.scheme === "tls" ? "secureConnect" : "connect", () => {
        if (!handshaking) accepted();
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

/** Listens on `path` (a socket file, which must not exist yet; made 0600); calls `onConnection` for each peer. */
export function listen(path: string, onConnection: (connection: Connection) => void): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => onConnection(new Connection(socket)));
    server.once("error", (error) => reject(new Error(`Cannot listen on ${path}: ${error.message}`, { cause: error })));
    server.listen(path, () => {
      // Only this user may connect: set before any connection is accepted (they are accepted on a
      // later turn of the event loop), so the cluster folder's 0700 is not the only guard.
      chmodSync(path, 0o600);
      resolve(server);
    });
  });
}

/**
 * Cuts the byte stream into messages: header (part count, part lengths), then the parts. Bytes
 * come either as chunks to copy (`push`), or straight into the memory `nextBuffer` names
 * (`received`, the connecting side's direct reads).
 */
class MessageReader {
  onMessage: (parts: Uint8Array[], bytes: number) => void = () => {};
  onError: (error: Error) => void = () => {};
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Part lengths and shared flags of the message being read, once its header is complete. */
  private lengths: { readonly length: number; readonly shared: boolean }[] | undefined;
  private parts: Uint8Array[] = [];
  /** Bytes already in the part being filled. */
  private filled = 0;
  private messageBytes = 0;
  private readonly scratch = new Uint8Array(SCRATCH_BYTES);

  /** Bytes that arrived as a chunk of their own (copied into the parts). */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.drain();
  }

  /** Where the next read should put its bytes: the unfilled rest of the current part, or scratch memory. */
  nextBuffer(): Uint8Array {
    const current = this.parts[this.parts.length - 1];
    if (this.lengths !== undefined && this.buffered === 0 && current !== undefined && this.filled < current.length && current.length - this.filled >= SCRATCH_BYTES) {
      return current.subarray(this.filled);
    }
    return this.scratch;
  }

  /** `n` bytes were read into `buffer` (the last `nextBuffer`); true: keep reading. */
  received(n: number, buffer: Uint8Array): boolean {
    if (buffer === this.scratch) {
      // The scratch memory is reused for the next read: keep a copy.
      this.push(Buffer.from(buffer.subarray(0, n)));
    } else {
      this.filled += n;
      this.drain();
    }
    return true;
  }

  private drain(): void {
    try {
      for (;;) {
        if (this.lengths === undefined && !this.readHeader()) return;
        if (!this.fillParts()) return;
        const parts = this.parts;
        const bytes = this.messageBytes;
        this.lengths = undefined;
        this.parts = [];
        this.onMessage(parts, bytes);
      }
    } catch (error) {
      this.onError(error as Error);
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
      const entry = frameLength(header.readUInt32LE(4 * i));
      this.lengths.push(entry);
      this.messageBytes += entry.length;
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
      // Each part gets memory of its own, so a typed array can use it as it is.
      const { length, shared } = lengths[this.parts.length];
      this.parts.push(allocatePart(length, shared));
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
