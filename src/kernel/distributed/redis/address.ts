// Where a Redis is: `redis://[user:password@]host:port[/db]` and `rediss://` (TLS) addresses,
// read once into a RedisTarget whose every public field is free of credentials. The password
// lives in one private field that util.inspect, JSON.stringify and console.log do not see; only
// the code that authenticates asks for it. Anything shown of an address the user typed (a
// malformed one included) goes through `shownAddress`, which hides the credentials.

import { formatHostPort } from "../comm/address";
import { RedisAddressError } from "./errors";

/**
 * The environment variable a password is read from when the address gives none: `ps` shows a
 * command's arguments to every user of the machine, but not its environment.
 */
export const PASSWORD_VARIABLE = "TSDASK_REDIS_PASSWORD";

const EXPECTED = "expected redis://[user:password@]host:port[/db]";

export class RedisTarget {
  /** The address without credentials, for every message, card, log line and error: `redis://host:port/db`. */
  readonly display: string;
  readonly #password: string | undefined;

  /** Use parseRedisUrl (or redisTargetOf, which adds the password from the environment). */
  constructor(
    readonly host: string,
    readonly port: number,
    readonly db: number,
    readonly tls: boolean,
    /** The ACL user, if the address names one (the `default` user otherwise). */
    readonly username: string | undefined,
    password: string | undefined,
  ) {
    this.#password = password;
    this.display = `${tls ? "rediss" : "redis"}://${formatHostPort(host, port)}${db === 0 ? "" : `/${db}`}`;
  }

  get hasPassword(): boolean {
    return this.#password !== undefined;
  }

  /** The password, for authenticating; never for showing. */
  revealPassword(): string | undefined {
    return this.#password;
  }

  /** This target, or a copy with `password` when it has none of its own (an address's password wins). */
  orPassword(password: string | undefined): RedisTarget {
    if (this.hasPassword || password === undefined) return this;
    return new RedisTarget(this.host, this.port, this.db, this.tls, this.username, password);
  }

  /** `${target}` and JSON give the credential-free address. */
  toString(): string {
    return this.display;
  }

  toJSON(): string {
    return this.display;
  }
}

/** Reading an address the user typed: anything odd is an error naming what is wrong, never showing a password. */
export function parseRedisUrl(url: string): RedisTarget {
  if (typeof url !== "string") throw new RedisAddressError(`A Redis address must be a string (${EXPECTED}), got ${typeof url}`);
  const shown = JSON.stringify(shownAddress(url));
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisAddressError(`Not a Redis address: ${shown} (${whyUnreadable(url)}; ${EXPECTED})`);
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new RedisAddressError(`Not a Redis address: ${shown} (the scheme must be redis:// or rediss://)`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw new RedisAddressError(`The Redis address ${shown} names no host (${EXPECTED})`);
  const port = parsed.port === "" ? 6379 : Number(parsed.port);
  const path = parsed.pathname.replace(/^\//, "");
  const db = path === "" ? 0 : Number(path);
  if (!Number.isInteger(db) || db < 0 || !/^\d*$/.test(path)) {
    throw new RedisAddressError(`The Redis address ${shown} has ${JSON.stringify(shownAddress(path))} where a database number belongs`);
  }
  const decoded = (part: string): string | undefined => {
    if (part === "") return undefined;
    try {
      return decodeURIComponent(part);
    } catch {
      throw new RedisAddressError(`The Redis address ${shown} has a user name or password with a stray "%" (write it as %25)`);
    }
  };
  return new RedisTarget(host, port, db, parsed.protocol === "rediss:", decoded(parsed.username), decoded(parsed.password));
}

/**
 * The target of an address, with the password from TSDASK_REDIS_PASSWORD when the address gives
 * none: how the Client and the worker command read an address.
 */
export function redisTargetOf(address: string | RedisTarget, environment: NodeJS.ProcessEnv = process.env): RedisTarget {
  const target = typeof address === "string" ? parseRedisUrl(address) : address;
  const fromEnvironment = environment[PASSWORD_VARIABLE];
  return target.orPassword(fromEnvironment === "" ? undefined : fromEnvironment);
}

/**
 * An address as typed, with everything between its scheme and its last "@" (user name and
 * password) replaced by "***": works on text that is not a URL at all, where a parser cannot say
 * where the password ends.
 */
function shownAddress(text: string): string {
  const at = text.lastIndexOf("@");
  if (at === -1) return text;
  const scheme = /^[a-z][a-z0-9+.-]*:(\/\/)?/i.exec(text)?.[0] ?? "";
  return `${scheme}***${text.slice(at)}`;
}

/** What makes `url` unreadable as a URL, as far as can be told without showing its credentials. */
function whyUnreadable(url: string): string {
  const parts = /^([a-z][a-z0-9+.-]*):\/\/(?:.*@)?([^/?#]*)/i.exec(url);
  if (parts === null) return "it does not start with redis:// or rediss://";
  const hostPort = parts[2];
  const port = /:([^\]:]*)$/.exec(hostPort)?.[1];
  if (hostPort === "" || hostPort.startsWith(":")) return "it names no host";
  if (port !== undefined && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) return `its port ${JSON.stringify(port)} is not a number from 1 to 65535`;
  return "it cannot be read as a URL: characters such as / # ? @ in a password must be percent-encoded";
}
