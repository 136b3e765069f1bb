// How to reach a Redis: connections that fail fast at connect (a clear error naming the host
// within a bounded time, no retries) and then reconnect with a bounded backoff. The password goes
// from the RedisTarget's private field to ioredis and nowhere else: ioredis keeps it in its
// options (hidden here from util.inspect and JSON) and in the arguments of its HELLO/AUTH
// commands, which it attaches to the errors they get (never passed on: see connectFailure).

import { isIP } from "node:net";
import { inspect } from "node:util";
import { Redis, type RedisOptions } from "ioredis";
import { PASSWORD_VARIABLE, type RedisTarget } from "./address";
import { RedisConnectError } from "./errors";
import type { ConnectOptions } from "./options";

/** Longest wait between reconnection attempts once connected: steady, never a storm. */
const MAX_RECONNECT_DELAY_MS = 1000;
const DEFAULT_CONNECT_TIMEOUT = 5;

/**
 * ioredis options for `target`. Once connected, requests wait through reconnections for as long
 * as it takes (maxRetriesPerRequest: null, as BullMQ's workers require): whoever owns the
 * connection bounds an outage with a timer of its own and closes the connection when it is over.
 */
export function redisOptions(target: RedisTarget, options: ConnectOptions = {}): RedisOptions & { retryStrategy(attempt: number): number } {
  return {
    host: target.host,
    port: target.port,
    db: target.db,
    username: target.username,
    password: target.revealPassword(),
    // Server names are host names (RFC 6066): an address is checked against the certificate's IP entries.
    tls: target.tls ? { ...(isIP(target.host) === 0 ? { servername: target.host } : {}), ...options.tls } : undefined,
    connectionName: options.connectionName,
    connectTimeout: (options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT) * 1000,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    maxRetriesPerRequest: null,
  };
}

/**
 * A connection that is up and authenticated, or a RedisConnectError naming the host and the
 * reason (refused, wrong password, timed out…) within `connectTimeout`, without retrying.
 * Afterwards it reconnects by itself when the link drops. Without ioredis's automatic pipelining:
 * each batch of it builds a Pipeline that copies every script BullMQ defines on the connection,
 * which costs more CPU than the writes it saves (a third of a worker's, measured with bench/redis.ts).
 */
export async function connectRedis(target: RedisTarget, options: ConnectOptions = {}): Promise<Redis> {
  const settings = redisOptions(target, options);
  const timeoutMs = settings.connectTimeout!;
  const redis = guarded(new Redis({ ...settings, lazyConnect: true, retryStrategy: () => null }), target);
  let lastError: Error | undefined;
  const onError = (error: Error): void => {
    lastError = error;
  };
  redis.on("error", onError);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no reply within ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]);
  } catch (error) {
    redis.disconnect();
    throw connectFailure(target, lastError ?? error);
  } finally {
    clearTimeout(timer);
    redis.off("error", onError);
  }
  redis.options.retryStrategy = settings.retryStrategy;
  return redis;
}

/**
 * A RedisConnectError for `error`, whose cause keeps only its name, message and code: ioredis
 * attaches the failed command to its errors, and a failed HELLO or AUTH carries the password.
 */
function connectFailure(target: RedisTarget, error: unknown): RedisConnectError {
  const message = error instanceof Error ? error.message : String(error);
  const cause = new Error(message);
  if (error instanceof Error) {
    cause.name = error.name;
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string") Object.assign(cause, { code });
  }
  return new RedisConnectError(target.display, describeFailure(message), cause);
}

function describeFailure(message: string): string {
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message)) return "wrong user name or password";
  if (/NOAUTH/.test(message)) return `the server requires a password (set ${PASSWORD_VARIABLE}, or give it in the address: redis://:password@host:port)`;
  if (/ECONNREFUSED/.test(message)) return "connection refused (is redis-server running and listening on that address?)";
  if (/ENOTFOUND|EAI_AGAIN/.test(message)) return "unknown host name";
  if (/ETIMEDOUT|no reply within/.test(message)) return `timed out (${message})`;
  return message;
}

/**
 * `redis` made to show its address, never its password: util.inspect of it (or of anything
 * holding it: a transport, a worker, a BullMQ queue) prints `Redis <redis://host:port>`, and the
 * password in its options is not enumerable, so inspecting or serializing those options (BullMQ
 * keeps them as its connection's `opts`) leaves it out. Its duplicates, which BullMQ opens for
 * blocking waits, are guarded the same way and keep the password (a spread of the options would
 * drop it now).
 */
function guarded(redis: Redis, target: RedisTarget): Redis {
  Object.defineProperty(redis.options, "password", { value: redis.options.password, enumerable: false, writable: true, configurable: true });
  // Configurable and writable as methods are: BullMQ wraps connections in proxies, which must
  // return a non-configurable, read-only property's own value.
  Object.defineProperties(redis, {
    [inspect.custom]: { value: () => `Redis <${target.display}> (${redis.status})`, configurable: true, writable: true },
    duplicate: {
      value: (override?: Partial<RedisOptions>) => guarded(new Redis({ ...redis.options, password: target.revealPassword(), ...override }), target),
      configurable: true,
      writable: true,
    },
  });
  return redis;
}
