// RedisStore and Redis addresses against a real redis-server: frames as raw bytes, values cut
// into parts, publish-once, the client-liveness guard, deletion and the sweep, the way around an
// unreachable holder (../../src/kernel/distributed/redis/fallback); connecting with
// wrong credentials, to nothing, to a silent server and over TLS (a Client and a worker too).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Redis } from "ioredis";
import { Client, get } from "../../src";
import { parseRedisUrl } from "../../src/kernel/distributed/redis/address";
import { connectRedis } from "../../src/kernel/distributed/redis/connection";
import { RedisConnectError } from "../../src/kernel/distributed/redis/errors";
import { throughRedis } from "../../src/kernel/distributed/redis/fallback";
import { Namespace } from "../../src/kernel/distributed/redis/keys";
import { RedisStore } from "../../src/kernel/distributed/redis/store";
import { type SilentServer, freePort, startSilentServer } from "../helpers/net";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { startWorker } from "../helpers/redis-workers";
import { inc } from "../fixtures/tasks";

describe("Redis addresses", () => {
  test("redis:// and rediss:// with user, password, port and database", () => {
    const target = parseRedisUrl("redis://alice:s%40cret@example.org:6380/2");
    assert.deepEqual(
      { host: target.host, port: target.port, db: target.db, username: target.username, tls: target.tls, display: target.display },
      { host: "example.org", port: 6380, db: 2, username: "alice", tls: false, display: "redis://example.org:6380/2" },
    );
    assert.equal(target.revealPassword(), "s@cret");
    const tls = parseRedisUrl("rediss://:pw@[::1]");
    assert.equal(tls.tls, true);
    assert.equal(tls.host, "::1");
    assert.equal(tls.port, 6379);
    assert.equal(tls.revealPassword(), "pw");
    assert.equal(tls.username, undefined);
    assert.equal(tls.display, "rediss://[::1]:6379", "no password in what is shown");
  });

  test("anything else is an error saying what is wrong", () => {
    assert.throws(() => parseRedisUrl("localhost:6379"), /Not a Redis address: "localhost:6379"/);
    assert.throws(() => parseRedisUrl("http://host:1"), /scheme must be redis:\/\/ or rediss:\/\//);
    assert.throws(() => parseRedisUrl("redis://:secret@host:1/x"), (error: Error) => /"x" where a database number belongs/.test(error.message) && !error.message.includes("secret"));
  });
});

describe("connecting to Redis", () => {
  let server: RedisServer;
  let silent: SilentServer;
  let silentPort: number;
  before(async () => {
    server = await startRedisServer({ password: "right horse battery" });
    silent = await startSilentServer();
    silentPort = silent.port;
  });
  after(async () => {
    await server.stop();
    await silent.close();
  });

  /** `timeout`: seconds. */
  const connectError = async (url: string, timeout?: number): Promise<RedisConnectError> => {
    try {
      const redis = await connectRedis(parseRedisUrl(url), { connectTimeout: timeout });
      redis.disconnect();
    } catch (error) {
      assert.ok(error instanceof RedisConnectError, String(error));
      return error;
    }
    assert.fail(`connecting to ${url} succeeded`);
  };

  test("a wrong password, or none, is a clear error naming the host", async () => {
    const wrong = await connectError(`redis://:wrong@127.0.0.1:${server.port}`);
    assert.match(wrong.message, new RegExp(`^Cannot connect to Redis at redis://127\\.0\\.0\\.1:${server.port}: wrong user name or password`));
    assert.ok(!wrong.message.includes("wrong@"), "the password is not repeated");
    const none = await connectError(`redis://127.0.0.1:${server.port}`);
    assert.match(none.message, /requires a password/);
  });

  test("nothing listening: refused at once", async () => {
    const started = performance.now();
    const refused = await connectError(`redis://127.0.0.1:${await freePort()}`);
    assert.match(refused.message, /connection refused/);
    assert.ok(performance.now() - started < 3000);
  });

  test("a server that never answers: an error within the connect timeout, not a hang", async () => {
    const started = performance.now();
    const timedOut = await connectError(`redis://127.0.0.1:${silentPort}`, 1);
    const elapsed = performance.now() - started;
    assert.match(timedOut.message, new RegExp(`Redis at redis://127\\.0\\.0\\.1:${silentPort}: timed out`));
    assert.ok(elapsed >= 900 && elapsed < 5000, `took ${elapsed} ms`);
  });

  test("the right password connects; the connection answers", async () => {
    const redis = await connectRedis(parseRedisUrl(server.url));
    assert.equal(await redis.ping(), "PONG");
    await redis.quit();
  });

  test("rediss:// speaks TLS, with a private CA given as an option", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tsdask-tls-"));
    try {
      const openssl = (...args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
      openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=tsdask test CA", "-keyout", "ca.key", "-out", "ca.crt");
      openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr");
      const ext = join(dir, "ext.cnf");
      execFileSync("sh", ["-c", `printf 'subjectAltName=IP:127.0.0.1\\n' > ${ext}`]);
      openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", "server.crt");
      const tlsServer = await startRedisServer({ tls: { cert: join(dir, "server.crt"), key: join(dir, "server.key"), ca: join(dir, "ca.crt") } });
      try {
        assert.match(tlsServer.url, /^rediss:\/\//);
        const redis = await connectRedis(parseRedisUrl(tlsServer.url), { tls: { ca: readFileSync(join(dir, "ca.crt")) } });
        assert.equal(await redis.ping(), "PONG");
        await redis.quit();
        const untrusted = await connectError(tlsServer.url);
        assert.match(untrusted.message, /certificate/i);
        const plain = await connectError(tlsServer.url.replace("rediss://", "redis://"), 1);
        assert.match(plain.message, /Cannot connect to Redis at redis:\/\/127\.0\.0\.1/);
        // A Client and a worker over TLS, end to end.
        const worker = await startWorker(tlsServer.url, { name: "tls", extraArgs: ["--tls-ca", join(dir, "ca.crt")] });
        try {
          const client = await Client.connect(tlsServer.url, { tls: { ca: readFileSync(join(dir, "ca.crt")) } });
          try {
            assert.deepEqual([...client.workers.keys()], ["tls"]);
            assert.equal(await get({ a: 1, b: [inc, "a"] }, "b"), 2);
          } finally {
            await client.close();
          }
        } finally {
          await worker.stop();
        }
      } finally {
        await tlsServer.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("RedisStore", () => {
  let server: RedisServer;
  let redis: Redis;
  const namespace = new Namespace("storetest");
  before(async () => {
    server = await startRedisServer();
    redis = await connectRedis(parseRedisUrl(server.url));
    await redis.set(namespace.alive, "{}");
  });
  after(async () => {
    await redis.quit();
    await server.stop();
  });

  test("values round-trip; a typed array is stored as its raw bytes", async () => {
    const store = new RedisStore(redis, namespace);
    const block = new Float64Array(1000).map((_, i) => i * 0.5);
    const value = { block, label: "x", nested: [1, new Map([["k", 2n]])] };
    const { info, result } = await store.put("a", value);
    assert.equal(result, "published");
    assert.equal(info.type, "Object");
    assert.ok(info.nbytes >= block.byteLength && info.nbytes < block.byteLength + 300);
    const raw = await redis.hgetBuffer(namespace.value("a"), "1");
    assert.ok(raw !== null);
    assert.deepEqual(new Float64Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), block, "field 1 holds the block's bytes as they are");
    const { values, missing } = await store.get(["a", "nope"]);
    assert.deepEqual(missing, ["nope"]);
    assert.deepEqual(values.get("a"), value);
    assert.ok((values.get("a") as typeof value).block instanceof Float64Array);
  });

  test("a value larger than the part size is cut into parts and put together again", async () => {
    const store = new RedisStore(redis, namespace, { partSize: 1000 });
    const block = new Uint8Array(10_500).map((_, i) => (i * 7) % 251);
    await store.put("big", { block, more: new Int32Array(3000).fill(-4) });
    const fields = await redis.hkeys(namespace.value("big"));
    // metadata, the skeleton, 11 parts of the first block, 12 of the second
    assert.equal(fields.length, 1 + 1 + 11 + 12);
    const lengths = await Promise.all(fields.filter((field) => field !== "m").map((field) => redis.hstrlen(namespace.value("big"), field)));
    assert.ok(lengths.every((length) => length <= 1000), "no part is larger than partSize");
    assert.equal(await redis.keys(`${namespace.prefix}:s:*`).then((keys) => keys.length), 0, "no staging key is left");
    // A reader with another part size reads the writer's.
    const reader = new RedisStore(redis, namespace);
    const back = (await reader.get(["big"])).values.get("big") as { block: Uint8Array; more: Int32Array };
    assert.deepEqual(back.block, block);
    assert.deepEqual(back.more, new Int32Array(3000).fill(-4));
  });

  test("a job's first value under a key stays: its re-run and earlier jobs change nothing, a later job replaces it", async () => {
    const store = new RedisStore(redis, namespace, { partSize: 64 });
    const stored = async (): Promise<unknown> => (await store.get(["once"])).values.get("once");
    assert.equal((await store.put("once", new Float32Array(100).fill(1), 7)).result, "published");
    assert.equal((await store.put("once", new Float32Array(200).fill(2), 7)).result, "exists", "a re-run of job 7");
    assert.equal((await store.put("once", new Float32Array(200).fill(3), 6)).result, "exists", "an earlier job, finishing late");
    assert.deepEqual(await stored(), new Float32Array(100).fill(1));
    assert.equal((await store.put("once", new Float32Array(150).fill(4), 9)).result, "published", "a later job of the key");
    assert.deepEqual(await stored(), new Float32Array(150).fill(4));
    assert.equal((await store.put("once", 5)).result, "exists", "a write without a job never replaces");
    assert.equal(await redis.keys(`${namespace.prefix}:s:*`).then((keys) => keys.length), 0, "the losers' staging keys are gone");
  });

  test("nothing is written for a client that is gone", async () => {
    const gone = new Namespace("gone");
    const store = new RedisStore(redis, gone, { partSize: 10 });
    assert.equal((await store.put("x", new Uint8Array(100))).result, "client-gone");
    assert.equal(await store.pushReply(Buffer.from("late")), "client-gone");
    assert.deepEqual(await redis.keys(`${gone.prefix}:*`), []);
  });

  test("asking a gone holder through Redis: a value another worker keeps by now is located there, not missing", async () => {
    const store = new RedisStore(redis, namespace);
    const location = (holder: string) => ({ holder, address: `tcp://127.0.0.1:${holder === "old" ? 1 : 2}`, nbytes: 8, type: "Float64Array" });
    await store.publishLocation("stays", location("old"), 1).result;
    await store.publishLocation("moved", location("old"), 1).result;
    // Computed again on "new" after "old" was taken for gone: job 2's record replaces job 1's.
    assert.equal(await store.publishLocation("moved", location("new"), 2).result, "published");
    // Nobody listens on old's request channel: the holder is gone at once.
    const got = await throughRedis(redis, store, "old", ["stays", "moved", "never"]);
    assert.deepEqual([...got.located], [["moved", location("new")]]);
    assert.deepEqual(got.missing.sort(), ["never", "stays"]);
    assert.equal(got.frames.size, 0);
    await store.delete(["stays", "moved"]);
  });

  test("deleted values are gone; the sweep leaves nothing of the namespace", async () => {
    const store = new RedisStore(redis, namespace, { partSize: 100 });
    await store.put("d1", 1);
    await store.put("d2", "two");
    await store.put("d3", new Uint8Array(1000));
    await store.delete(["d1", "d2"]);
    assert.deepEqual((await store.get(["d1", "d2", "d3"])).missing, ["d1", "d2"]);
    await store.putTask("t", "tok", [Buffer.from("spec")]);
    const removed = await store.sweep();
    assert.ok(removed >= 2);
    assert.deepEqual(await redis.keys(`${namespace.prefix}:*`), []);
    assert.equal(await redis.exists(namespace.alive), 1, "the sweep touches only the namespace");
  });
});
