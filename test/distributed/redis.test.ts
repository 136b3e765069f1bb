// The Redis cluster end to end: real redis-server, real `tsdask worker` processes, the Redis
// transport driven by a small plan loop. Results equal the local scheduler's; diagnostics
// (transfer from "redis", compute, metrics, transfer logs) come back on the client's clock even
// from a worker whose clock is off; functions are run only as the worker allows; values larger
// than a part travel in parts; nothing is left in Redis afterwards.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { now } from "../../src/kernel/clock";
import { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { get } from "../../src/kernel/scheduler/get";
import { parseWorkerArgs } from "../../src/cli/worker";
import { ramp, total } from "../fixtures/cluster-tasks";
import { add, burn, fill, inc, mul, pair, sha1, sleep, throwMine } from "../fixtures/tasks";
import { planRunner } from "../helpers/redis-plan";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

describe("tsdask worker: command line", () => {
  test("options are read as a user types them", () => {
    assert.deepEqual(parseWorkerArgs(["redis://h:1", "--name", "w1", "--nthreads", "2", "--memory-limit", "4 GiB", "--allow-source"]), {
      url: "redis://h:1",
      name: "w1",
      nthreads: 2,
      memoryLimit: 4 * 2 ** 30,
      allowSource: true,
      tlsCa: undefined,
      lockDuration: undefined,
      stalledInterval: undefined,
      partSize: undefined,
    });
    assert.equal(parseWorkerArgs(["redis://h:1", "--memory-limit", "500MB"]).memoryLimit, 500e6);
  });

  test("mistakes are usage errors naming the option", () => {
    assert.throws(() => parseWorkerArgs([]), /one Redis address/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--nthreads", "two"]), /--nthreads needs a positive number, got "two"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--nthreads", "1.5"]), /--nthreads needs a whole number/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--memory-limit", "lots"]), /--memory-limit needs a size/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--colour"]), /colour/);
  });
});

describe("a Redis cluster", () => {
  let server: RedisServer;
  let redis: Redis;
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer({ password: "pw" });
    redis = new Redis(server.url);
    // One worker's clock is 1000 s ahead: its reports must still land on the client's clock.
    // Small parts: results larger than 64 KiB are cut into parts by the workers too.
    workers.push(await startWorker(server.url, { name: "w1", nthreads: 2, extraArgs: ["--memory-limit", "1 GiB", "--part-size", "64 KiB"] }));
    workers.push(await startWorker(server.url, { name: "w2", nthreads: 1, extraArgs: ["--part-size", "64 KiB"], env: { TSDASK_CLOCK_OFFSET: "1000" } }));
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    // BullMQ's stalled-check marker of a worker that stopped before it saw the last client leave
    // expires by itself within the stalled interval (2 s).
    await waitFor("Redis to be empty once clients and workers are gone", async () => (await redis.dbsize()) === 0, 10).catch(async (error: Error) => {
      throw new Error(`${error.message}; left: ${(await redis.keys("*")).join(", ")}`);
    });
    redis.disconnect();
    await server.stop();
  });

  test("results equal the local scheduler's, and each task counts once", async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      const block = new Float64Array(100_000).map((_, i) => i / 7);
      const graph = {
        a: 1,
        b: [inc, "a"],
        c: [add, "a", "b"],
        d: [mul, "c", 10],
        text: [sha1, "hello"],
        ints: [fill, new Int32Array(1000), 7],
        block,
        both: [pair, "d", ["text", "ints"]],
        slow: [sleep, 30],
        burn: [burn, 100_000],
      };
      const keys = [["both", "slow"], "burn", "block", "c"];
      const expected = await get(graph, keys, { scheduler: "sync" });
      const actual = await runner.compute(graph, keys);
      assert.deepEqual(actual, expected);
      assert.ok((actual as unknown[])[2] instanceof Float64Array);
      assert.deepEqual(runner.record.duplicates, []);
      assert.equal(runner.record.finished.size, 8, "one report per task");
      const tupleGraph = new Map<unknown, unknown>([
        [["x", 0], 2],
        [["x", 1], [inc, ["x", 0]]],
        [["y", 0], [add, ["x", 0], ["x", 1]]],
      ]);
      assert.deepEqual(await runner.compute(tupleGraph as never, [["y", 0]]), [5]);
    } finally {
      await transport.close();
    }
    assert.deepEqual(await redis.keys(`tsdask:${transport.clientId}*`), [], "the client's namespace is empty after close");
  });

  test("keys computed again right after they were forgotten keep their new values", async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      const graph = (n: number, offset: number): Record<string, unknown> =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`t-${i}`, [add, i, offset]]));
      const first = Object.keys(graph(200, 0));
      assert.deepEqual(await runner.compute(graph(200, 0), first), first.map((_, i) => i));
      const second = Object.keys(graph(1000, 1));
      assert.deepEqual(await runner.compute(graph(1000, 1), second), second.map((_, i) => i + 1));
    } finally {
      await transport.close();
    }
  });

  test("task errors come back as the task's own error", async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      await assert.rejects(runner.compute({ x: [throwMine, "boom"] }, "x"), (error: Error) => error.name === "MyError" && error.message === "boom" && (error as Error & { code: string }).code === "E_MINE");
    } finally {
      await transport.close();
    }
  });

  test("diagnostics: transfer from redis, compute, metrics and transfer logs, on the client's clock", async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      const start = now();
      const graph: Record<string, unknown> = { data: new Float64Array(200_000).fill(0.5) };
      for (let i = 0; i < 6; i++) graph[`total-${i}`] = [total, "data"];
      await runner.compute(graph, Object.keys(graph).filter((key) => key.startsWith("total-")));
      const stop = now();
      const records = [...runner.record.finished.values()];
      assert.equal(records.length, 6);
      assert.deepEqual(new Set(records.map((record) => record.worker)), new Set(["w1", "w2"]), "both workers took tasks");
      for (const record of records) {
        const [transfer, compute] = record.startstops;
        assert.equal(transfer.action, "transfer");
        assert.equal(transfer.source, "redis");
        assert.equal(compute.action, "compute");
        for (const time of [transfer.start, transfer.stop, compute.start, compute.stop]) {
          assert.ok(time >= start - 0.05 && time <= stop + 0.05, `${record.worker}: ${time} is outside [${start}, ${stop}]`);
        }
        assert.ok(transfer.start <= transfer.stop && transfer.stop <= compute.start + 0.01 && compute.start <= compute.stop);
        assert.equal(record.type, "number");
        const cpu = record.metrics.find((metric) => metric.context === "execute" && metric.activity === "thread-cpu");
        assert.ok(cpu !== undefined && cpu.span === "default" && cpu.prefix === "total" && cpu.unit === "seconds");
        assert.ok(record.metrics.some((metric) => metric.context === "gather-dep" && metric.activity === "network"));
        assert.ok(record.transfer !== undefined);
        assert.equal(record.transfer.who, "redis");
        assert.deepEqual(Object.keys(record.transfer.keys), ["'data'"]);
        assert.ok(record.transfer.total >= 1_600_000 && record.transfer.total < 1_601_000);
        assert.deepEqual(record.transfer.types, ["Float64Array"]);
      }
    } finally {
      await transport.close();
    }
  });

  test("the registry: workers with their threads and memory limit, and their heartbeats", async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      const w1 = runner.record.joined.find((registration) => registration.name === "w1");
      assert.ok(w1 !== undefined, "w1 is reported at start");
      assert.equal(w1.nthreads, 2);
      assert.equal(w1.memoryLimit, 2 ** 30);
      assert.equal(w1.address, "w1");
      assert.ok(w1.globals.includes("Math"));
      assert.deepEqual(transport.registeredWorkers.map((worker) => worker.info.name).sort(), ["w1", "w2"]);
      await waitFor("a heartbeat", () => transport.registeredWorkers.every((worker) => worker.beat !== undefined && worker.beat.seq >= 2));
      const extra = await startWorker(server.url, { name: "w3" });
      await waitFor("w3 to be reported", () => runner.record.joined.some((registration) => registration.name === "w3"));
      await extra.stop();
      await waitFor("w3 to be reported gone", () => runner.record.left.includes("w3"), 5);
      const duplicate = await startWorker(server.url, { name: "w1" }).then(
        () => assert.fail("a second w1 started"),
        (error: Error) => error.message,
      );
      assert.match(duplicate, /A worker named "w1" is already registered: the worker on host .* \(pid \d+\)/);
    } finally {
      await transport.close();
    }
  });

  test("values larger than a part travel in parts, both ways", async () => {
    const transport = await RedisTransport.connect(server.url, { partSize: 4096 });
    try {
      const runner = await planRunner(transport);
      const data = new Float64Array(50_000).map((_, i) => i % 13);
      const result = await runner.compute({ data, sum: [total, "data"], made: [ramp, 300_000, 1, false], madeSum: [total, "made"] }, ["sum", "made", "madeSum"]);
      assert.deepEqual(result, [total(data), ramp(300_000, 1, false), total(ramp(300_000, 1, false))]);
    } finally {
      await transport.close();
    }
  });

  test("a module missing on the worker is an error naming the module and the worker", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tsdask-module-"));
    const path = join(dir, "only-here.js");
    writeFileSync(path, "exports.triple = (x) => x * 3;\n");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { triple } = require(path) as { triple: (x: number) => number };
    rmSync(dir, { recursive: true, force: true }); // the client has it loaded; no worker can load it
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      await assert.rejects(runner.compute({ x: [triple, 2] }, "x"), (error: Error) => {
        assert.match(error.message, /Function "triple" of task 'x' is exported by module .*only-here\.js, which does not exist on worker w[12] \(host /);
        return true;
      });
    } finally {
      await transport.close();
    }
  });

  test("source text runs only on workers started with --allow-source", async () => {
    const double = (x: number): number => x * 2;
    const graph = { x: [double, 21] };
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport);
      await assert.rejects(runner.compute(graph, "x"), /Function `\(x\) => x \* 2` of task 'x' travels as source text, and worker w[12] .* does not run shipped source: .*--allow-source/);
    } finally {
      await transport.close();
    }
    // Only a worker that allows source serves this Redis now.
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    workers.push(await startWorker(server.url, { name: "open", allowSource: true }));
    const again = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(again);
      assert.equal(await runner.compute(graph, "x"), 42);
      assert.equal(await runner.compute({ m: [Math.max, 3, 9] }, "m"), 9, "built-ins run everywhere");
    } finally {
      await again.close();
    }
  });
});
