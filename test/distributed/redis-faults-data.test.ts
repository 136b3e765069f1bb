// Faults of Redis workers that keep results (issue 27, "faults lose nothing"), with a real
// redis-server, a real Client, real `tsdask worker` processes and real signals: a worker stopped
// with SIGTERM hands the results only it keeps to a peer (or into Redis when no peer takes them in
// time) and nothing is computed again; a fetch from a frozen peer (SIGSTOP), by a worker needing
// inputs or by the client gathering, times out after --peer-timeout / peerTimeout, naming the
// peer and the key, and the value is recomputed; a peer frozen only for a moment is read directly
// again once it answers. The tasks note each run in a file, so that a
// result computed twice shows.
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client, type Future } from "../../src";
import { Future as FutureClass } from "../../src/kernel/distributed/client/future";
import { Namespace, registry } from "../../src/kernel/distributed/redis/keys";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { sweepStaleFolders } from "../../src/kernel/distributed/worker/folders";
import { total } from "../fixtures/cluster-tasks";
import { countedRamp, describeWorker } from "../fixtures/redis-tasks";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, closeRedisTest, linesWith, onlyOn as onlyOnWorker, rampSum, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

/** Short, so that a frozen peer is given up on quickly. */
const PEER_TIMEOUT = 2;
const workerArgs = ["--no-profile", "--peer-timeout", String(PEER_TIMEOUT)];
const N = 1_000_000; // 8 MB per value: far above --hold-above

describe("Redis workers that keep results: faults lose nothing", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  let namespace: Namespace;
  const runs = join(tmpdir(), `tsdask-faults-data-${process.pid}.txt`);
  const workers = new Map<string, WorkerProcess>();
  const notices: string[] = [];
  const leftBecause = new Map<string, string>();

  async function addWorker(name: string, extraArgs: readonly string[] = []): Promise<WorkerProcess> {
    const worker = await startWorker(server.url, { name, extraArgs: [...workerArgs, ...extraArgs] });
    workers.set(name, worker);
    await waitFor(`the client to see worker ${name}`, () => client.workers.has(name));
    return worker;
  }

  const onlyOn = <T>(name: string, fn: () => Promise<T>): Promise<T> => onlyOnWorker(workers.values(), name, fn);

  /** Submits `countedRamp(N, start)` and waits until it is computed (not gathered). */
  async function computed(start: number, n = N): Promise<Future<Float64Array>> {
    const future = client.submit(countedRamp, n, start, runs);
    await FutureClass.holdOf(future).settled();
    assert.equal(future.status, "finished");
    return future;
  }

  /** Who keeps the value now, as Redis records it (undefined: its bytes are in Redis). */
  async function holderOf(future: Future): Promise<string | undefined> {
    return (await redis.hget(namespace.value(FutureClass.holdOf(future).keyId), "h")) ?? undefined;
  }

  /** How often countedRamp ran with each start. */
  function runCounts(): Map<number, number> {
    const counts = new Map<number, number>();
    for (const line of readFileSync(runs, "utf8").split("\n").filter(Boolean)) counts.set(Number(line), (counts.get(Number(line)) ?? 0) + 1);
    return counts;
  }

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    client = await Client.connect(server.url, { name: "faults-data", peerTimeout: PEER_TIMEOUT });
    client.scheduler.on("notice", (message) => notices.push(message));
    client.scheduler.on("worker-left", (worker, reason) => leftBecause.set(worker, reason));
    namespace = new Namespace((client.scheduler.transport as RedisTransport).clientId);
    await addWorker("a");
    await addWorker("b");
  });
  after(async () => {
    for (const worker of workers.values()) process.kill(worker.pid, "SIGCONT");
    try {
      await closeRedisTest(client, workers.values(), redis, server);
    } finally {
      rmSync(runs, { force: true });
      sweepStaleFolders("tsdask-worker-");
    }
  });

  let kept: Future<Float64Array>[];

  test("a worker stopped with SIGTERM hands the results only it keeps to a peer, through the data plane; nothing is computed again", async () => {
    kept = await onlyOn("a", () => Promise.all([0, 1, 2].map((start) => computed(start))));
    for (const future of kept) assert.equal(await holderOf(future), "a");

    const a = workers.get("a")!;
    await a.stop();
    workers.delete("a");
    const handed = linesWith(a.output(), "handed");
    assert.equal(handed.length, 1, a.output());
    assert.match(handed[0], new RegExp(`^tsdask worker a: handed 3 value\\(s\\) \\(24\\.0 MB\\) of client ${namespace.clientId} to worker b: `));
    for (const future of kept) assert.ok(handed[0].includes(String(future.key)), `${future.key} handed: ${handed[0]}`);
    for (const future of kept) assert.equal(await holderOf(future), "b", "Redis records the new holder");
    assert.equal(linesWith(workers.get("b")!.output(), "took 3 value(s)").length, 1, workers.get("b")!.output());
    // b fetched them from a as a peer fetches inputs: its transfer log names a, not Redis.
    const seen = await client.run(describeWorker, { workers: "b" });
    const fromA = seen.b.incoming.filter((transfer) => transfer.who === "a").flatMap((transfer) => transfer.keys);
    assert.deepEqual(fromA.sort(), kept.map((future) => String(future.key)).sort());

    // The client, seeing a leave, reads where its values went instead of recomputing them.
    await waitFor("the client to see a leave", () => !client.workers.has("a"), 15);
    const results = await client.gather(kept);
    results.forEach((result, start) => {
      assert.equal(result.length, N);
      assert.equal(result[0], start);
    });
    assert.equal(await client.submit(total, kept[0], kept[1]).result(), rampSum(N, 0) + rampSum(N, 1));
    assert.deepEqual([...runCounts()].sort(), [[0, 1], [1, 1], [2, 1]], "each ran once");
  });

  test("with its only peer frozen, a leaving worker writes what it keeps into Redis after --handoff-timeout, exits, and nothing is computed again", async () => {
    await addWorker("c", ["--handoff-timeout", "2"]);
    const b = workers.get("b")!;
    process.kill(b.pid, "SIGSTOP");
    let stoppedIn: number;
    let future: Future<Float64Array>;
    try {
      future = await computed(10);
      assert.equal(await holderOf(future), "c");
      const c = workers.get("c")!;
      const stopping = performance.now();
      await c.stop();
      stoppedIn = (performance.now() - stopping) / 1000;
      workers.delete("c");
      assert.match(linesWith(c.output(), "into Redis").join("\n"), new RegExp(`^tsdask worker c: put 1 of 1 value\\(s\\) \\(8\\.0 MB\\) of client ${namespace.clientId} into Redis, no peer taking them in time: ${future.key}$`));
    } finally {
      process.kill(b.pid, "SIGCONT");
    }
    // The 2 s for clients to stop placing tasks on it, 2 s waiting for the frozen peer, the write.
    assert.ok(stoppedIn < 15, `it took ${stoppedIn.toFixed(1)} s to stop`);
    assert.equal(await holderOf(future), undefined, "the bytes are in Redis");
    await waitFor("the client to see c leave", () => !client.workers.has("c"), 15);
    const value = await future.result();
    assert.equal(value[N - 1], 10 + N - 1);
    assert.equal(runCounts().get(10), 1, "ran once");
  });

  test("a fetch from a frozen peer times out after --peer-timeout, naming the peer and the key, and the value is recomputed; so does the client's gather", async () => {
    await addWorker("d");
    const b = workers.get("b")!;
    const d = workers.get("d")!;
    // A bigger input on d: a task needing both goes to d, which fetches the other from b.
    const big = await onlyOn("d", () => computed(20, 2 * N));
    // d's connection to b is made and idle when b freezes: the wait for a reply times out.
    assert.equal(await client.submit(total, kept[1], big).result(), rampSum(N, 1) + rampSum(2 * N, 20));
    process.kill(b.pid, "SIGSTOP");
    try {
      const started = performance.now();
      const needing = client.submit(total, kept[0], big).result();
      // The client's connection to b is made (it gathered from b before): this gather times out too.
      const gathered = kept[2].result();
      await waitFor("d to give up on b", () => linesWith(d.output(), "cannot reach peer b").length > 0, 30);
      const told = linesWith(d.output(), "cannot reach peer b")[0];
      assert.match(told, /^tsdask worker d: cannot reach peer b at tcp:\/\/127\.0\.0\.1:\d+ \(.*nothing sent or received for 2 s.*\) for /);
      assert.ok(told.includes(String(kept[0].key)), told);
      assert.equal(await needing, rampSum(N, 0) + rampSum(2 * N, 20));
      const value = await gathered;
      assert.equal(value[0], 2);
      const seconds = (performance.now() - started) / 1000;
      // b's registration lapses (10 s after its last heartbeat) before its values are taken for lost.
      assert.ok(seconds < 40, `took ${seconds.toFixed(1)} s`);
      const notice = notices.find((text) => text.startsWith("Cannot reach worker b"));
      assert.match(notice ?? "", /^Cannot reach worker b at tcp:\/\/127\.0\.0\.1:\d+ \(.*nothing sent or received for 2 s.*\) for /);
      assert.ok(notice!.includes(String(kept[2].key)), notice);
    } finally {
      process.kill(b.pid, "SIGCONT");
    }
    // Thawed, b leaves as a worker stopped with SIGTERM does (it took its registration back).
    await b.stop();
    workers.delete("b");
    // Lost with the frozen holder, computed again once: a task's report that the old copy is
    // missing, arriving after the new one exists, reruns the task needing it, not the input; the
    // client's gather, finding the value moved to a new holder while it waited, reads it there.
    assert.equal(runCounts().get(0), 2, JSON.stringify([...runCounts()]));
    assert.equal(runCounts().get(2), 2, JSON.stringify([...runCounts()]));
    assert.equal(runCounts().get(20), 1, "the input on the live worker ran once");
  });

  test("a task placed on a worker just killed with SIGKILL runs elsewhere within seconds: its closed connections tell, not its registration's TTL", async () => {
    const e = await addWorker("e");
    const x = await onlyOn("e", () => computed(30));
    assert.equal(await holderOf(x), "e");
    await e.kill();
    workers.delete("e");
    const killed = performance.now();
    // Placed on e, which keeps its input: nobody runs e's queue until the client takes e for gone.
    const sum = await client.submit(total, x).result();
    const seconds = (performance.now() - killed) / 1000;
    assert.equal(sum, rampSum(N, 30));
    assert.equal(leftBecause.get("e"), "its connections to Redis closed: its process died");
    // Two registry polls (1 s apart) without its connections, then x again: its registration (TTL 10 s) would take longer.
    assert.ok(seconds < 8, `took ${seconds.toFixed(1)} s`);
    assert.equal(runCounts().get(30), 2, "x, lost with e, computed again once");
    // Its registration lapses, and the client's next read of the registry drops its name: Redis is left empty.
    await waitFor("e's registration to lapse", async () => (await redis.sismember(registry.workers, "e")) === 0, 20);
  });

  test("a peer frozen for a moment and thawed serves its values directly again, not through Redis for good", async () => {
    const f = await addWorker("f");
    const d = workers.get("d")!;
    // A bigger input on d: a task needing both goes to d, which fetches the other from f.
    const big = await onlyOn("d", () => computed(40, 2 * N));
    const fetchedFromF = async (): Promise<string[]> => (await client.run(describeWorker, { workers: "d" })).d.incoming.filter((transfer) => transfer.who === "f").flatMap((transfer) => transfer.keys);
    const [before, during, after] = await onlyOn("f", () => Promise.all([41, 42, 43].map((start) => computed(start))));
    assert.equal(await client.submit(total, before, big).result(), rampSum(N, 41) + rampSum(2 * N, 40));
    assert.ok((await fetchedFromF()).includes(String(before.key)), "fetched from f directly");

    process.kill(f.pid, "SIGSTOP");
    let sum: Promise<number>;
    try {
      sum = client.submit(total, during, big).result();
      await waitFor("d to give up on f", () => linesWith(d.output(), "cannot reach peer f").length > 0, 30);
    } finally {
      process.kill(f.pid, "SIGCONT");
    }
    // Thawed, f publishes the value d asked for into Redis.
    assert.equal(await sum, rampSum(N, 42) + rampSum(2 * N, 40));
    const address = /cannot reach peer f at (\S+) /.exec(linesWith(d.output(), "cannot reach peer f")[0])![1];
    const answered = `tsdask worker d: the peer at ${address} answers again: the values it keeps come from it directly`;
    await waitFor("d to reach f again", () => linesWith(d.output(), answered).length > 0, 30);
    assert.equal(await client.submit(total, after, big).result(), rampSum(N, 43) + rampSum(2 * N, 40));
    assert.ok((await fetchedFromF()).includes(String(after.key)), "fetched from f directly once it answered again");
    for (const start of [41, 42, 43]) assert.equal(runCounts().get(start), 1, `${start} ran once`);
  });
});
