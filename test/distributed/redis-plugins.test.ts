// Scheduler and worker plugins on a Redis cluster: a real redis-server and real `tsdask worker`
// processes started without --allow-source. The scheduler plugin runs in this process as on a
// LocalCluster; a worker plugin passes the worker's code gate as a task's functions do: a class
// exported by the project is set up (on a worker joining later too, and torn down when it stops),
// a plugin whose hooks travel as source is refused, naming the plugin and the worker.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client, type Key, SchedulerPlugin, WorkerPlugin } from "../../src";
import { inc } from "../fixtures/tasks";
import { MyPlugin, notebookPluginRan, pluginRecords } from "../fixtures/worker-plugins";
import { type RedisServer, expectEmpty, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

describe("plugins on a Redis cluster (workers without --allow-source)", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  const workers: WorkerProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), "tsdask-redis-plugins-"));
  const statusFile = join(dir, "status.log");

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    workers.push(await startWorker(server.url, { name: "w1" }));
    client = await Client.connect(server.url, { name: "plugins" });
    await waitFor("w1 registered", () => client.workers.size === 1);
  });
  after(async () => {
    await client?.close();
    for (const worker of workers) await worker.stop();
    await expectEmpty(redis);
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_simple, on Redis
  test("test_simple on Redis: a scheduler plugin counts 3 processing → memory transitions for a chain of 3", async () => {
    class Counter extends SchedulerPlugin {
      count = 0;
      override transition(_key: Key, start: string, finish: string): void {
        if (start === "processing" && finish === "memory") this.count++;
      }
    }
    const counter = new Counter();
    await client.registerPlugin(counter, { name: "counter" });
    const z = client.submit(inc, client.submit(inc, client.submit(inc, 1)));
    assert.equal(await z.result(), 4);
    assert.equal(counter.count, 3);
    await client.unregisterSchedulerPlugin("counter");
  });

  test("a worker plugin exported by the project passes the gate: set up on w1 and on w2 joining later, torn down on unregister and when a worker stops", async () => {
    await client.registerPlugin(new MyPlugin(123, statusFile));
    let records = await client.run(pluginRecords);
    assert.equal(records.w1.MyPlugin.status, "setup");
    assert.equal(records.w1.MyPlugin.data, 123);
    workers.push(await startWorker(server.url, { name: "w2" }));
    await waitFor("w2 set up", async () => (await client.run(pluginRecords)).w2?.MyPlugin?.status === "setup");
    await client.unregisterWorkerPlugin("MyPlugin");
    records = await client.run(pluginRecords);
    assert.equal(records.w1.MyPlugin.status, "teardown");
    assert.equal(records.w2.MyPlugin.status, "teardown");
    await client.registerPlugin(new MyPlugin(456, statusFile));
    await workers.pop()!.stop();
    await waitFor("w2's teardown as it stops", () => readFileSync(statusFile, "utf8").split("\n").filter((l) => l === "teardown w2").length === 2);
    await client.unregisterWorkerPlugin("MyPlugin");
  });

  test("a worker plugin whose hooks travel as source is refused by the gate, naming the plugin and the worker; nothing of it runs", async () => {
    class FromTheNotebook extends WorkerPlugin {
      override name = "notebook-plugin";
      override setup(): void {
        (globalThis as Record<string, unknown>).ranNotebookPlugin = true;
      }
    }
    await waitFor("w2 gone", () => client.workers.size === 1);
    await assert.rejects(client.registerPlugin(new FromTheNotebook()), /worker plugin notebook-plugin .*worker w1/);
    await waitFor("the worker's log", () => /tsdask worker w1: refused .*worker plugin notebook-plugin/.test(workers[0].output()));
    assert.deepEqual(await client.run(notebookPluginRan), { w1: false });
    assert.equal(await client.submit(inc, 1).result(), 2, "the worker carries on");
    await client.unregisterWorkerPlugin("notebook-plugin");
  });

  test("a worker plugin class exported by a module outside the worker's module roots is refused, naming the module and the way to opt in", async () => {
    const outside = mkdtempSync(join(tmpdir(), "tsdask-plugin-outside-"));
    try {
      const file = join(outside, "outside-plugin.js");
      const tsdask = JSON.stringify(join(__dirname, "..", "..", "src"));
      writeFileSync(
        file,
        `const { WorkerPlugin } = require(${tsdask});\n` +
          `class OutsidePlugin extends WorkerPlugin { setup() { globalThis.ranNotebookPlugin = true; } }\n` +
          `module.exports = { OutsidePlugin };\n`,
      );
      const { OutsidePlugin } = require(file) as { OutsidePlugin: new () => WorkerPlugin };
      await assert.rejects(client.registerPlugin(new OutsidePlugin(), { name: "outside" }), /worker plugin outside is exported by module .*outside-plugin\.js.*outside the module roots of worker w1.*--module-root/);
      assert.deepEqual(await client.run(notebookPluginRan), { w1: false });
      await client.unregisterWorkerPlugin("outside");
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
