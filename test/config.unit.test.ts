// Choosing the scheduler as Dask's get_scheduler does: the call's option, then withConfig,
// then config.set, then an open Client (a GraphScheduler), then the collection's default
// (arrays: threads; raw graphs and delayed: sync). Unknown names and bad values are TypeErrors.
import assert from "node:assert/strict";
import { after, afterEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  Callback,
  type GraphRun,
  type GraphScheduler,
  Profiler,
  type WorkerId,
  closePools,
  config,
  delayed,
  get,
  setDefaultGraphScheduler,
  withCallbacks,
  withConfig,
} from "../src";
import * as da from "../src/kernel/collections/array";
import { add, mul } from "./diagnostics/tasks";

after(() => closePools());
afterEach(() => {
  config.reset();
  setDefaultGraphScheduler(null);
});

const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };

/** A GraphScheduler that runs graphs with tsdask's sync scheduler and remembers what it was given. */
class RecordingScheduler implements GraphScheduler {
  readonly runs: GraphRun[] = [];
  constructor(readonly description: string) {}
  async run(request: GraphRun): Promise<unknown> {
    this.runs.push(request);
    return get(request.graph, request.keys, { scheduler: "sync", callbacks: [...request.callbacks] });
  }
}

/** The worker ids that ran the tasks of `compute`, by a Profiler in a block around it. */
async function workersOf(compute: () => Promise<unknown>): Promise<Set<WorkerId>> {
  const prof = new Profiler();
  await withCallbacks(prof, compute);
  return new Set(prof.results.map((record) => record.workerId));
}

const onThreads = (ids: Set<WorkerId>): boolean => ids.size > 0 && [...ids].every((id) => typeof id === "number" && id !== process.pid);
const onThisThread = (ids: Set<WorkerId>): boolean => ids.size === 1 && ids.has(null);

describe("each collection's default", () => {
  test("arrays compute on threads, raw graphs and delayed on this thread", async () => {
    const x = da.ones([20, 20], { chunks: [10, 10] });
    assert.ok(onThreads(await workersOf(() => x.sum().compute())));
    assert.ok(onThreads(await workersOf(() => x.persist())));
    assert.ok(onThisThread(await workersOf(() => get(dsk, "e"))));
    const inc = delayed((n: number) => n + 1);
    assert.ok(onThisThread(await workersOf(() => inc(inc(1)).compute())));
  });
});

describe("config.set and withConfig", () => {
  test("config.set applies to every computation until restored", async () => {
    const change = config.set({ scheduler: "threads", numWorkers: 2 });
    assert.equal(config.get("scheduler"), "threads");
    assert.equal(config.get("numWorkers"), 2);
    assert.ok(onThreads(await workersOf(() => get(dsk, "e"))));
    change.restore();
    assert.equal(config.get("scheduler"), undefined);
    assert.ok(onThisThread(await workersOf(() => get(dsk, "e"))));
  });

  test("restore puts back the previous value; undefined unsets; reset unsets all", () => {
    config.set({ scheduler: "processes" });
    const change = config.set({ scheduler: "threads", numWorkers: 3 });
    change.restore();
    change.restore(); // twice is harmless
    assert.equal(config.get("scheduler"), "processes");
    assert.equal(config.get("numWorkers"), undefined);
    config.set({ scheduler: undefined });
    assert.equal(config.get("scheduler"), undefined);
    config.set({ numWorkers: 2 })[Symbol.dispose]();
    assert.equal(config.get("numWorkers"), undefined);
    config.set({ scheduler: "threads", numWorkers: 2 });
    config.reset();
    assert.deepEqual([config.get("scheduler"), config.get("numWorkers")], [undefined, undefined]);
  });

  test("numWorkers from the config sizes the pool", async () => {
    config.set({ numWorkers: 1 });
    const x = da.ones([40, 40], { chunks: [10, 10] });
    assert.equal((await workersOf(() => x.sum().compute())).size, 1);
  });

  test("withConfig scopes to the computations started inside it, even concurrent ones", async () => {
    const slowAdd = async (a: number, b: number): Promise<number> => (await sleep(5), a + b);
    const graph = { x: [slowAdd, 1, 2], y: [slowAdd, "x", 3] };
    const seen: Record<string, WorkerId[]> = { scoped: [], outside: [] };
    const recorder = (name: string) => new Callback({ posttask: (_key, _value, _dsk, _state, id) => seen[name].push(id) });
    // Inside the block: processes would fail to ship slowAdd (a closure), so use a GraphScheduler that says where it ran.
    const client = new RecordingScheduler("scoped client");
    const scoped = withConfig({ scheduler: client }, async () => {
      await sleep(1);
      return get(graph, "y", { callbacks: [recorder("scoped")] });
    });
    const outside = get(graph, "y", { callbacks: [recorder("outside")] });
    assert.deepEqual(await Promise.all([scoped, outside]), [6, 6]);
    assert.equal(client.runs.length, 1);
    assert.deepEqual(client.runs[0]!.keys, "y");
    assert.deepEqual([seen.scoped.length, seen.outside.length], [2, 2]);
  });

  test("withConfig blocks nest, inner values win, and undefined unsets for the block", async () => {
    config.set({ scheduler: "threads" });
    await withConfig({ scheduler: "sync", numWorkers: 2 }, async () => {
      assert.equal(config.get("scheduler"), "sync");
      await withConfig({ numWorkers: 3 }, () => {
        assert.deepEqual([config.get("scheduler"), config.get("numWorkers")], ["sync", 3]);
      });
      await withConfig({ scheduler: undefined }, async () => {
        assert.equal(config.get("scheduler"), "threads");
        assert.ok(onThreads(await workersOf(() => get(dsk, "e"))));
      });
      assert.ok(onThisThread(await workersOf(() => get(dsk, "e"))));
    });
    assert.equal(config.get("numWorkers"), undefined);
  });

  test("withConfig returns what its function returns", async () => {
    assert.equal(withConfig({}, () => 5), 5);
    assert.equal(await withConfig({ scheduler: "sync" }, () => get(dsk, "e")), 6);
  });

  test("unknown names are TypeErrors naming them; bad values name the setting", () => {
    assert.throws(() => config.set({ schedular: "threads" } as never), /Unknown config name "schedular"; known: scheduler, numWorkers/);
    assert.throws(() => config.set({ a: 1, b: 2 } as never), /Unknown config names "a", "b"/);
    assert.throws(() => withConfig({ num_workers: 2 } as never, () => 1), /Unknown config name "num_workers"/);
    assert.throws(() => config.set({ scheduler: "thread" as never }), /Config scheduler must be "sync", "threads", "processes", a GraphScheduler/);
    assert.throws(() => config.set({ numWorkers: 0 }), /Config numWorkers must be a whole number ≥ 1, got 0/);
    assert.throws(() => config.get("pool" as never), /Unknown config name "pool"/);
    assert.equal(config.get("scheduler"), undefined, "a rejected set changes nothing");
  });
});

describe("precedence: call option, scoped config, global config, open Client, collection default", () => {
  const client = new RecordingScheduler("Client(test)");
  const scopedClient = new RecordingScheduler("Client(scoped)");
  const globalClient = new RecordingScheduler("Client(global)");

  test("each source wins over the ones after it", async () => {
    const x = da.ones([20, 20], { chunks: [10, 10] });
    const used = (): string[] => [client, scopedClient, globalClient].map((s) => `${s.description}:${s.runs.length}`);

    setDefaultGraphScheduler(client);
    await x.sum().compute(); // an open Client beats the array's default (threads)
    await get(dsk, "e"); // and the raw graph's (sync)
    assert.deepEqual(used(), ["Client(test):2", "Client(scoped):0", "Client(global):0"]);

    config.set({ scheduler: globalClient }); // global config beats the open Client
    await x.sum().compute();
    assert.deepEqual(used(), ["Client(test):2", "Client(scoped):0", "Client(global):1"]);

    await withConfig({ scheduler: scopedClient }, async () => {
      await x.sum().compute(); // scoped config beats global config
      assert.deepEqual(used(), ["Client(test):2", "Client(scoped):1", "Client(global):1"]);
      // The call's option beats everything.
      assert.ok(onThisThread(await workersOf(() => x.sum().compute({ scheduler: "sync" }))));
      assert.equal(await get(dsk, "e", { scheduler: client }), 6);
    });
    assert.deepEqual(used(), ["Client(test):3", "Client(scoped):1", "Client(global):1"]);

    config.reset();
    setDefaultGraphScheduler(null);
    assert.ok(onThreads(await workersOf(() => x.sum().compute())));
  });

  test("a GraphScheduler gets the graph, the keys, every active callback and a signal", async () => {
    const gs = new RecordingScheduler("Client(callbacks)");
    const scoped = new Callback();
    const own = new Callback();
    const registered = new Callback().register();
    try {
      const controller = new AbortController();
      const result = await withCallbacks(scoped, () => get(dsk, [["c"], "e"], { scheduler: gs, callbacks: [own], signal: controller.signal }));
      assert.deepEqual(result, [[3], 6]);
      const [run] = gs.runs;
      assert.deepEqual(run!.keys, [["c"], "e"]);
      assert.equal(run!.graph.get("a"), 1);
      assert.deepEqual(new Set(run!.callbacks), new Set([own, scoped, registered]));
      assert.equal(run!.signal.aborted, false);
      controller.abort();
      assert.equal(run!.signal.aborted, true, "the caller's signal reaches it");
    } finally {
      registered.unregister();
    }
  });

  test("the cache option cannot go to a GraphScheduler; a non-scheduler is a TypeError", async () => {
    const gs = new RecordingScheduler("Client(x)");
    await assert.rejects(get(dsk, "e", { scheduler: gs, cache: new Map() }), /Option cache works with the local schedulers only, not with Client\(x\)/);
    await assert.rejects(get(dsk, "e", { scheduler: { run: () => 1 } as never }), /Option scheduler must be .* got an object without run\(\) and description/);
    assert.throws(() => setDefaultGraphScheduler({} as never), /setDefaultGraphScheduler takes a GraphScheduler/);
  });

  test("a get function chooses too (Dask's scheduler=get); one that would call itself is caught", async () => {
    const calls: string[] = [];
    const logged = (graph: Parameters<typeof get>[0], keys: Parameters<typeof get>[1], options?: Parameters<typeof get>[2]) => {
      calls.push(String(keys));
      return get(graph, keys, { ...options, scheduler: "sync" });
    };
    assert.equal(await get(dsk, "e", { scheduler: logged }), 6);
    config.set({ scheduler: logged });
    assert.equal(await get(dsk, "c"), 3);
    assert.deepEqual(calls, ["e", "c"]);
    const loops = (graph: Parameters<typeof get>[0], keys: Parameters<typeof get>[1]) => get(graph, keys);
    config.set({ scheduler: loops });
    await assert.rejects(get(dsk, "e"), /The scheduler function loops calls get\(\) without choosing a scheduler/);
  });
});
