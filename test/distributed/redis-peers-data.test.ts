// Redis workers keep big results and serve them to each other (issue 27, "big values stay where
// they were made"), against a real redis-server, a real Client and real `tsdask worker`
// processes: a result above --hold-above stays in its worker's memory and Redis records only
// where it lives; a task needing it on another worker fetches it from that worker (its transfer
// log, bandwidth, gather-dep metrics and task stream name the peer, not "redis"); the client
// gathers it from the holder; small results still go through Redis; a holder nobody can reach
// publishes to Redis when asked (said once in the log); a holder killed with SIGKILL has its
// results recomputed instead of a hang.
//
// Placement follows data: a task whose inputs workers keep goes to the one keeping most of their
// bytes. Other tasks go to the queue every worker takes from: to say which worker computes them,
// the tests stop the others (SIGSTOP) while it does, or keep it busy.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client, type Future } from "../../src";
import { Future as FutureClass } from "../../src/kernel/distributed/client/future";
import { Namespace } from "../../src/kernel/distributed/redis/keys";
import { sweepStaleFolders } from "../../src/kernel/distributed/worker/folders";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { ramp, total } from "../fixtures/cluster-tasks";
import { describeKept } from "../fixtures/redis-tasks";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, closeRedisTest, linesWith, onlyOn as onlyOnWorker, rampSum, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

const quiet = ["--no-profile"];

/** A port on 127.0.0.1 nobody listens on (a contact address peers cannot reach). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("Redis workers keep big results and serve them to peers and the client", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  let namespace: Namespace;
  let unreachablePort: number;
  const workers = new Map<string, WorkerProcess>();
  const notices: string[] = [];

  const onlyOn = <T>(name: string, fn: () => Promise<T>): Promise<T> => onlyOnWorker(workers.values(), name, fn);

  /** Submits `ramp(n, start)` and waits until it is computed (not gathered). */
  async function computed(n: number, start: number): Promise<Future<Float64Array>> {
    const future = client.submit(ramp, n, start, false);
    await FutureClass.holdOf(future).settled();
    assert.equal(future.status, "finished");
    return future;
  }

  /** The fields of the value's record in Redis. */
  async function recordOf(future: Future): Promise<Record<string, Buffer>> {
    return redis.hgetallBuffer(namespace.value(FutureClass.holdOf(future).keyId));
  }

  const usedMemory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    unreachablePort = await closedPort();
    client = await Client.connect(server.url, { name: "data-plane" });
    client.scheduler.on("notice", (message) => notices.push(message));
    namespace = new Namespace((client.scheduler.transport as RedisTransport).clientId);
    const started = await Promise.all([
      startWorker(server.url, { name: "a", extraArgs: quiet }),
      startWorker(server.url, { name: "b", extraArgs: quiet }),
      startWorker(server.url, { name: "c", extraArgs: [...quiet, "--listen", "tcp://127.0.0.1:0", "--contact-address", `127.0.0.1:${unreachablePort}`] }),
    ]);
    for (const worker of started) workers.set(worker.name, worker);
    await waitFor("the client to see the three workers", () => client.workers.size === 3);
  });
  after(async () => {
    await closeRedisTest(client, workers.values(), redis, server);
    // The killed worker's spill folder (the next worker to start on this machine would sweep it).
    sweepStaleFolders("tsdask-worker-");
  });

  let big: Future<Float64Array>;

  test("a result above 64 KiB stays in its worker's memory: Redis records its holder, not its bytes; a small one goes through Redis", async () => {
    const idle = await usedMemory();
    big = await onlyOn("a", () => computed(1_000_000, 0));
    const record = await recordOf(big);
    assert.deepEqual(Object.keys(record).sort(), ["a", "h", "j", "m"], "a location: holder, address, job, metadata — no parts");
    assert.equal(record.h.toString(), "a");
    assert.match(record.a.toString(), /^tcp:\/\/127\.0\.0\.1:\d+$/);
    assert.ok((await usedMemory()) - idle < 1_000_000, "the 8 MB value is not in Redis");
    const seen = await client.run(describeKept, { workers: "a" });
    assert.ok(seen.a.kept.includes(String(big.key)), `worker a keeps ${String(big.key)}: ${seen.a.kept}`);
    assert.ok(seen.a.managed >= 8_000_000, "its managed memory counts it");

    const small = client.submit(total, big);
    assert.equal(await small.result(), rampSum(1_000_000, 0));
    const smallRecord = await recordOf(small);
    assert.ok(smallRecord["0"] !== undefined && smallRecord.h === undefined, "a number's bytes are in Redis");
    // Placement follows data: the task went to the worker keeping its input, which had nothing to fetch.
    const smallRun = client.scheduler.getTaskStream().find((entry) => entry.key === String(small.key));
    assert.equal(smallRun?.worker, "a");
    assert.deepEqual(smallRun?.startstops.map((phase) => phase.action), ["compute"]);
  });

  test("a task on another worker fetches its input from the holder: transfer logs, bandwidth, gather-dep and the task stream name the peer", async () => {
    const other = await onlyOn("b", () => computed(500_000, 1));
    assert.equal((await recordOf(other)).h.toString(), "b");
    const both = client.submit(total, big, other);
    assert.equal(await both.result(), rampSum(1_000_000, 0) + rampSum(500_000, 1));
    const record = client.scheduler.getTaskStream().find((entry) => entry.key === String(both.key));
    assert.ok(record !== undefined);
    // It went to the worker keeping most of its input bytes (a: 8 MB, b: 4 MB), which fetched the rest.
    const ran = record.worker;
    assert.equal(ran, "a");
    const inputs: [string, Future<Float64Array>, number][] = [
      ["a", big, 8_000_000],
      ["b", other, 4_000_000],
    ];
    const fetched = inputs.filter(([holder]) => holder !== ran);
    const sources = record.startstops.filter((phase) => phase.action === "transfer").map((phase) => phase.source);
    assert.deepEqual(sources.sort(), fetched.map(([holder]) => holder), `${ran}'s transfer phases name the holders`);
    const seen = await client.run(describeKept);
    for (const [holder, future, bytes] of fetched) {
      const entry: { who: string; total: number } | undefined = seen[ran].incoming.find((logged) => logged.keys.includes(String(future.key)));
      assert.deepEqual([entry?.who, entry?.total], [holder, bytes], `${ran}'s transfer log: ${String(future.key)} from ${holder}`);
    }
    assert.ok(!seen[ran].incoming.some((entry) => entry.who === "redis" && entry.keys.includes(String(big.key))), "nothing of it came from Redis");
    assert.notEqual(seen[ran].bandwidth, 100e6, "the bandwidth estimate learnt from the fetches");
    assert.ok(seen[ran].contexts.includes("gather-dep network") && seen[ran].contexts.includes("gather-dep deserialize"));
    for (const [holder, future] of fetched) {
      assert.ok(seen[holder].outgoing.some((entry) => entry.who === ran && entry.keys.includes(String(future.key))), `${holder}'s outgoing log names ${ran}`);
      assert.ok(seen[holder].contexts.includes("get-data serialize") && seen[holder].contexts.includes("get-data network"));
    }
    const metrics = client.scheduler.cumulativeWorkerMetrics();
    assert.ok(metrics.some((metric) => metric.context === "gather-dep" && metric.activity === "network" && metric.value > 0));
  });

  test("the client gathers a big result straight from its holder; Redis never holds it", async () => {
    const idle = await usedMemory();
    const value = await big.result();
    assert.ok(value instanceof Float64Array && value.length === 1_000_000 && value[999_999] === 999_999);
    assert.equal((await recordOf(big)).h.toString(), "a", "still only its location");
    assert.ok((await usedMemory()) - idle < 1_000_000);
  });

  test("a holder nobody can reach publishes its values to Redis when asked: the asking worker's log says so once, and the client's notice", async () => {
    const [x3, x4, x5] = await onlyOn("c", async () => [await computed(300_000, 2), await computed(300_000, 3), await computed(300_000, 4)]);
    assert.equal((await recordOf(x3)).a.toString(), `tcp://127.0.0.1:${unreachablePort}`, "peers are told the unreachable contact address");
    // Each sum goes to a, which keeps most of its input bytes, and cannot reach c for the rest.
    const c = workers.get("c")!;
    const sums = await Promise.all([client.submit(total, big, x3).result(), client.submit(total, big, x4).result()]);
    assert.deepEqual(sums, [rampSum(1_000_000, 0) + rampSum(300_000, 2), rampSum(1_000_000, 0) + rampSum(300_000, 3)]);
    const told = linesWith(workers.get("a")!.output(), "cannot reach peer");
    assert.equal(told.length, 1, workers.get("a")!.output());
    assert.match(told[0], new RegExp(`^tsdask worker a: cannot reach peer c at tcp://127\\.0\\.0\\.1:${unreachablePort} \\(.*ECONNREFUSED.*\\) for .+: the values it keeps come through Redis until it answers again$`));
    assert.equal(linesWith(c.output(), "cannot reach this worker's data listener").length, 1, c.output());
    const seen = await client.run(describeKept, { workers: "a" });
    assert.ok(seen.a.incoming.some((entry) => entry.who === "redis" && entry.keys.includes(String(x3.key))), "x3 came through Redis");

    assert.equal((await recordOf(x5)).h.toString(), "c");
    const gathered = await x5.result();
    assert.equal(gathered[0], 4);
    assert.equal(notices.filter((notice) => notice.startsWith("Cannot reach worker c")).length, 1, notices.join("\n"));
  });

  test("a holder killed with SIGKILL: a task needing its result gets it recomputed, and the client's gather too; nothing hangs", async () => {
    const lost = await onlyOn("a", () => computed(400_000, 5));
    await workers.get("a")!.kill();
    workers.delete("a");
    const dependent = client.submit(total, lost);
    assert.equal(await dependent.result(), rampSum(400_000, 5));
    const value = await lost.result();
    assert.equal(value[399_999], 399_999 + 5);
    assert.notEqual((await recordOf(lost)).h?.toString(), "a", "recomputed elsewhere");
    // Once its registration lapses the client drops it; what it kept is already recomputed, and stays.
    await waitFor("the client to see a leave", () => !client.workers.has("a"), 30);
    assert.equal((await lost.result())[0], 5);
  });
});
