// Where a Redis is and how to reach it: `redis://[user:password@]host:port[/db]` and
// `rediss://` (TLS) addresses, and connections that fail fast at connect (a clear error naming
// the host within a bounded time, no retries) and then reconnect with a bounded backoff.

import { isIP } from "node:net";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import { Redis, type RedisOptions } from "ioredis";
import { RedisAddressError, RedisConnectError } from "./errors";

export interface RedisTarget {
  readonly host: string;
  readonly port: number;
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
  /** The address without credentials, for messages and records: `redis://host:port/db`. */
  readonly display: string;
}

/** Reading an address the user typed: anything odd is an error naming what is wrong. */
export function parseRedisUrl(url: string): RedisTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisAddressError(`Not a Redis address: ${JSON.stringify(url)} (expected redis://[user:password@]host:port[/db])`);
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new RedisAddressError(`Not a Redis address: ${JSON.stringify(url)} (the scheme must be redis:// or rediss://)`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw new RedisAddressError(`The Redis address ${JSON.stringify(url)} names no host`);
  const port = parsed.port === "" ? 6379 : Number(parsed.port);
  const path = parsed.pathname.replace(/^\//, "");
  const db = path === "" ? 0 : Number(path);
  if (!Number.isInteger(db) || db < 0 || !/^\d*$/.test(path)) {
    throw new RedisAddressError(`The Redis address ${JSON.stringify(redact(parsed))} has ${JSON.stringify(path)} where a database number belongs`);
  }
  const tls = parsed.protocol === "rediss:";
  const username = parsed.username === "" ? undefined : decodeURIComponent(parsed.username);
  const password = parsed.password === "" ? undefined : decodeURIComponent(parsed.password);
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return { host, port, db, username, password, tls, display: `${tls ? "rediss" : "redis"}://${shownHost}:${port}${db === 0 ? "" : `/${db}`}` };
}

function redact(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password !== "") copy.password = "***";
  return copy.href;
}

export interface ConnectOptions {
  /** Bound on connecting and on the first reply, ms (default 5000). */
  readonly connectTimeout?: number;
  /** TLS settings for rediss:// (a private CA, say); merged over Node's defaults. */
  readonly tls?: TlsOptions;
  /** Shown by Redis's CLIENT LIST, so an operator can tell connections apart. */
  readonly connectionName?: string;
}

/** Longest wait between reconnection attempts once connected: steady, never a storm. */
const MAX_RECONNECT_DELAY_MS = 1000;

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
    password: target.password,
    // Server names are host names (RFC 6066): an address is checked against the certificate's IP entries.
    tls: target.tls ? { ...(isIP(target.host) === 0 ? { servername: target.host } : {}), ...options.tls } : undefined,
    connectionName: options.connectionName,
    connectTimeout: options.connectTimeout ?? 5000,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    maxRetriesPerRequest: null,
  };
}

/**
 * A connection that is up and authenticated, or a RedisConnectError naming the host and the
 * reason (refused, wrong password, timed out…) within `connectTimeout`, without retrying.
 * Afterwards it reconnects by itself when the link drops. `pipelined`: commands issued in the
 * same event-loop turn share one write (not for connections that wait on blocking commands).
 */
export async function connectRedis(target: RedisTarget, options: ConnectOptions = {}, pipelined = true): Promise<Redis> {
  const settings = redisOptions(target, options);
  const timeout = settings.connectTimeout!;
  const redis = new Redis({ ...settings, enableAutoPipelining: pipelined, lazyConnect: true, retryStrategy: () => null });
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
        timer = setTimeout(() => reject(new Error(`no reply within ${timeout / 1000} s`)), timeout);
      }),
    ]);
  } catch (error) {
    redis.disconnect();
    throw new RedisConnectError(target, describeFailure(lastError ?? error), lastError ?? error);
  } finally {
    clearTimeout(timer);
    redis.off("error", onError);
  }
  redis.options.retryStrategy = settings.retryStrategy;
  return redis;
}

function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message)) return "wrong user name or password";
  if (/NOAUTH/.test(message)) return "the server requires a password (give it in the address: redis://:password@host:port)";
  if (/ECONNREFUSED/.test(message)) return "connection refused (is redis-server running and listening on that address?)";
  if (/ENOTFOUND|EAI_AGAIN/.test(message)) return "unknown host name";
  if (/ETIMEDOUT|no reply within/.test(message)) return `timed out (${message})`;
  return message;
}
