// The Redis server's clock (its TIME command) as the reference every process of a Redis cluster
// agrees on: workers report times on it, the client turns them into its own clock's.

import type { Redis } from "ioredis";
import { now } from "../../clock";

interface Sample {
  /** local − Redis, seconds. */
  readonly offset: number;
  /** Round trip, seconds: the offset is known to within half of it. */
  readonly roundTrip: number;
}

/** Samples kept: the estimate is the one with the shortest round trip among these. */
const WINDOW = 8;

/** Estimates (local clock − Redis clock) NTP-style, from the midpoint of TIME's round trip. */
export class RedisClock {
  private readonly samples: Sample[] = [];

  constructor(
    private readonly redis: Redis,
    /** The local clock, epoch seconds. */
    private readonly localNow: () => number = now,
  ) {}

  /** Takes one sample; returns the current estimate. */
  async sample(): Promise<number> {
    const before = this.localNow();
    const [seconds, microseconds] = await this.redis.time();
    const after = this.localNow();
    const redisNow = Number(seconds) + Number(microseconds) / 1e6;
    this.samples.push({ offset: (before + after) / 2 - redisNow, roundTrip: after - before });
    if (this.samples.length > WINDOW) this.samples.shift();
    return this.offset;
  }

  /** local − Redis, seconds (0 before the first sample). */
  get offset(): number {
    let best: Sample | undefined;
    for (const sample of this.samples) if (best === undefined || sample.roundTrip < best.roundTrip) best = sample;
    return best?.offset ?? 0;
  }

  /** A local time on the Redis clock. */
  toRedis(localSeconds: number): number {
    return localSeconds - this.offset;
  }

  /** A Redis-clock time on the local clock. */
  fromRedis(redisSeconds: number): number {
    return redisSeconds + this.offset;
  }

  /** Now, on the Redis clock. */
  redisNow(): number {
    return this.toRedis(this.localNow());
  }
}
