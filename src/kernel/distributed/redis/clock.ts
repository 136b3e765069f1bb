// The Redis server's clock (its TIME command) is the reference of a Redis cluster: workers
// report times on it and the client turns them into its own clock's, each with the estimate the
// cluster worker keeps of its scheduler's clock (../worker/clock).

import type { Redis } from "ioredis";
import type { WorkerClock } from "../worker/clock";

/** One round trip to Redis's TIME, learnt by `clock` (its "scheduler" is the Redis server). */
export async function observeRedisTime(redis: Redis, clock: WorkerClock): Promise<void> {
  const sent = clock.now();
  const [seconds, microseconds] = await redis.time();
  const received = clock.now();
  clock.observe(sent, received, Number(seconds) + Number(microseconds) / 1e6);
}
