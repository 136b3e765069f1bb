// Who may talk to a worker's data listener: a peer that knows a client's secret (kept in Redis,
// see redis/peer-secret). Before any message, as raw bytes rather than frames (nothing a stranger
// sends is ever deserialised):
//
//   listener → peer   CHALLENGE  "TSDASKP1" + its nonce (32 random bytes)
//   peer → listener   RESPONSE   client id (1 byte length + ASCII) + the peer's nonce + proof
//   listener → peer   ACCEPT     proof of its own; then framed messages flow (see ./connection)
//
// A proof is HMAC-SHA256(secret, role + both nonces + client id): the secret never crosses the
// wire, a recorded exchange is no use against a fresh nonce, and each side checks the other (a
// listener that does not know the secret gets no request). A listener that cannot verify a
// response sends nothing and closes. These are the pure state machines; ./comm feeds them bytes.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { inspect } from "node:util";

const MAGIC = Buffer.from("TSDASKP1", "ascii");
const NONCE_BYTES = 32;
const PROOF_BYTES = 32;
export const CHALLENGE_BYTES = MAGIC.length + NONCE_BYTES;
/** Client ids are tsdask namespaces: letters, digits, "_" and "-" (see redis/keys Namespace). */
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const CLIENT_ID_PREFIX = /^[A-Za-z0-9_-]*$/;
const MAX_RESPONSE_BYTES = 1 + 64 + NONCE_BYTES + PROOF_BYTES;

/**
 * A cluster secret, in a private field that util.inspect, JSON and string conversion do not show
 * (as RedisTarget keeps a password): it only signs handshakes.
 */
export class PeerSecret {
  readonly #key: Buffer;

  constructor(key: string | Buffer) {
    this.#key = Buffer.from(key);
    if (this.#key.length < 16) throw new RangeError("A peer secret needs at least 16 bytes");
  }

  /** 32 random bytes, as hex: what a client stores in Redis. */
  static generate(): string {
    return randomBytes(32).toString("hex");
  }

  proof(role: "peer" | "listener", listenerNonce: Buffer, peerNonce: Buffer, clientId: string): Buffer {
    return createHmac("sha256", this.#key).update(`tsdask-peer-v1 ${role}\0`).update(listenerNonce).update(peerNonce).update(clientId).digest();
  }

  toString(): string {
    return "PeerSecret <hidden>";
  }

  toJSON(): string {
    return this.toString();
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

export type ListenerStep =
  | { readonly kind: "more" }
  /** The peer claims to act for `clientId`: look up that client's secret and call `verify`. */
  | { readonly kind: "claim"; readonly clientId: string; verify(secret: PeerSecret | undefined): Buffer | undefined }
  | { readonly kind: "fail"; readonly reason: string };

/** The listening side: send `challenge`, feed what arrives to `receive`. */
export class ListenerHandshake {
  readonly challenge: Buffer;
  private readonly nonce: Buffer;
  private received = Buffer.alloc(0);
  private claimed = false;

  constructor(nonce: Buffer = randomBytes(NONCE_BYTES)) {
    this.nonce = nonce;
    this.challenge = Buffer.concat([MAGIC, nonce]);
  }

  receive(chunk: Buffer): ListenerStep {
    if (this.claimed) return { kind: "fail", reason: "it sent data before it was accepted" };
    this.received = Buffer.concat([this.received, chunk]);
    if (this.received.length === 0) return { kind: "more" };
    const idLength = this.received[0];
    const expected = 1 + idLength + NONCE_BYTES + PROOF_BYTES;
    if (idLength === 0 || expected > MAX_RESPONSE_BYTES) return { kind: "fail", reason: "it did not answer the handshake" };
    // A client id that cannot be one fails at once, not after waiting for the bytes a response would have.
    const clientId = this.received.subarray(1, 1 + idLength).toString("latin1");
    if (!CLIENT_ID_PREFIX.test(clientId)) return { kind: "fail", reason: "it did not answer the handshake" };
    if (this.received.length < expected) return { kind: "more" };
    if (this.received.length > expected) return { kind: "fail", reason: "it did not answer the handshake" };
    const peerNonce = this.received.subarray(1 + idLength, 1 + idLength + NONCE_BYTES);
    const proof = this.received.subarray(1 + idLength + NONCE_BYTES);
    this.claimed = true;
    return {
      kind: "claim",
      clientId,
      verify: (secret) => {
        if (secret === undefined) return undefined;
        if (!timingSafeEqual(proof, secret.proof("peer", this.nonce, peerNonce, clientId))) return undefined;
        return secret.proof("listener", this.nonce, peerNonce, clientId);
      },
    };
  }
}

export type PeerStep =
  | { readonly kind: "more" }
  | { readonly kind: "send"; readonly bytes: Buffer }
  | { readonly kind: "accepted" }
  | { readonly kind: "fail"; readonly reason: string };

/** The connecting side, acting for `clientId` with that client's `secret`: feed it what arrives. */
export class PeerHandshake {
  private received = Buffer.alloc(0);
  private listenerNonce: Buffer | undefined;

  constructor(
    private readonly clientId: string,
    private readonly secret: PeerSecret,
    private readonly nonce: Buffer = randomBytes(NONCE_BYTES),
  ) {
    if (!CLIENT_ID.test(clientId)) throw new RangeError(`Not a tsdask client id: ${JSON.stringify(clientId)}`);
  }

  receive(chunk: Buffer): PeerStep {
    this.received = Buffer.concat([this.received, chunk]);
    if (this.listenerNonce === undefined) {
      if (this.received.length < CHALLENGE_BYTES) return { kind: "more" };
      if (!this.received.subarray(0, MAGIC.length).equals(MAGIC)) return { kind: "fail", reason: "it is not a tsdask data listener" };
      this.listenerNonce = Buffer.from(this.received.subarray(MAGIC.length, CHALLENGE_BYTES));
      this.received = this.received.subarray(CHALLENGE_BYTES);
      const id = Buffer.from(this.clientId, "latin1");
      const proof = this.secret.proof("peer", this.listenerNonce, this.nonce, this.clientId);
      if (this.received.length > 0) return { kind: "fail", reason: "it sent data before the handshake ended" };
      return { kind: "send", bytes: Buffer.concat([Buffer.from([id.length]), id, this.nonce, proof]) };
    }
    if (this.received.length < PROOF_BYTES) return { kind: "more" };
    if (this.received.length > PROOF_BYTES) return { kind: "fail", reason: "it sent data before the handshake ended" };
    const expected = this.secret.proof("listener", this.listenerNonce, this.nonce, this.clientId);
    if (!timingSafeEqual(this.received, expected)) return { kind: "fail", reason: "it does not know the cluster's secret" };
    return { kind: "accepted" };
  }
}
