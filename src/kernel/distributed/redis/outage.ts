// A Redis worker through a lost Redis: one log line per outage, and with a death timeout (Dask's
// `dask worker --death-timeout`), giving up once Redis has been silent that long.
import type { Redis } from "ioredis";
import { RedisConnectionLostError } from "./errors";

export interface OutageEvents {
  /** A progress line for the worker's log. */
  warn(line: string): void;
  /** Redis was unreachable for the whole death timeout: the worker must leave. */
  givenUp(error: RedisConnectionLostError): void;
}

/**
 * Watches the connection results and registrations go through. Its errors are reconnections in
 * progress (ioredis retries on its own), so only the first of an outage is logged; without a
 * death timeout the worker waits for Redis as long as it takes, as Dask's workers wait for their
 * scheduler by default.
 */
export function watchOutages(redis: Redis, server: string, deathTimeout: number | undefined, events: OutageEvents): void {
  let down = false;
  let deadline: NodeJS.Timeout | undefined;
  redis.on("error", (error: Error) => {
    if (down || redis.status === "end") return;
    down = true;
    events.warn(`Redis at ${server} unreachable (${error.message}); retrying${deathTimeout === undefined ? "" : ` for up to ${deathTimeout} s (--death-timeout)`}`);
    if (deathTimeout === undefined) return;
    deadline = setTimeout(() => {
      events.givenUp(new RedisConnectionLostError(`Redis at ${server} has not answered for ${deathTimeout} s (--death-timeout; last error: ${error.message})`));
    }, deathTimeout * 1000);
  });
  redis.on("ready", () => {
    if (!down) return;
    down = false;
    clearTimeout(deadline);
    events.warn(`reconnected to ${server}`);
  });
  redis.on("end", () => clearTimeout(deadline));
}
