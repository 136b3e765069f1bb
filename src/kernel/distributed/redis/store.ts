// Values in Redis under a client's namespace, as the binary frames of ../frames (typed arrays
// travel as their raw bytes). One HASH per value: field "m" holds the metadata (frame lengths,
// type, size), fields "0", "1"… the bytes, each frame cut into parts of at most `partSize`
// bytes (a Redis string holds 512 MB at most), field "j" the number of the job that wrote it. A
// value is published atomically and once per job: the first run of a job to write a key wins and
// later runs of that job (a stalled job taken over) leave it as it is, so a result is never a mix
// of two; a later job of the key (it was forgotten and asked for again) replaces it, an earlier
// one does not — the stored value is always that of the job the client counts. Nothing is written
// for a client that is gone (its liveness key expired or was deleted), so a closed namespace
// stays empty.
//
// A big result stays with the worker that computed it (see ./held): its HASH then holds no bytes
// but where the value lives — field "h" the holder's name, "a" its data address, and in "m" no
// frames, the value's type and size — written by the same rules. The holder may later publish
// the value itself (a peer that cannot reach it asked): that value replaces its own location.
//
// A task's outcome goes on the client's outcome stream (see keys.ts `outcomes`) in the same
// script as its result: the client learns of a result only once it is in place, and with how it
// was stored (published by this run, or already there).

import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { decodeValue, encodeValue, framesByteLength } from "../comm/frames";
import type { Namespace } from "./keys";

/** What the client learns about a stored value. */
export interface StoredInfo {
  /** Bytes the value takes in Redis (its frames). */
  readonly nbytes: number;
  /** The value's type name (`Float64Array`, `number`, `Object`…). */
  readonly type: string;
}

interface Metadata {
  /** Frame lengths, in order. */
  readonly f: readonly number[];
  /** Type name. */
  readonly t: string;
  /** Part size the writer cut frames with. */
  readonly p: number;
  /** A location record's: the value's size in the holder's memory (Dask's nbytes). */
  readonly n?: number;
}

/** Where a value kept by a worker lives (see the header). */
export interface ValueLocation {
  /** The holding worker's name. */
  readonly holder: string;
  /** Its data listener (tcp:// or tls://). */
  readonly address: string;
  /** The value's size in the holder's memory. */
  readonly nbytes: number;
  readonly type: string;
}

/** 64 MiB: far below Redis's 512 MB string limit, and a moderate peak in Redis's query buffer. */
export const DEFAULT_PART_SIZE = 64 * 1024 * 1024;
/** More fields than this go through a staging key (a script's arguments sit on Lua's stack). */
const MAX_INLINE_FIELDS = 64;

export type PublishOutcome = "published" | "exists" | "client-gone";

/** The "p" of an outcome with no value stored (see PUBLISH_SCRIPT's codes: 1 published, 0 there already). */
export const NO_VALUE = "-";

/** The scripts below, as ioredis defines them on a connection (defineCommand). */
interface ScriptCommands {
  tsdaskPublish(valueKey: string, stagingKey: string, aliveKey: string, outcomesKey: string, job: number | "", replacing: string, outcome: Buffer | "", ...fields: (string | Buffer)[]): Promise<number>;
  tsdaskPush(aliveKey: string, streamKey: string, ...fields: (string | Buffer)[]): Promise<number>;
  tsdaskDropLocation(valueKey: string, holder: string): Promise<number>;
}

// KEYS: value, staging, client liveness, the client's outcome stream. ARGV: the writing job's
// number (or "": never replaced), the worker whose location of the same job this value replaces
// ("": none), the task's outcome ("": none), then field/value pairs to write (none: the value was
// assembled in the staging key). Returns 1 published, 0 a value of this job or a later one is
// there, -1 client gone; the outcome goes on the stream with that code (field "p").
const PUBLISH_SCRIPT = `
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[2])
  return -1
end
local code = 1
if redis.call('EXISTS', KEYS[1]) == 1 then
  local stored = tonumber(redis.call('HGET', KEYS[1], 'j'))
  local job = tonumber(ARGV[1])
  local holder = ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'h') == ARGV[2]
  if job == nil or stored == nil or stored > job or (stored == job and not holder) then
    redis.call('DEL', KEYS[2])
    code = 0
  else
    redis.call('DEL', KEYS[1])
  end
end
if code == 1 and #ARGV > 3 and ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], 'j', ARGV[1], unpack(ARGV, 4))
elseif code == 1 and #ARGV > 3 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 4))
elseif code == 1 then
  redis.call('RENAME', KEYS[2], KEYS[1])
  if ARGV[1] ~= '' then
    redis.call('HSET', KEYS[1], 'j', ARGV[1])
  end
end
if ARGV[3] ~= '' then
  redis.call('XADD', KEYS[4], '*', 'p', tostring(code), 'o', ARGV[3])
end
return code
`;

// KEYS: value. ARGV: a worker's name. Removes the value's record if it says that worker keeps it.
const DROP_LOCATION_SCRIPT = `
if redis.call('HGET', KEYS[1], 'h') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

// KEYS: client liveness, one of the client's streams. ARGV: the entry's field/value pairs.
// Adds the entry unless the client is gone (-1).
const PUSH_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
redis.call('XADD', KEYS[2], '*', unpack(ARGV))
return 1
`;

/** A pipeline or a connection, as far as deleting values goes (see RedisStore.queueDelete). */
export interface Unlinker {
  unlink(...args: [...keys: string[], callback: (error?: Error | null) => void]): unknown;
}

/** A value as the store keeps it: its frames, and what the client learns about it. */
export interface EncodedValue {
  readonly frames: readonly Buffer[];
  readonly info: StoredInfo;
}

export function encodeStored(value: unknown): EncodedValue {
  const frames = encodeValue(value);
  return { frames, info: { nbytes: framesByteLength(frames), type: typeName(value) } };
}

/** The type name recorded for a value (Dask records Python's type names; these are JavaScript's). */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object" && typeof value !== "function") return typeof value;
  return (value as { constructor?: { name?: string } }).constructor?.name || "Object";
}

export interface StoreOptions {
  /** Largest Redis string written, bytes (default 64 MiB); smaller values make more parts. */
  readonly partSize?: number;
}

export interface ReadResult {
  readonly values: Map<string, unknown>;
  readonly missing: string[];
  /** Bytes read from Redis. */
  readonly bytes: number;
  /** Bytes per key read. */
  readonly sizes: Map<string, number>;
  /** Keys whose value a worker keeps: where it lives. */
  readonly located: Map<string, ValueLocation>;
}

/** Values read from the store, still as frames (decoded by whoever needs them). */
export interface StoredFrames {
  readonly frames: Map<string, Buffer[]>;
  /** Type names of the values read. */
  readonly types: Map<string, string>;
  readonly missing: string[];
  readonly bytes: number;
  readonly sizes: Map<string, number>;
  /** Keys whose value a worker keeps: where it lives. */
  readonly located: Map<string, ValueLocation>;
}

/** A value being assembled by a process that died midway disappears after this long. */
const STAGING_TTL_MS = 10 * 60 * 1000;

export class RedisStore {
  readonly partSize: number;
  private readonly scripts: ScriptCommands;

  constructor(
    private readonly redis: Redis,
    readonly namespace: Namespace,
    options: StoreOptions = {},
  ) {
    this.partSize = options.partSize ?? DEFAULT_PART_SIZE;
    if (!(this.partSize >= 1)) throw new RangeError(`partSize must be at least 1 byte, got ${options.partSize}`);
    this.scripts = redis as unknown as ScriptCommands;
    if (typeof this.scripts.tsdaskPublish !== "function") {
      redis.defineCommand("tsdaskPublish", { numberOfKeys: 4, lua: PUBLISH_SCRIPT });
      redis.defineCommand("tsdaskPush", { numberOfKeys: 2, lua: PUSH_SCRIPT });
      redis.defineCommand("tsdaskDropLocation", { numberOfKeys: 1, lua: DROP_LOCATION_SCRIPT });
    }
  }

  /**
   * Stores `value` under `key` as the result of job number `job` (see the header: a value of the
   * same job or a later one stays; without a number, any value there stays).
   */
  async put(key: string, value: unknown, job?: number): Promise<{ info: StoredInfo; result: PublishOutcome }> {
    const { info, result } = this.publish(key, value, job);
    return { info, result: await result };
  }

  /**
   * `put`, telling whether the value went out as one command, already queued on the connection
   * when this returns (`issued`): later commands on the same connection then run after it in
   * Redis, so a caller may go on without waiting for the reply. Larger values take several
   * commands and round trips; wait for `result`. `frames` are the value's, as stored.
   * `replacing`: the worker whose location of the same job this value takes the place of (it
   * publishes a value it kept, see ./held); any other record of the job stays.
   */
  publish(key: string, value: unknown, job?: number, replacing?: string): { info: StoredInfo; issued: boolean; result: Promise<PublishOutcome> } {
    const { frames, info } = encodeStored(value);
    const { issued, result } = this.write(this.namespace.value(key), key, frames, info.type, job ?? "", replacing);
    return { info, issued, result };
  }

  /**
   * `publish` for a task's result, already encoded: the task's `outcome` (see jobs.ts
   * encodeOutcome) goes on the client's outcome stream in the same script, with how the value
   * was stored.
   */
  publishResult(key: string, value: EncodedValue, job: number, outcome: Buffer): { issued: boolean; result: Promise<PublishOutcome> } {
    return this.write(this.namespace.value(key), key, value.frames, value.info.type, job, "", outcome);
  }

  /**
   * Records that job number `job`'s value of `key` stays with a worker (`location`), as `publish`
   * stores a value (same rules, same `issued`), the value itself not in Redis. `replacing`: the
   * worker whose location of the same job this one takes the place of (it handed the value over,
   * see ./handoff). A task's `outcome` goes with it, as with publishResult.
   */
  publishLocation(key: string, location: ValueLocation, job: number, replacing = "", outcome: Buffer | "" = ""): { issued: true; result: Promise<PublishOutcome> } {
    const metadata: Metadata = { f: [], t: location.type, p: this.partSize, n: location.nbytes };
    const fields = ["m", JSON.stringify(metadata), "h", location.holder, "a", location.address];
    const { alive, outcomes } = this.namespace;
    const result = this.scripts.tsdaskPublish(this.namespace.value(key), this.namespace.staging(key, "inline"), alive, outcomes, job, replacing, outcome, ...fields).then(publishOutcome);
    return { issued: true, result };
  }

  /**
   * Where each of `keys`' values is now (one round trip): `{ holder }` for a worker keeping it,
   * `{}` for bytes in Redis, undefined for no value at all.
   */
  async whereAre(keys: readonly string[]): Promise<({ readonly holder?: string } | undefined)[]> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.hmget(this.namespace.value(key), "h", "m");
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, fields]) => {
      if (error) throw error;
      const [holder, metadata] = fields as (string | null)[];
      if (holder !== null) return { holder };
      return metadata === null ? undefined : {};
    });
  }

  /** Removes `key`'s record if it says worker `holder` keeps the value (which it lost): readers then find it missing. */
  async dropLocation(key: string, holder: string): Promise<void> {
    await this.scripts.tsdaskDropLocation(this.namespace.value(key), holder);
  }

  /** Adds a worker's reply to a request (see jobs.ts ReplyEntry) to the reply stream, unless the client is gone. */
  async pushReply(reply: Buffer): Promise<PublishOutcome> {
    const code = await this.scripts.tsdaskPush(this.namespace.alive, this.namespace.replies, "r", reply);
    return code === -1 ? "client-gone" : "published";
  }

  /**
   * Adds a task's outcome with no value to store (an error, inputs missing) to the outcome stream,
   * unless the client is gone. Issued on the connection when this returns, as publish's one command.
   */
  pushOutcome(outcome: Buffer): Promise<PublishOutcome> {
    return this.scripts.tsdaskPush(this.namespace.alive, this.namespace.outcomes, "p", NO_VALUE, "o", outcome).then((code) => (code === -1 ? "client-gone" : "published"));
  }

  /** Reads the values of `keys` (one pipelined round trip); keys not in Redis are listed as missing. */
  async get(keys: readonly string[]): Promise<ReadResult> {
    const fetched = await this.fetch(keys);
    const values = new Map<string, unknown>();
    for (const [key, frames] of fetched.frames) values.set(key, decodeValue(frames));
    return { values, missing: fetched.missing, bytes: fetched.bytes, sizes: fetched.sizes, located: fetched.located };
  }

  /** The frames of `keys`' values, undecoded (see get). */
  async fetch(keys: readonly string[]): Promise<StoredFrames> {
    return this.read(keys.map((key) => this.namespace.value(key)), keys);
  }

  /** Stores a task spec's frames under `token` (a spec too large for its job); no outcome, never replaced. */
  async putTask(key: string, token: string, frames: readonly Buffer[]): Promise<void> {
    await this.write(this.namespace.taskSpec(key, token), key, frames, "WireTask", "").result;
  }

  async getTask(key: string, token: string): Promise<unknown> {
    const { frames } = await this.read([this.namespace.taskSpec(key, token)], [key]);
    const spec = frames.get(key);
    if (spec === undefined) throw new Error(`tsdask: the spec of task ${JSON.stringify(key)} is no longer in Redis`);
    return decodeValue(spec, { shared: false });
  }

  async deleteTask(key: string, token: string): Promise<void> {
    await this.redis.unlink(this.namespace.taskSpec(key, token));
  }

  /** Removes the values of `keys` (freed in the background by Redis). */
  async delete(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const pipeline = this.redis.pipeline();
    this.queueDelete(pipeline, keys, () => {});
    await pipeline.exec();
  }

  /**
   * Sends the removal of the values of `keys` on `via`, a pipeline or a connection, which may be
   * another connection's (the client sends them with its next read of outcomes); `answered` runs
   * once Redis has removed them (or failed to), even if a later command on `via` blocks.
   */
  queueDelete(via: Unlinker, keys: readonly string[], answered: () => void): void {
    for (let i = 0; i < keys.length; i += 1000) {
      const redisKeys = keys.slice(i, i + 1000).map((key) => this.namespace.value(key));
      via.unlink(...redisKeys, i + 1000 < keys.length ? () => {} : () => answered());
    }
  }

  /** Removes every key of the namespace (values, staging, the task queue and its events, replies); returns how many. */
  async sweep(): Promise<number> {
    return sweepNamespace(this.redis, this.namespace);
  }

  private write(redisKey: string, key: string, frames: readonly Buffer[], type: string, job: number | "", replacing = "", outcome: Buffer | "" = ""): { issued: boolean; result: Promise<PublishOutcome> } {
    const nbytes = framesByteLength(frames);
    const metadata: Metadata = { f: frames.map((frame) => frame.byteLength), t: type, p: this.partSize };
    const fields: (string | Buffer)[] = ["m", JSON.stringify(metadata)];
    let field = 0;
    for (const frame of frames) {
      for (const part of this.cut(frame)) fields.push(String(field++), part);
    }
    const { alive, outcomes } = this.namespace;
    const meaning = publishOutcome;
    if (nbytes <= this.partSize && fields.length <= 2 * MAX_INLINE_FIELDS) {
      // No staging key is written on this path: the script's DEL of it finds nothing (no random token needed).
      const unused = this.namespace.staging(key, "inline");
      return { issued: true, result: this.scripts.tsdaskPublish(redisKey, unused, alive, outcomes, job, replacing, outcome, ...fields).then(meaning) };
    }
    const stagingKey = this.namespace.staging(key, randomToken());
    const staged = async (): Promise<PublishOutcome> => {
      // One part per command; the staging key expires by itself should this process die midway.
      const pipeline = this.redis.pipeline();
      for (let i = 0; i < fields.length; i += 2) pipeline.hset(stagingKey, fields[i], fields[i + 1]);
      pipeline.pexpire(stagingKey, STAGING_TTL_MS);
      const replies = await pipeline.exec();
      const failed = replies?.find(([error]) => error !== null);
      if (failed !== undefined) throw failed[0]!;
      return meaning(await this.scripts.tsdaskPublish(redisKey, stagingKey, alive, outcomes, job, replacing, outcome));
    };
    return { issued: false, result: staged() };
  }

  private async read(redisKeys: readonly string[], keys: readonly string[]): Promise<StoredFrames> {
    const replies = await Promise.all(redisKeys.map((redisKey) => this.redis.hgetallBuffer(redisKey)));
    const frames = new Map<string, Buffer[]>();
    const types = new Map<string, string>();
    const sizes = new Map<string, number>();
    const missing: string[] = [];
    const located = new Map<string, ValueLocation>();
    let bytes = 0;
    keys.forEach((key, i) => {
      const fields = replies[i];
      const meta = fields.m;
      if (meta === undefined) {
        missing.push(key);
        return;
      }
      const metadata = JSON.parse(meta.toString()) as Metadata;
      if (fields.h !== undefined) {
        located.set(key, { holder: fields.h.toString(), address: fields.a?.toString() ?? "", nbytes: metadata.n ?? 0, type: metadata.t });
        return;
      }
      const valueFrames = this.assemble(key, metadata, fields);
      const size = framesByteLength(valueFrames);
      bytes += size + meta.byteLength;
      sizes.set(key, size);
      types.set(key, metadata.t);
      frames.set(key, valueFrames);
    });
    return { frames, types, missing, bytes, sizes, located };
  }

  private cut(frame: Buffer): Buffer[] {
    if (frame.byteLength <= this.partSize) return [frame];
    const parts: Buffer[] = [];
    for (let at = 0; at < frame.byteLength; at += this.partSize) parts.push(frame.subarray(at, at + this.partSize));
    return parts;
  }

  private assemble(key: string, metadata: Metadata, fields: Record<string, Buffer>): Buffer[] {
    const frames: Buffer[] = [];
    let field = 0;
    for (const length of metadata.f) {
      const count = Math.max(1, Math.ceil(length / metadata.p));
      const parts: Buffer[] = [];
      for (let i = 0; i < count; i++) {
        const part = fields[String(field++)];
        if (part === undefined) throw new Error(`tsdask: the value of ${JSON.stringify(key)} in Redis is incomplete (part ${field - 1} is missing)`);
        parts.push(part);
      }
      const frame = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      if (frame.byteLength !== length) throw new Error(`tsdask: the value of ${JSON.stringify(key)} in Redis is corrupt (a frame of ${frame.byteLength} bytes, expected ${length})`);
      frames.push(frame);
    }
    return frames;
  }
}

/** Unlinks every key matching the namespace's pattern; returns how many were removed. */
export async function sweepNamespace(redis: Redis, namespace: Namespace): Promise<number> {
  let removed = 0;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", namespace.pattern, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) removed += await redis.unlink(...keys);
  } while (cursor !== "0");
  return removed;
}

function publishOutcome(code: number): PublishOutcome {
  return code === 1 ? "published" : code === 0 ? "exists" : "client-gone";
}

function randomToken(): string {
  return randomBytes(8).toString("hex");
}
