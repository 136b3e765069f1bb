// What goes wrong with a Redis cluster, as errors a user can test for (`instanceof`). Kept apart
// from the connections themselves so that importing them loads no Redis client, and at the
// bottom of this folder: they name servers by their credential-free address, a string.

/** An address that is not `redis://[user:password@]host:port[/db]` or `rediss://…`; names what is wrong. */
export class RedisAddressError extends Error {
  override name = "RedisAddressError";
}

/** Redis could not be reached at connect (refused, wrong password, timed out…); names the host and the reason. */
export class RedisConnectError extends Error {
  override name = "RedisConnectError";
  constructor(
    /** The address without credentials: `redis://host:port[/db]`. */
    readonly server: string,
    reason: string,
    cause?: Error,
  ) {
    super(`Cannot connect to Redis at ${server}: ${reason}`, { cause });
  }
}

/** Redis stopped answering for longer than the client waits (`connectionLostTimeout`); names the server. */
export class RedisConnectionLostError extends Error {
  override name = "RedisConnectionLostError";
}

/** Redis lost this client's data (restarted empty, or flushed): names the keys. */
export class RedisDataLostError extends Error {
  override name = "RedisDataLostError";
  constructor(
    readonly server: string,
    /** Reprs of the results and tasks that were lost. */
    readonly lost: readonly string[],
  ) {
    const shown = lost.slice(0, 10).join(", ");
    const more = lost.length > 10 ? ` and ${lost.length - 10} more` : "";
    super(`Redis at ${server} lost this client's data (it restarted empty, or was flushed): ${lost.length === 0 ? "no results were held" : `lost ${shown}${more}`}`);
  }
}

/**
 * A worker registered with another version of the Redis protocol than this client's (see
 * registry.ts REDIS_PROTOCOL): the client would wait in vain for its outcomes, so it stops instead.
 */
export class RedisProtocolError extends Error {
  override name = "RedisProtocolError";
  constructor(
    readonly server: string,
    readonly worker: string,
    /** The worker's version; undefined for a worker older than version 2, which registers none. */
    readonly workerVersion: number | undefined,
    readonly clientVersion: number,
    where: string,
  ) {
    const theirs = workerVersion === undefined ? "1 (it registered no version: a tsdask older than version 2 of the protocol)" : String(workerVersion);
    super(
      `Worker ${JSON.stringify(worker)} (${where}) at ${server} speaks version ${theirs} of tsdask's Redis protocol, this client version ${clientVersion}: ` +
        "the two cannot work together; run the same tsdask release on the client and the workers. Pending tasks are given up",
    );
  }
}

/** A worker's data listener options contradict each other or name a bad address: names the option. */
export class DataListenerOptionError extends TypeError {
  override name = "DataListenerOptionError";
}

/** A worker's data listener could not listen (the port is taken, the host is not this machine's): names the address. */
export class DataListenerError extends Error {
  override name = "DataListenerError";
}
