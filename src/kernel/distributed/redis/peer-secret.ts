// The secrets that admit peers to a Redis worker's data listener: one per client, written with
// its registration (./registry registerClient) and swept with its namespace. Anyone who can read
// that Redis can read them, as they can read every value and queue a task: the secret makes
// the data plane no weaker than Redis, and keeps everyone else out of it.

import type { Redis } from "ioredis";
import { PeerSecret } from "../comm/handshake";
import { Namespace } from "./keys";

/** Each client's secret, read from Redis once it is first asked for. */
export class PeerSecrets {
  private readonly known = new Map<string, PeerSecret>();

  constructor(private readonly redis: Redis) {}

  /** The secret of `clientId`, or undefined when Redis has none (no such client, or it left). */
  async of(clientId: string): Promise<PeerSecret | undefined> {
    const known = this.known.get(clientId);
    if (known !== undefined) return known;
    // Only ids that could be a client's reach Redis (the handshake checked their form).
    const stored = await this.redis.get(new Namespace(clientId).peerSecret);
    if (stored === null) return undefined;
    const secret = new PeerSecret(stored);
    this.known.set(clientId, secret);
    return secret;
  }
}
