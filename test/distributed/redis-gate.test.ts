// The code gate of a Redis worker started without --allow-source, against a real redis-server and
// real `tsdask worker` processes: what a client submits and what anyone who can write to the
// Redis puts there (a job added straight to a client's queue) pass the same gate. eval, Function,
// Node's built-in modules (named, or re-exported by a project module) and packages in
// node_modules are refused with an error naming the function, the module, the worker and the way
// to opt in, and nothing of them runs; the project's own exports (the project a worker is started
// in), tsdask's and pure built-ins run; --module-root adds a folder. The worker keeps serving.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import bytes from "bytes-iec";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { Client } from "../../src";
import { parseWorkerArgs } from "../../src/cli/worker";
import * as da from "../../src/kernel/collections/array";
import { encodeTask } from "../../src/kernel/distributed/redis/jobs";
import { Namespace, TASK_QUEUE } from "../../src/kernel/distributed/redis/keys";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import type { WireTask } from "../../src/kernel/distributed/messages";
import type { FnSpec } from "../../src/kernel/execution/wire";
import { runCommand } from "../fixtures/gate-tasks";
import { describeWorker } from "../fixtures/redis-tasks";
import { inc } from "../fixtures/tasks";
import { type RedisServer, expectEmpty, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

describe("tsdask worker --module-root", () => {
  test("is repeatable, and a folder that does not exist is a usage error naming it", () => {
    assert.deepEqual(parseWorkerArgs(["redis://h:1", "--module-root", "src", "--module-root", "test"]).moduleRoots, ["src", "test"]);
    assert.equal(parseWorkerArgs(["redis://h:1"]).moduleRoots, undefined);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--module-root", "no/such/folder"]), /--module-root needs a folder that exists, got "no\/such\/folder"/);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--module-root", "package.json"]), /--module-root needs a folder that exists, got "package\.json"/);
  });
});

describe("a Redis worker without --allow-source runs only what its gate allows", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  let worker: WorkerProcess;
  const marker = join(tmpdir(), `tsdask-gate-marker-${process.pid}`);
  const outside = mkdtempSync(join(tmpdir(), "tsdask-module-root-"));

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    worker = await startWorker(server.url, { name: "w1" });
    client = await Client.connect(server.url, { name: "gate" });
  });
  after(async () => {
    await client?.close();
    await worker?.stop();
    await expectEmpty(redis);
    redis.disconnect();
    await server.stop();
    rmSync(marker, { force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  /**
   * Adds a job to the client's task queue as any program with access to the Redis could; resolves
   * to the refusal the worker logged for it (its outcome goes to the client, which drops it: the
   * job is not one of its tasks).
   */
  async function writeJobStraightIntoRedis(spec: FnSpec, args: readonly unknown[]): Promise<string> {
    const namespace = new Namespace((client.scheduler.transport as RedisTransport).clientId);
    const queue = new Queue(TASK_QUEUE, { connection: redis, prefix: namespace.queuePrefix });
    const task: WireTask = ["call", 0, ...args.map((arg): WireTask => ["lit", arg])];
    const key = `attack-${++attacks}`;
    const data = { key, name: `'${key}'`, prefix: "attack", spanId: "s", task: { frames: encodeTask(task).frames.map((frame) => frame.toString("base64")) }, functions: [[0, spec]], inputs: [] };
    await queue.add("attack", data, { jobId: `j${900_000 + attacks}` });
    await queue.close();
    const refused = new RegExp(`tsdask worker w1: refused (Function .* of task '${key}' .*)`);
    await waitFor(`the worker to refuse the job of ${key}`, () => refused.test(worker.output()), 30);
    return refused.exec(worker.output())![1];
  }
  let attacks = 0;

  const stillServing = async (): Promise<void> => {
    assert.equal(await client.submit(Math.max, 3, 9).result(), 9, "the worker still serves");
    assert.equal(worker.output().includes("exited"), false);
  };

  test("eval and Function are refused, naming the function, the task, the worker, its host and the opt-in", async () => {
    const code = `process.getBuiltinModule('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`;
    await assert.rejects(client.submit(eval, code).result(), (error: Error) => {
      assert.match(error.message, /^Function eval of task '.*' is the built-in eval, which worker w1 \(host [^)]+\) does not run: .*Math\.\*.*--allow-source/);
      return true;
    });
    await assert.rejects(client.submit(Function, code).result(), /Function Function of task .* is the built-in Function, which worker w1 \(host [^)]+\) does not run/);
    assert.equal(existsSync(marker), false, "nothing ran");
    assert.match(worker.output(), /tsdask worker w1: refused Function eval of task/, "the operator sees the refusal");
    await stillServing();
  });

  test("a job written straight into Redis naming child_process.execSync or fs.writeFileSync is refused and nothing runs", async () => {
    const exec = await writeJobStraightIntoRedis({ kind: "module", path: "child_process", name: "execSync" }, [`touch ${marker}`]);
    assert.match(exec, /^Function "execSync" of task 'attack-1' is exported by child_process, a Node built-in module, whose functions worker w1 \(host [^)]+\) runs only when started with --allow-source/);
    const write = await writeJobStraightIntoRedis({ kind: "module", path: "node:fs", name: "writeFileSync" }, [marker, "ran"]);
    assert.match(write, /"writeFileSync" of task 'attack-2' is exported by node:fs, a Node built-in module/);
    const getter = await writeJobStraightIntoRedis({ kind: "global", path: ["process", "getBuiltinModule"] }, ["child_process"]);
    assert.match(getter, /Function process\.getBuiltinModule of task 'attack-3' is the built-in process\.getBuiltinModule, which worker w1 .* does not run/);
    const source = await writeJobStraightIntoRedis({ kind: "source", source: `() => require("fs").writeFileSync(${JSON.stringify(marker)}, "ran")`, method: false }, []);
    assert.match(source, /travels as source text, and worker w1 .* does not run shipped source/);
    assert.equal(existsSync(marker), false, "nothing ran");
    await stillServing();
  });

  test("a Node built-in function re-exported by a project module, and a package's export in node_modules, are refused", async () => {
    await assert.rejects(client.submit(runCommand, `touch ${marker}`).result(), (error: Error) => {
      assert.match(error.message, /^Function "runCommand" of task .* is exported by module .*gate-tasks\.js, and that is a function of a Node built-in module .* worker w1 \(host [^)]+\) runs only when started with --allow-source/);
      return true;
    });
    assert.equal(existsSync(marker), false, "nothing ran");
    await assert.rejects(client.submit(bytes.parse, "1 KiB").result(), (error: Error) => {
      assert.match(error.message, /^Function "parse" of task .* is exported by module .*node_modules\/bytes-iec\/index\.js.*, which lies outside the module roots of worker w1 \(host [^)]+\) \(.*\): start the worker with --module-root naming that module's folder, or with --allow-source/);
      return true;
    });
    await stillServing();
  });

  test("the project's own exports, tsdask's array kernels and pure built-ins run", async () => {
    assert.equal(await client.submit(inc, 41).result(), 42);
    assert.deepEqual(await client.submit(JSON.parse, "[1,2]").result(), [1, 2]);
    assert.deepEqual(await client.submit(Object.keys, { a: 1, b: 2 }).result(), ["a", "b"]);
    const total = await da.ones([4, 4], { chunks: 2 }).sum().compute();
    assert.equal(total.data[0], 16);
    assert.deepEqual(await client.run(describeWorker).then((byWorker) => Object.keys(byWorker)), ["w1"]);
  });

  test("client.run with a function the worker does not run is refused", async () => {
    await assert.rejects(client.run(eval as never), /Function eval of client\.run is the built-in eval, which worker w1 \(host [^)]+\) does not run/);
    await assert.rejects(client.run(bytes as never), /of client\.run is exported by module .*bytes-iec.*, which lies outside the module roots of worker w1/);
    await stillServing();
  });

  test("--module-root allows the modules under a folder, a package's folder in node_modules too", async () => {
    const path = join(outside, "triple.js");
    writeFileSync(path, "exports.triple = (x) => x * 3;\n");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { triple } = require(path) as { triple: (x: number) => number };
    await assert.rejects(client.submit(triple, 2).result(), /Function "triple" of task .* is exported by module .*triple\.js, which lies outside the module roots of worker w1/);
    // Only a worker that allows that folder and bytes-iec's serves the Redis now.
    await worker.stop();
    worker = await startWorker(server.url, { name: "rooted", extraArgs: ["--module-root", outside, "--module-root", "node_modules/bytes-iec"] });
    await waitFor("only the rooted worker to be connected", () => client.workers.size === 1 && client.workers.has("rooted"), 10);
    assert.equal(await client.submit(triple, 3).result(), 9);
    assert.equal(await client.submit(bytes.parse, "2 KiB").result(), 2048);
    assert.match(worker.output(), /tsdask worker rooted: runs exports of modules under .*tsdask-module-root-.*bytes-iec/);
    await assert.rejects(client.submit(eval, "1").result(), /is the built-in eval, which worker rooted/, "--module-root allows no built-in");
  });

  test("a worker started outside any project runs tsdask's kernels and built-ins, not the tests' modules", async () => {
    await worker.stop();
    // No package.json in the temporary folder nor above it: no project.
    worker = await startWorker(server.url, { name: "elsewhere", cwd: outside });
    await waitFor("only the worker started elsewhere to be connected", () => client.workers.size === 1 && client.workers.has("elsewhere"), 10);
    const total = await da.ones([6, 6], { chunks: 3 }).sum().compute();
    assert.equal(total.data[0], 36, "the array kernels are tsdask's own");
    assert.equal(await client.submit(Math.min, 3, 9).result(), 3);
    await assert.rejects(client.submit(inc, 5).result(), /Function "inc" of task .* is exported by module .*fixtures\/tasks\.js, which lies outside the module roots of worker elsewhere \(host [^)]+\) \([^)]*kernel\/collections, [^)]*diagnostics\.js;/);
  });
});
