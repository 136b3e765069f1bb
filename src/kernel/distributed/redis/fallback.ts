// The way around a worker whose data listener cannot be reached (a firewall, a contact address
// nobody answers at, a worker that died): the values it keeps come through Redis, as every value
// did before workers kept any. The asker — a peer needing inputs, or the client gathering — asks
// the holder on its request channel to publish them (a value replaces its location, see ./store)
// and watches their records. A holder that does not hear (nobody subscribed: it is gone), or whose
// registration lapses while the asker waits, leaves them missing, for the scheduler to recompute:
// the wait is bounded by the registration's TTL, never a hang.

import type { Redis } from "ioredis";
import type { PublishHeldMessage, WorkerRequest } from "./jobs";
import { registry } from "./keys";
import type { RedisStore, StoredFrames } from "./store";

/** First and longest pause between two looks at the records, ms. */
const FIRST_LOOK_MS = 10;
const LONGEST_LOOK_MS = 500;
/** Ms between checks that the holder is still registered. */
const REGISTRATION_CHECK_MS = 1000;

/**
 * Asks worker `holder` to publish `keys` (`store`'s client's) and waits for them: their frames;
 * as located, those another worker keeps meanwhile (computed again after this holder was taken
 * for gone, or handed over by it), for the asker to read there; as missing, those the holder no
 * longer has or cannot publish.
 */
export async function throughRedis(redis: Redis, store: RedisStore, holder: string, keys: readonly string[]): Promise<StoredFrames> {
  const request: WorkerRequest = { client: store.namespace.clientId, message: { op: "publish-held", keys } satisfies PublishHeldMessage };
  const heard = (await redis.publish(registry.requests(holder), JSON.stringify(request))) > 0;
  const got: StoredFrames = { frames: new Map(), types: new Map(), missing: [], bytes: 0, sizes: new Map(), located: new Map() };
  let waiting = [...keys];
  let pause = FIRST_LOOK_MS;
  let lastCheck = performance.now();
  for (;;) {
    const read = await store.fetch(waiting);
    for (const [key, frames] of read.frames) {
      got.frames.set(key, frames);
      got.types.set(key, read.types.get(key)!);
      got.sizes.set(key, read.sizes.get(key)!);
    }
    (got as { bytes: number }).bytes += read.bytes;
    got.missing.push(...read.missing);
    waiting = [];
    for (const [key, location] of read.located) {
      if (location.holder === holder) waiting.push(key);
      else got.located.set(key, location);
    }
    if (waiting.length === 0) return got;
    let gone = !heard;
    if (!gone && performance.now() - lastCheck >= REGISTRATION_CHECK_MS) {
      lastCheck = performance.now();
      gone = (await redis.exists(registry.worker(holder))) === 0;
    }
    if (gone) {
      got.missing.push(...waiting);
      return got;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(LONGEST_LOOK_MS, pause * 1.5);
  }
}
