// Scheduler plugins (Dask's SchedulerPlugin) on a real LocalCluster: forked workers, the scheduler
// in this process. Ports of distributed/diagnostics/tests/test_scheduler_plugin.py, and the README
// example (a plugin recording every transition to a file) run as written in a child process.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import ts from "typescript";
import { Client, type GraphUpdate, type Key, type LocalCluster, type Scheduler, SchedulerPlugin } from "../../src";
import { fail } from "../fixtures/cluster-client-tasks";
import { inc } from "../fixtures/tasks";
import { withCluster } from "../helpers/cluster";
import { capturingStderr } from "../helpers/stderr";
import { waitFor } from "../helpers/wait";

const root = join(__dirname, "..", "..", "..");
const dir = mkdtempSync(join(tmpdir(), "tsdask-scheduler-plugins-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("scheduler plugins on a LocalCluster (2 workers × 1 thread)", () => {
  const run = (fn: (cluster: LocalCluster, client: Client) => Promise<void>): Promise<void> => withCluster({ nWorkers: 2, threadsPerWorker: 1 }, fn);

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_simple
  test("test_simple: a plugin counts processing → memory transitions (3 for a chain of 3); removed, it is gone", () =>
    run(async (_cluster, client) => {
      class Counter extends SchedulerPlugin {
        scheduler: Scheduler | undefined;
        count = 0;
        override start(scheduler: Scheduler): void {
          this.scheduler = scheduler;
        }
        override transition(_key: Key, start: string, finish: string): void {
          if (start === "processing" && finish === "memory") this.count++;
        }
      }
      const counter = new Counter();
      await client.registerPlugin(counter, { name: "counter" });
      assert.equal(counter.scheduler, client.scheduler);
      assert.equal(client.scheduler.plugins.get("counter"), counter);
      assert.equal(counter.count, 0);
      const x = client.submit(inc, 1);
      const y = client.submit(inc, x);
      const z = client.submit(inc, y);
      assert.equal(await z.result(), 4);
      assert.equal(counter.count, 3);
      await client.unregisterSchedulerPlugin("counter");
      assert.equal(client.scheduler.plugins.get("counter"), undefined);
      await assert.rejects(client.unregisterSchedulerPlugin("counter"), /Could not find plugin "counter"/);
    }));

  test("a transition carries the worker's report: processing → memory with worker, nbytes, startstops; erred with the exception", () =>
    run(async (_cluster, client) => {
      const seen: { key: Key; start: string; finish: string; worker?: string; nbytes?: number; compute: boolean; exception?: string }[] = [];
      class Recorder extends SchedulerPlugin {
        override transition(key: Key, start: string, finish: string, info: import("../../src").TransitionInfo): void {
          seen.push({ key, start, finish, worker: info.worker, nbytes: info.nbytes, compute: info.startstops?.some((s) => s.action === "compute") ?? false, exception: info.exception instanceof Error ? info.exception.message : undefined });
        }
      }
      await client.registerPlugin(new Recorder());
      const [good] = client.map(inc, [41], { key: ["good"] });
      assert.equal(await good.result(), 42);
      const memory = seen.find((t) => t.key === "good" && t.finish === "memory");
      assert.ok(memory, "good reached memory");
      assert.equal(memory.start, "processing");
      assert.ok(client.workers.has(memory.worker!), `worker ${memory.worker} is one of the cluster's`);
      assert.equal(memory.nbytes, 8);
      assert.ok(memory.compute, "startstops include the compute phase");
      const [bad] = client.map(fail, ["plugin sees this"], { key: ["bad"] });
      await assert.rejects(bad.result(), /plugin sees this/);
      const erred = seen.find((t) => t.key === "bad" && t.finish === "erred");
      assert.ok(erred, "bad erred");
      assert.equal(erred.start, "processing");
      assert.match(erred.exception ?? "", /plugin sees this/);
      // Dask's lifecycle of a task computed and then released (root tasks may pass through queued).
      good.release();
      await waitFor("good forgotten", () => seen.some((t) => t.key === "good" && t.finish === "forgotten"));
      const lifecycle = seen.filter((t) => t.key === "good").map((t) => `${t.start}→${t.finish}`);
      assert.equal(lifecycle[0], "released→waiting");
      assert.deepEqual(lifecycle.slice(-3), ["processing→memory", "memory→released", "released→forgotten"]);
    }));

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_add_remove_worker
  test("test_add_remove_worker: addWorker and removeWorker hear workers come and go; removed, the plugin hears nothing", () =>
    run(async (cluster, client) => {
      const events: [string, string][] = [];
      class MyPlugin extends SchedulerPlugin {
        override name = "MyPlugin";
        override addWorker(scheduler: Scheduler, worker: string): void {
          assert.equal(scheduler, client.scheduler);
          events.push(["addWorker", worker]);
        }
        override removeWorker(scheduler: Scheduler, worker: string): void {
          assert.equal(scheduler, client.scheduler);
          events.push(["removeWorker", worker]);
        }
      }
      await client.registerPlugin(new MyPlugin());
      assert.equal(events.length, 0);
      const before = new Set(client.workers.keys());
      await cluster.scale(4);
      const added = [...client.workers.keys()].filter((w) => !before.has(w));
      assert.equal(added.length, 2);
      assert.deepEqual(new Set(events.map(([, w]) => w)), new Set(added));
      assert.ok(events.every(([hook]) => hook === "addWorker"));
      events.length = 0;
      await cluster.scale(2);
      await waitFor("two workers removed", () => events.length === 2);
      assert.ok(events.every(([hook]) => hook === "removeWorker"));
      events.length = 0;
      await client.unregisterSchedulerPlugin("MyPlugin");
      await cluster.scale(3);
      assert.equal(events.length, 0);
    }));

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_failing_sync_add_remove_worker
  // and ::test_failing_async_add_remove_worker
  test("test_failing_sync/async_add_remove_worker: a hook that throws or rejects is logged and the cluster carries on", () =>
    run(async (cluster, client) => {
      class MySyncPlugin extends SchedulerPlugin {
        override name = "MySyncPlugin";
        override addWorker(): void {
          throw new Error("Sync add_worker failed");
        }
        override transition(): void {
          throw new Error("Sync transition failed");
        }
      }
      class MyAsyncPlugin extends SchedulerPlugin {
        override name = "MyAsyncPlugin";
        override async removeWorker(): Promise<void> {
          await Promise.resolve();
          throw new Error("Async remove_worker failed");
        }
      }
      let removed = 0;
      const logged = await capturingStderr(async () => {
        await client.registerPlugin(new MySyncPlugin());
        await client.registerPlugin(new MyAsyncPlugin());
        client.scheduler.on("worker-left", () => removed++);
        await cluster.scale(3);
        await cluster.scale(2);
        await waitFor("a worker removed", () => removed === 1);
        assert.equal(await client.submit(inc, 1).result(), 2, "the scheduler still computes");
      });
      assert.match(logged, /Plugin "MySyncPlugin" \(addWorker\).*carries on[^]*Sync add_worker failed/);
      assert.match(logged, /Plugin "MySyncPlugin" \(transition\)[^]*Sync transition failed/);
      assert.match(logged, /Plugin "MyAsyncPlugin" \(removeWorker\)[^]*Async remove_worker failed/);
    }));

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_register_plugin
  test("test_register_plugin: start runs at registration; a second under the name warns; one whose start throws is not registered", () =>
    run(async (_cluster, client) => {
      const marks: string[] = [];
      class Dummy1 extends SchedulerPlugin {
        override name = "Dummy1";
        override start(): void {
          marks.push("bar");
        }
      }
      await client.registerPlugin(new Dummy1());
      assert.deepEqual(marks, ["bar"]);
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => void warnings.push(warning.message);
      process.on("warning", onWarning);
      try {
        await client.registerPlugin(new Dummy1());
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off("warning", onWarning);
      }
      assert.ok(warnings.some((w) => w.includes("Scheduler already contains a plugin with name Dummy1")), warnings.join("; "));
      class Dummy2 extends SchedulerPlugin {
        override name = "Dummy2";
        override start(): void {
          throw new Error("raising in start method");
        }
      }
      const count = client.scheduler.plugins.names.length;
      await assert.rejects(client.registerPlugin(new Dummy2()), /raising in start method/);
      assert.equal(client.scheduler.plugins.names.length, count);
    }));

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_register_idempotent_plugin
  // and ::test_register_non_idempotent_plugin
  test("test_register_(non_)idempotent_plugin: idempotent keeps the first (whose start alone runs), otherwise the second replaces it", () =>
    run(async (_cluster, client) => {
      class IdempotentPlugin extends SchedulerPlugin {
        override name = "idempotentplugin";
        override idempotent = true;
        constructor(readonly instance: string) {
          super();
        }
        override start(): void {
          if (this.instance !== "first") throw new Error("Only the first plugin should be started when idempotent is set");
        }
      }
      await client.registerPlugin(new IdempotentPlugin("first"));
      await client.registerPlugin(new IdempotentPlugin("second"));
      assert.equal((client.scheduler.plugins.get("idempotentplugin") as IdempotentPlugin).instance, "first");
      class NonIdempotentPlugin extends SchedulerPlugin {
        override name = "nonidempotentplugin";
        constructor(readonly instance: string) {
          super();
        }
      }
      await client.registerPlugin(new NonIdempotentPlugin("first"));
      await capturingStderr(() => client.registerPlugin(new NonIdempotentPlugin("second")));
      assert.equal((client.scheduler.plugins.get("nonidempotentplugin") as NonIdempotentPlugin).instance, "second");
    }));

  // Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_update_graph_hook_simple
  test("test_update_graph_hook_simple: updateGraph hears the client, keys {foo}, tasks [foo] and one priority", () =>
    run(async (_cluster, client) => {
      let update: GraphUpdate | undefined;
      class UpdateGraph extends SchedulerPlugin {
        override updateGraph(scheduler: Scheduler, info: GraphUpdate): void {
          assert.equal(scheduler, client.scheduler);
          update = info;
        }
      }
      await client.registerPlugin(new UpdateGraph(), { name: "update-graph" });
      const [foo] = client.map(inc, [5], { key: ["foo"] });
      assert.equal(await foo.result(), 6);
      assert.ok(update);
      assert.equal(update.client, client.id);
      assert.deepEqual(update.keys, new Set(["foo"]));
      assert.deepEqual(update.tasks, ["foo"]);
      assert.equal(update.priority.size, 1);
      assert.equal(update.priority.get("foo")!.length, 2);
    }));

  test("addClient and removeClient hear a second Client connect and close; an unknown option is a TypeError", () =>
    run(async (cluster, client) => {
      const events: string[] = [];
      class Clients extends SchedulerPlugin {
        override addClient(_s: Scheduler, id: string): void {
          events.push(`add ${id}`);
        }
        override removeClient(_s: Scheduler, id: string): void {
          events.push(`remove ${id}`);
        }
      }
      await client.registerPlugin(new Clients());
      const second = await Client.connect(cluster);
      await second.close();
      assert.deepEqual(events, [`add ${second.id}`, `remove ${second.id}`]);
      assert.match(second.id, /^Client-[0-9a-f-]{36}$/);
      await assert.rejects(client.registerPlugin(new Clients(), { nmae: "x" } as never), /Unknown registerPlugin option "nmae"/);
      await assert.rejects(client.registerPlugin({ transition() {} } as never), /registerPlugin takes a SchedulerPlugin/);
    }));
});

// Port of distributed/diagnostics/tests/test_scheduler_plugin.py::test_lifecycle and ::test_closing_errors_ok
test("test_lifecycle / test_closing_errors_ok: start then close; a plugin failing in beforeClose/close is logged, the others still close", async () => {
  const history: string[] = [];
  class LifeCycle extends SchedulerPlugin {
    override start(): void {
      history.push("started");
    }
    override async beforeClose(): Promise<void> {
      history.push("before-close");
    }
    override async close(): Promise<void> {
      history.push("closed");
    }
  }
  class Bad extends SchedulerPlugin {
    override async beforeClose(): Promise<void> {
      throw new Error("BEFORE_CLOSE");
    }
    override async close(): Promise<void> {
      throw new Error("AFTER_CLOSE");
    }
  }
  let logged = "";
  await withCluster({ nWorkers: 1, threadsPerWorker: 1 }, async (cluster, client) => {
    await client.registerPlugin(new Bad());
    await client.registerPlugin(new LifeCycle());
    logged = await capturingStderr(() => cluster.close());
  });
  assert.deepEqual(history, ["started", "before-close", "closed"]);
  assert.match(logged, /BEFORE_CLOSE/);
  assert.match(logged, /AFTER_CLOSE/);
});

test("the README's transition-log example, run as written, records every task's transitions with the worker", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = /<!-- example: transition-log -->\n```ts\n([^]*?)```/.exec(readme)?.[1];
  assert.ok(block, "the README has the example");
  // A notebook cell may await at top level; a CommonJS script wraps the statements in an async function.
  const lines = block.split("\n");
  const imports = lines.filter((line) => line.startsWith("import ")).join("\n");
  const body = lines.filter((line) => !line.startsWith("import ")).join("\n");
  const source = `${imports.replace(/from "tsdask"/, `from ${JSON.stringify(join(root, "build", "src"))}`)}\n(async () => {\n${body}\n})().catch((error) => { console.error(error); process.exit(1); });\n`;
  const script = join(dir, "example.js");
  writeFileSync(script, ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText);
  execFileSync(process.execPath, [script], { cwd: dir, stdio: ["ignore", "inherit", "inherit"], timeout: 60_000 });
  const records = readFileSync(join(dir, "transitions.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { key: string; start: string; finish: string; worker?: string; nbytes?: number });
  const keys = new Set(records.map((r) => r.key));
  assert.equal(keys.size, 3, "three tasks");
  for (const key of keys) {
    const mine = records.filter((r) => r.key === key);
    assert.equal(mine[0].start, "released", `${key} starts released`);
    const memory = mine.find((r) => r.finish === "memory");
    assert.ok(memory && memory.start === "processing" && typeof memory.worker === "string" && memory.nbytes === 8, `${key} reached memory on a worker: ${JSON.stringify(mine)}`);
  }
});
