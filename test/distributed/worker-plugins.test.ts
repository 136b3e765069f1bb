// Worker plugins (Dask's WorkerPlugin) on a real LocalCluster: shipped to forked workers by the
// task-function rules (a class exported from a module by reference, a class of the test file by
// its methods' source), set up, told the worker's transitions, torn down. Ports of
// distributed/diagnostics/tests/test_worker_plugin.py.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type Client, type Key, type LocalCluster, UnshippableFunctionError, WorkerPlugin, get } from "../../src";
import { fail } from "../fixtures/cluster-client-tasks";
import { inc } from "../fixtures/tasks";
import { MyPlugin, identity, pluginRecords } from "../fixtures/worker-plugins";
import { withCluster } from "../helpers/cluster";
import { captureStderr, capturingStderr } from "../helpers/stderr";
import { waitFor } from "../helpers/wait";

const dir = mkdtempSync(join(tmpdir(), "tsdask-worker-plugins-"));
after(() => rmSync(dir, { recursive: true, force: true }));

type Records = ReturnType<typeof pluginRecords>;
/** Each worker's plugin records, by worker address. */
const records = (client: Client): Promise<Record<string, Records>> => client.run(pluginRecords);

const oneWorker = (fn: (cluster: LocalCluster, client: Client) => Promise<void>): Promise<void> => withCluster({ nWorkers: 1, threadsPerWorker: 1 }, fn);

/** A task's transitions on the worker, once the worker has forgotten it. */
async function transitionsOf(client: Client, key: string): Promise<string[]> {
  let seen: string[] = [];
  await waitFor(`${key} forgotten on the worker`, async () => {
    const [mine] = Object.values(await records(client));
    seen = mine.MyPlugin.notifications.filter((n) => n.key === key).map((n) => `${n.start}→${n.finish}`);
    return seen.at(-1) === "released→forgotten";
  });
  return seen;
}

describe("worker plugins on a LocalCluster", () => {
  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_create_with_client
  test("test_create_with_client: a worker joining later sets the plugin up with its data; a worker closing tears it down", () =>
    oneWorker(async (cluster, client) => {
      const statusFile = join(dir, "create-with-client.log");
      await client.registerPlugin(new MyPlugin(123, statusFile));
      const first = [...client.workers.keys()][0];
      await cluster.scale(2);
      const second = [...client.workers.keys()].find((w) => w !== first)!;
      const now = await records(client);
      assert.equal(now[second].MyPlugin.status, "setup");
      assert.equal(now[second].MyPlugin.data, 123);
      assert.equal(now[first].MyPlugin.data, 123);
      await cluster.scale(1);
      await waitFor("a worker's teardown", () => readFileSync(statusFile, "utf8").includes("teardown"));
      const lines = readFileSync(statusFile, "utf8").trim().split("\n");
      assert.deepEqual(lines.filter((l) => l.startsWith("setup")).length, 2);
      assert.equal(lines.filter((l) => l.startsWith("teardown")).length, 1);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_create_with_client as Dask
  // writes it: gen_cluster(nthreads=[]) registers the plugin while the cluster has no worker.
  test("test_create_with_client, no worker yet: the plugin is registered, and set up by the first worker to join", () =>
    withCluster({ nWorkers: 0 }, async (cluster, client) => {
      class CountsSetups extends WorkerPlugin {
        constructor(readonly label: string) {
          super();
        }
        override setup(): void {
          (globalThis as Record<string, unknown>).setUpBy = this.label;
        }
      }
      const outside = 42;
      class UsesOuterName extends WorkerPlugin {
        override setup(): void {
          (globalThis as Record<string, unknown>).value = outside;
        }
      }
      await client.registerPlugin(new MyPlugin(123));
      await client.registerPlugin(new CountsSetups("early"), { name: "counts" });
      // Its methods can only be checked once a worker says what globals it has: refused then, and reported.
      await client.registerPlugin(new UsesOuterName(), { name: "outer" });
      assert.deepEqual([...client.scheduler.workerPlugins.keys()], ["MyPlugin", "counts", "outer"]);
      const stderr = await capturingStderr(() => cluster.scale(1));
      const [mine] = Object.values(await records(client));
      assert.equal(mine.MyPlugin.status, "setup");
      assert.equal(mine.MyPlugin.data, 123);
      assert.deepEqual(Object.values(await client.run(() => (globalThis as Record<string, unknown>).setUpBy)), ["early"]);
      assert.deepEqual([...client.scheduler.workerPlugins.keys()], ["MyPlugin", "counts"]);
      assert.match(stderr, /worker plugin "outer" cannot travel to the workers and was dropped: .*uses "outside"/);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_remove_with_client and ::test_remove_with_client_raises
  test("test_remove_with_client(_raises): unregistering tears a plugin down on the workers; an unknown name is an error naming it", () =>
    oneWorker(async (_cluster, client) => {
      await client.registerPlugin(new MyPlugin(123), { name: "foo" });
      await client.registerPlugin(new MyPlugin(546), { name: "bar" });
      assert.deepEqual([...client.scheduler.workerPlugins.keys()], ["foo", "bar"]);
      await client.unregisterWorkerPlugin("foo");
      assert.deepEqual([...client.scheduler.workerPlugins.keys()], ["bar"]);
      // Both instances are named MyPlugin inside (the name they were registered under is the key).
      assert.equal(Object.values(await records(client))[0].MyPlugin.status, "teardown");
      await client.unregisterWorkerPlugin("bar");
      assert.equal(client.scheduler.workerPlugins.size, 0);
      await assert.rejects(client.unregisterWorkerPlugin("bar"), /Could not find worker plugin "bar"/);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_normal_task_transitions_called
  test("test_normal_task_transitions_called: released→waiting→ready→executing→memory→released→forgotten", () =>
    oneWorker(async (_cluster, client) => {
      await client.registerPlugin(new MyPlugin(1));
      const [task] = client.map(identity, [1], { key: ["task"] });
      assert.equal(await task.result(), 1);
      task.release();
      assert.deepEqual(await transitionsOf(client, "task"), [
        "released→waiting",
        "waiting→ready",
        "ready→executing",
        "executing→memory",
        "memory→released",
        "released→forgotten",
      ]);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_failing_task_transitions_called
  test("test_failing_task_transitions_called: …→executing→error→released→forgotten", () =>
    oneWorker(async (_cluster, client) => {
      await client.registerPlugin(new MyPlugin(1));
      const [task] = client.map(fail, ["custom error"], { key: ["task"] });
      await assert.rejects(task.result(), /custom error/);
      task.release();
      assert.deepEqual(await transitionsOf(client, "task"), [
        "released→waiting",
        "waiting→ready",
        "ready→executing",
        "executing→error",
        "error→released",
        "released→forgotten",
      ]);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_dependent_tasks
  test("test_dependent_tasks: each of dep and task goes through Dask's sequence", () =>
    oneWorker(async (_cluster, client) => {
      await client.registerPlugin(new MyPlugin(1));
      assert.equal(await get({ dep: [identity, 1], task: [inc, "dep"] }, "task"), 2);
      const expected = ["released→waiting", "waiting→ready", "ready→executing", "executing→memory", "memory→released", "released→forgotten"];
      assert.deepEqual(await transitionsOf(client, "dep"), expected);
      assert.deepEqual(await transitionsOf(client, "task"), expected);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_empty_plugin and ::test_default_name
  test("test_empty_plugin / test_default_name: a plugin with no hooks registers, named after its class with a suffix", () =>
    oneWorker(async (_cluster, client) => {
      class MyCustomPlugin extends WorkerPlugin {}
      await client.registerPlugin(new MyCustomPlugin());
      const names = [...client.scheduler.workerPlugins.keys()];
      assert.equal(names.length, 1);
      assert.match(names[0], /^MyCustomPlugin-[0-9a-f-]{36}$/);
      assert.equal(await client.submit(inc, 1).result(), 2);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_WorkerPlugin_overwrite
  test("test_WorkerPlugin_overwrite: a plugin from the test file (hooks as source, using this) is replaced: old teardown, new setup", () =>
    oneWorker(async (_cluster, client) => {
      class First extends WorkerPlugin {
        override name = "custom";
        property = "foo";
        override setup(): void {
          (globalThis as Record<string, unknown>)[this.property] = 0;
        }
        override transition(): void {
          (globalThis as Record<string, unknown>)[this.property] = 123;
        }
        override teardown(): void {
          delete (globalThis as Record<string, unknown>)[this.property];
        }
      }
      await client.registerPlugin(new First());
      const readFoo = async (): Promise<unknown> => Object.values(await client.run(() => (globalThis as Record<string, unknown>).foo))[0];
      const readBar = async (): Promise<unknown> => Object.values(await client.run(() => (globalThis as Record<string, unknown>).bar))[0];
      assert.equal(await readFoo(), 0);
      assert.equal(await client.submit(inc, 0).result(), 1);
      await waitFor("foo set by a transition", async () => (await readFoo()) === 123);
      class Second extends WorkerPlugin {
        override name = "custom";
        override setup(): void {
          (globalThis as Record<string, unknown>).bar = 0;
        }
        override transition(): void {
          (globalThis as Record<string, unknown>).bar = 456;
        }
      }
      await client.registerPlugin(new Second());
      assert.equal(await readFoo(), undefined, "the first plugin was torn down");
      assert.equal(await readBar(), 0);
      assert.equal(await client.submit(inc, 10).result(), 11);
      await waitFor("bar set by a transition", async () => (await readBar()) === 456);
    }));

  // Port of distributed/diagnostics/tests/test_worker_plugin.py::test_register_idempotent_plugin and ::test_register_non_idempotent_plugin
  test("test_register_(non_)idempotent_plugin: idempotent keeps the first (the second's setup never runs); otherwise the second replaces it", () =>
    oneWorker(async (_cluster, client) => {
      class IdempotentPlugin extends WorkerPlugin {
        override name = "idempotentplugin";
        override idempotent = true;
        constructor(readonly instance: string) {
          super();
        }
        override setup(): void {
          if (this.instance !== "first") throw new Error("Only the first plugin should be started when idempotent is set");
          (globalThis as Record<string, unknown>).idempotentInstance = this.instance;
        }
      }
      await client.registerPlugin(new IdempotentPlugin("first"));
      await client.registerPlugin(new IdempotentPlugin("second"));
      assert.deepEqual(Object.values(await client.run(() => (globalThis as Record<string, unknown>).idempotentInstance)), ["first"]);
      class NonIdempotentPlugin extends WorkerPlugin {
        override name = "nonidempotentplugin";
        constructor(readonly instance: string) {
          super();
        }
        override setup(): void {
          (globalThis as Record<string, unknown>).nonIdempotentInstance = this.instance;
        }
      }
      await client.registerPlugin(new NonIdempotentPlugin("first"));
      await client.registerPlugin(new NonIdempotentPlugin("second"));
      assert.deepEqual(Object.values(await client.run(() => (globalThis as Record<string, unknown>).nonIdempotentInstance)), ["second"]);
      const registered = client.scheduler.workerPlugins.get("nonidempotentplugin");
      assert.ok(registered !== undefined && "data" in registered, "shipped: a worker is there");
      assert.equal(registered.data.instance, "second");
    }));

  // Ports of distributed/diagnostics/tests/test_worker_plugin.py::test_register_plugin_with_broken_setup_to_existing_workers_raises,
  // ::test_plugin_with_broken_setup_on_new_worker_logs and ::test_unregister_worker_plugin_with_broken_teardown_raises
  test("broken setup: raises for the workers there and is logged by a worker joining later; broken teardown: raises and is logged", () =>
    oneWorker(async (cluster, client) => {
      class BrokenSetupPlugin extends WorkerPlugin {
        override setup(): void {
          throw new Error("test error");
        }
      }
      class BrokenTeardownPlugin extends WorkerPlugin {
        override teardown(): void {
          throw new Error("test error in teardown");
        }
      }
      const stderr = captureStderr();
      try {
        await assert.rejects(client.registerPlugin(new BrokenSetupPlugin(), { name: "TestPlugin1" }), /test error/);
        await waitFor("the worker's log", () => stderr.text().includes("TestPlugin1 failed to setup"));
        const before = stderr.text().split("TestPlugin1 failed to setup").length;
        await cluster.scale(2);
        await waitFor("the new worker's log", () => stderr.text().split("TestPlugin1 failed to setup").length > before);
        assert.equal(await client.submit(inc, 1).result(), 2, "the cluster carries on");
        await client.registerPlugin(new BrokenTeardownPlugin(), { name: "TestPlugin2" });
        await assert.rejects(client.unregisterWorkerPlugin("TestPlugin2"), /test error in teardown/);
        await waitFor("the teardown's log", () => stderr.text().includes("TestPlugin2 failed to teardown"));
      } finally {
        stderr.stop();
      }
    }));

  test("a plugin that cannot travel is refused before any worker sees it, naming the plugin and what stops it", () =>
    oneWorker(async (_cluster, client) => {
      const outside = 42;
      class UsesOuterName extends WorkerPlugin {
        override setup(): void {
          (globalThis as Record<string, unknown>).value = outside;
        }
      }
      await assert.rejects(client.registerPlugin(new UsesOuterName(), { name: "outer" }), (error: unknown) => {
        assert.ok(error instanceof UnshippableFunctionError);
        assert.match(error.message, /worker plugin outer/);
        assert.match(error.message, /uses "outside"/);
        return true;
      });
      class FunctionField extends WorkerPlugin {
        callback = (key: Key): Key => key;
      }
      await assert.rejects(client.registerPlugin(new FunctionField(), { name: "fields" }), /Worker plugin "fields": its property "callback" cannot travel to a worker \(a function-valued property: make it a method\)/);
      assert.equal(client.scheduler.workerPlugins.size, 0);
    }));
});
