// LocalCluster and Client on the real thing: forked worker processes, Unix sockets, real spill
// files, real SIGKILL, the OS's own accounting of processes.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, test } from "node:test";
import {
  CacheProfiler,
  Callback,
  Client,
  KilledWorkerError,
  LocalCluster,
  type LocalClusterOptions,
  Profiler,
  ProgressBar,
  ResourceProfiler,
  TaskTransferError,
  UnshippableFunctionError,
  delayed,
  get,
  nbytes,
  withCallbacks,
} from "../../src";
import { AbortError } from "../../src/kernel/scheduler/loop";
import type { TaskStreamRecord, TransferLogEntry } from "../../src/protocol/records";
import { closureOf, fail, hog, killOwnProcess, processId, shout, slowInc, sumOfList } from "../fixtures/cluster-client-tasks";
import { add, inc, pair } from "../fixtures/tasks";
import { noise, ramp, spinCpu, total } from "../fixtures/cluster-tasks";
import { withCluster } from "../helpers/cluster";

const root = join(__dirname, "..", "..", "..");

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && !readStat(pid).startsWith("Z");
}

function readStat(pid: number): string {
  try {
    const stat = execFileSync("cat", [`/proc/${pid}/stat`], { encoding: "utf8" });
    return stat.slice(stat.lastIndexOf(")") + 2);
  } catch {
    return "";
  }
}

/** The worker that ran the task whose key starts with `prefix`. */
function workerOf(records: readonly TaskStreamRecord[], prefix: string): string {
  const record = records.find((r) => r.key.startsWith(prefix));
  assert.ok(record, `a task-stream record for ${prefix}`);
  return record.worker;
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs `fn` while recording what is written to `stream` (still written through); returns the text. */
async function capturing(stream: NodeJS.WriteStream, fn: (written: () => string) => Promise<void>): Promise<string> {
  const chunks: string[] = [];
  const write = stream.write.bind(stream);
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(String(chunk));
    return write(chunk as never, ...(rest as []));
  }) as typeof stream.write;
  try {
    await fn(() => chunks.join(""));
  } finally {
    stream.write = write;
  }
  return chunks.join("");
}

describe("LocalCluster and Client", () => {
  let cluster: LocalCluster;
  let client: Client;

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, memoryLimit: "1 GiB", name: "cluster-tests", dashboardAddress: null });
    client = await Client.connect(cluster);
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  test("start: the workers, their threads and memory limit, Dask's option names", () => {
    assert.equal(cluster.workers.size, 2);
    for (const ws of cluster.workers.values()) {
      assert.equal(ws.nthreads, 1);
      assert.equal(ws.memoryLimit, 2 ** 30);
      assert.match(ws.address, /^unix:\/\//);
    }
    assert.equal(cluster.processes.length, 2);
    assert.equal(String(cluster), `LocalCluster('cluster-tests', workers=2, threads=2, memory=2.00 GiB)`);
    assert.equal(client.dashboardLink, null);
  });

  test("get runs on the open Client by default, and with scheduler: client", async () => {
    const add = (a: number, b: number): number => a + b;
    const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [Math.max, "c", 10] };
    const before = cluster.scheduler.taskStream.index;
    assert.deepEqual(await get(dsk, ["d", ["c"]]), [10, [3]]);
    assert.equal(await get(dsk, "c", { scheduler: client }), 3);
    assert.ok(cluster.scheduler.taskStream.index > before, "the tasks ran on the cluster");
    assert.equal(await get(dsk, "c", { scheduler: "sync" }), 3);
    const inc = delayed((x: number) => x + 1, { name: "inc" });
    assert.equal(await inc(inc(1)).compute(), 3);
  });

  test("small results come back with their tasks' reports: get and a Future ask no worker again; a big one is gathered", async () => {
    const transport = cluster.scheduler.transport;
    const gathered: string[] = [];
    const gather = transport.gather!.bind(transport);
    transport.gather = (worker, keys) => {
      gathered.push(...keys);
      return gather(worker, keys);
    };
    try {
      const dsk = { a: [inc, 1], b: [ramp, 4, 1, false], big: [ramp, 100_000, 0, false], c: [add, "a", 10] };
      const [c, b, big] = (await get(dsk, ["c", "b", "big"], { scheduler: client })) as [number, Float64Array, Float64Array];
      assert.equal(c, 12);
      assert.deepEqual(b, Float64Array.of(1, 2, 3, 4));
      assert.equal(big.length, 100_000);
      const future = client.submit(inc, 41);
      assert.equal(await future.result(), 42);
      future.release();
      assert.deepEqual(gathered, ["big"], "only the 800 kB result was fetched from its worker");
    } finally {
      transport.gather = gather;
    }
  });

  test("a task error reaches the caller as with the local schedulers", async () => {
    await assert.rejects(get({ x: [fail, "bad input"] }, "x"), (error: Error & { code?: string }) => {
      assert.ok(error instanceof RangeError);
      assert.equal(error.message, "bad input");
      assert.equal(error.code, "E_TASK");
      return true;
    });
    // The cluster is still usable.
    assert.equal(await get({ y: [processId] }, "y").then((pid) => typeof pid), "number");
  });

  test("a function that cannot reach a worker is refused before anything runs", async () => {
    const secret = 42;
    const before = cluster.scheduler.taskStream.index;
    await assert.rejects(get({ x: [() => secret] }, "x"), UnshippableFunctionError);
    assert.throws(() => client.submit(() => secret), UnshippableFunctionError);
    assert.equal(cluster.scheduler.taskStream.index, before);
  });

  test("an argument that cannot be copied fails its task before anything is sent, naming the key and the argument; no worker is touched", async () => {
    const pids = cluster.processes.map((worker) => worker.pid);
    const before = cluster.scheduler.taskStream.index;
    const said = await capturing(process.stderr, async () => {
      assert.throws(
        () => client.submit((o: object) => typeof o, { f() { return 1; } } as never),
        (error: unknown) => {
          assert.ok(error instanceof TaskTransferError);
          assert.equal(error.direction, "argument");
          assert.match(String(error.key), /^lambda-[0-9a-f]{32}$/);
          assert.deepEqual(error.where, { argument: 1, path: ".f", what: "a function f() { return 1; }" });
          assert.equal(error.message, `Task '${String(error.key)}': argument 1 cannot be sent to a worker: .f is a function f() { return 1; }, which cannot be copied`);
          return true;
        },
      );
      // The second item of a map, a graph's literal (get), nested parts beside a Future.
      assert.throws(() => client.map((x: unknown) => x, [1, Promise.resolve(2)]), /argument 1 cannot be sent to a worker: it is a Promise, which cannot be copied/);
      await assert.rejects(get({ x: [pair, 1, { deep: [0, Symbol("s")] }] }, "x"), (error: unknown) => {
        assert.ok(error instanceof TaskTransferError);
        assert.equal(error.message, "Task 'x': argument 2 cannot be sent to a worker: .deep[1] is a symbol (Symbol(s)), which cannot be copied");
        return true;
      });
      const input = client.submit(slowInc, 1, 1);
      assert.throws(() => client.submit(pair, { input, keep: new WeakMap() } as never, 2), /argument 1 cannot be sent to a worker: \.keep is a WeakMap/);
      await input.result();
      input.release();
    });
    assert.doesNotMatch(said, /could not be cloned|cannot send to worker/);
    assert.deepEqual(cluster.processes.map((worker) => worker.pid), pids, "every worker process is the one that was there");
    assert.ok(pids.every(alive));
    assert.equal(cluster.scheduler.taskStream.index, before + 1, "only the valid input ran");
    // Released here rather than left to the garbage collector: later tests wait for an empty scheduler.
    const still = client.submit(slowInc, 41, 1);
    assert.equal(await still.result(), 42, "the cluster still computes");
    still.release();
  });

  test("a result that cannot be copied fails its task with TaskTransferError naming the part; the worker survives", async () => {
    const pids = cluster.processes.map((worker) => worker.pid);
    const future = client.submit(closureOf, 7);
    await assert.rejects(future.result(), (error: Error) => {
      assert.equal(error.name, "TaskTransferError");
      assert.equal(error.message, `Task '${String(future.key)}': its result cannot be sent back from the worker: it is a function () => x, which cannot be copied`);
      return true;
    });
    future.release();
    assert.deepEqual(cluster.processes.map((worker) => worker.pid), pids);
    const next = client.submit(slowInc, 1, 1);
    assert.equal(await next.result(), 2);
    next.release();
  });

  test("Futures: submit, map, gather, a Future as an argument, status and key", async () => {
    const a = client.submit(slowInc, 1, 10);
    assert.equal(a.status, "pending");
    assert.match(String(a.key), /^slowInc-[0-9a-f]{32}$/);
    const b = client.submit(slowInc, a, 10);
    const parts = [client.submit(ramp, 4, 1, true), client.submit(ramp, 4, 10, true)];
    const c = client.submit(total, ...parts);
    const nested = client.submit(sumOfList, { list: parts } as never);
    assert.equal(await b.result(), 3);
    assert.equal(a.status, "finished");
    assert.equal(await c.result(), 1 + 2 + 3 + 4 + 10 + 11 + 12 + 13);
    assert.equal(await nested.result(), 1 + 2 + 3 + 4 + 10 + 11 + 12 + 13, "Futures inside arrays and objects stand for their results");
    const mapped = client.map((x: number) => x * 10, [1, 2, 3]);
    assert.deepEqual(await client.gather(mapped), [10, 20, 30]);
    assert.deepEqual(await client.gather({ first: mapped[0], rest: [mapped[1], 7] }), { first: 10, rest: [20, 7] });
    // The same call is the same key: no second task.
    const again = client.submit(slowInc, 1, 10);
    assert.equal(again.key, a.key);
    again.release();
    const failed = client.submit(fail, "nope");
    await assert.rejects(failed.result(), /nope/);
    assert.equal(failed.status, "error");
    assert.ok((await failed.exception()) instanceof RangeError);
    for (const future of [a, b, c, nested, failed, ...parts, ...mapped]) future.release();
  });

  // Port of distributed/tests/test_client.py::test_map (its multiple-iterable parts).
  test("map over several iterables zips them, Futures among them too (Dask's test_map)", async () => {
    const L1 = client.map(inc, [0, 1, 2, 3, 4]);
    const L2 = client.map(inc, L1);
    const L3 = client.map(add, L1, L2);
    assert.deepEqual(await client.gather(L3), [3, 5, 7, 9, 11]);
    const L4 = client.map(add, [0, 1, 2], [0, 1, 2, 3]);
    assert.deepEqual(await client.gather(L4), [0, 2, 4], "as many calls as the shortest iterable has items");
    for (const future of [...L1, ...L2, ...L3, ...L4]) future.release();
  });

  // Port of distributed/tests/test_client.py::test_map_naming.
  test("map: equal calls share a key; pure: false gives each its own (Dask's test_map_naming)", () => {
    const L1 = client.map(inc, [0, 1, 2, 3, 4]);
    const L2 = client.map(inc, [0, 1, 2, 3, 4]);
    assert.deepEqual(L1.map((f) => f.key), L2.map((f) => f.key));
    const L3 = client.map(inc, [1, 1, 1, 1]);
    assert.equal(new Set(L3.map((f) => f.key)).size, 1);
    const L4 = client.map(inc, [1, 1, 1, 1], { pure: false });
    assert.equal(new Set(L4.map((f) => f.key)).size, 4);
    for (const future of [...L1, ...L2, ...L3, ...L4]) future.release();
  });

  // Port of distributed/tests/test_client.py::test_map_keynames.
  test("map: key is the keys' prefix, or one key per call (Dask's test_map_keynames)", async () => {
    const futures = client.map(inc, [0, 1, 2, 3], { key: "INC" });
    assert.ok(futures.every((f) => typeof f.key === "string" && f.key.startsWith("INC")));
    const futures2 = client.map(inc, [5, 6, 7, 8], { key: "INC" });
    assert.notDeepEqual(futures.map((f) => f.key), futures2.map((f) => f.key));
    const keys = ["inc-1", "inc-2", "inc-3", "inc-4"];
    const named = client.map(inc, [0, 1, 2, 3], { key: keys });
    assert.deepEqual(named.map((f) => f.key), keys);
    assert.deepEqual(await client.gather(named), [1, 2, 3, 4]);
    for (const future of [...futures, ...futures2, ...named]) future.release();
  });

  // Port of distributed/tests/test_client.py::test_gather_skip.
  test("gather with errors: \"skip\" leaves erred Futures out (Dask's test_gather_skip)", async () => {
    const x = client.submit((a: number, b: number) => {
      if (b === 0) throw new RangeError("division by zero");
      return a / b;
    }, 1, 0);
    const y = client.submit(slowInc, 1, 500);
    assert.deepEqual(await client.gather([x, y], { errors: "skip" }), [2]);
    await assert.rejects(client.gather([x, y]), /division by zero/);
    x.release();
    y.release();
  });

  test("Future.client is the Client that made it (Dask's Future.client)", () => {
    const future = client.submit(inc, 1);
    assert.equal(future.client, client);
    const [mapped] = client.map(inc, [2]);
    assert.equal(mapped.client, client);
    future.release();
    mapped.release();
  });

  test("an option nothing reads is a TypeError naming it", async () => {
    assert.throws(() => client.map(inc, [1], { keys: ["a"] } as never), /Unknown client\.map option "keys"; known: key, pure/);
    await assert.rejects(client.gather([], { error: "skip" } as never), /Unknown client\.gather option "error"; known: errors/);
    await assert.rejects(client.gather([], { errors: "ignore" } as never), /errors must be "raise" or "skip"/);
    assert.throws(() => client.map(add, [1], 2 as never), /client\.map options must be an object, got number/);
    assert.throws(() => client.map(add, [1], 2 as never, [3]), /client\.map: argument 3 must be an iterable/);
  });

  test("a result stays on its worker while a Future holds it; the last release frees it", async () => {
    // Earlier tests release their Futures without waiting; their keys may still be held.
    await until(() => cluster.scheduler.state.taskCount === 0, 5000, "earlier tests' keys to be forgotten");
    const held = client.submit(ramp, 1000, 5, true);
    const other = client.submit(ramp, 1000, 5, true);
    assert.equal(held.key, other.key);
    await held.result();
    const holders = async (): Promise<number> => {
      const found = await client.run((worker) => worker.data.keys.length);
      return Object.values(found).reduce((total, n) => total + n, 0);
    };
    assert.equal(await holders(), 1);
    held.release();
    assert.equal(held.status, "cancelled");
    await assert.rejects(held.result(), /released/);
    assert.equal(await holders(), 1, "another Future still holds it");
    other.release();
    await until(() => cluster.scheduler.state.taskCount === 0, 5000, "the scheduler to forget the key");
    assert.equal(await holders(), 0);
  });

  test("a forgotten Future is released when it is garbage-collected", () => {
    const script = `
      const { LocalCluster, Client } = require(${JSON.stringify(join(root, "build/src"))});
      const { ramp } = require(${JSON.stringify(join(root, "build/test/fixtures/cluster-tasks"))});
      (async () => {
        const cluster = await LocalCluster.start({ nWorkers: 1, dashboardAddress: null, name: "gc" });
        const client = await Client.connect(cluster);
        await (async () => { await client.submit(ramp, 10, 1, true).result(); })();
        const held = cluster.scheduler.state.taskCount;
        for (let i = 0; i < 100 && cluster.scheduler.state.taskCount > 0; i++) { global.gc(); await new Promise((r) => setTimeout(r, 20)); }
        console.log(held, cluster.scheduler.state.taskCount);
        await cluster.close();
      })();`;
    const out = execFileSync(process.execPath, ["--expose-gc", "-e", script], { encoding: "utf8", timeout: 30_000 });
    assert.equal(out.trim().split("\n").pop(), "1 0", "held while referenced, released once collected");
  });

  test("placement by data locality: a task goes where its input is, and nothing moves", async () => {
    const input = client.submit(ramp, 250_000, 1, true);
    await input.result();
    const start = cluster.scheduler.taskStream.index;
    const sum = client.submit(total, input);
    assert.equal(await sum.result(), (250_000 * 250_001) / 2);
    const records = cluster.scheduler.taskStream.collect({ startIndex: start });
    const holder = cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf(String(input.key))!)[0].address;
    assert.equal(workerOf(records, "total"), holder);
    assert.ok(records.every((r) => r.startstops.every((s) => s.action !== "transfer")));
    input.release();
    sum.release();
  });

  test("peer transfer: an input computed on worker A and used on B is in both transfer logs with its bytes", async () => {
    const before = await client.run((worker) => ({ incoming: worker.incomingTransferLog.length, outgoing: worker.outgoingTransferLog.length }));
    const a = client.submit(ramp, 1_000_000, 1, true);
    const b = client.submit(ramp, 1_000_000, 2, true);
    await client.gather([a, b]);
    const state = cluster.scheduler.state;
    const whereA = state.whoHas(state.slotOf(String(a.key))!)[0].address;
    const whereB = state.whoHas(state.slotOf(String(b.key))!)[0].address;
    assert.notEqual(whereA, whereB, "the two inputs were placed on different workers");
    const sum = client.submit(total, a, b);
    assert.equal(await sum.result(), total(ramp(1_000_000, 1, true), ramp(1_000_000, 2, true)));
    const ranOn = workerOf(cluster.scheduler.taskStream.collect({ count: 1 }), "total");
    const source = ranOn === whereA ? whereB : whereA;
    const moved = ranOn === whereA ? b : a;
    assert.equal(workerOf(cluster.scheduler.taskStream.collect({ count: 1 }), "total"), ranOn);
    const logs = (await client.run((worker) => ({ incoming: worker.incomingTransferLog, outgoing: worker.outgoingTransferLog }))) as Record<
      string,
      { incoming: TransferLogEntry[]; outgoing: TransferLogEntry[] }
    >;
    const incoming = logs[ranOn].incoming.slice(before[ranOn].incoming);
    const outgoing = logs[source].outgoing.slice(before[source].outgoing);
    // Dask's logs hold the keys themselves: a string key is its own str.
    const name = String(moved.key);
    assert.equal(incoming.length, 1);
    assert.equal(outgoing.length, 1);
    assert.equal(incoming[0].who, source);
    assert.equal(outgoing[0].who, ranOn);
    assert.deepEqual(incoming[0].keys, { [name]: 8_000_000 });
    assert.deepEqual(outgoing[0].keys, { [name]: 8_000_000 });
    assert.equal(incoming[0].total, 8_000_000);
    assert.ok(incoming[0].compressed >= 8_000_000, "the block crossed the wire as raw bytes (plus framing)");
    assert.ok(incoming[0].bandwidth > 0 && incoming[0].duration >= 0.001);
    const record = cluster.scheduler.taskStream.collect({ count: 1 })[0];
    assert.deepEqual(
      record.startstops.map((s) => [s.action, s.source]),
      [
        ["transfer", source],
        ["deserialize", undefined],
        ["compute", undefined],
      ],
    );
    for (const future of [a, b, sum]) future.release();
  });

  test("client.run and client.runOnScheduler", async () => {
    const names = await client.run((worker) => worker.name);
    assert.deepEqual(Object.keys(names).sort(), [...cluster.workers.keys()].sort());
    assert.deepEqual(Object.values(names).sort(), ["worker-0", "worker-1"]);
    const counted = await client.runOnScheduler((scheduler) => scheduler.workerRecords().map((w) => w.nthreads));
    assert.deepEqual(counted, [1, 1]);
    const secret = 1;
    await assert.rejects(client.run(() => secret), UnshippableFunctionError);
  });

  test("callbacks: ProgressBar, Profiler, CacheProfiler and ResourceProfiler work on the cluster", async () => {
    const out = new PassThrough();
    let text = "";
    out.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const progress = new ProgressBar({ out, dt: 0.05 });
    const profiler = new Profiler();
    const cache = new CacheProfiler({ metric: nbytes });
    const resources = new ResourceProfiler({ dt: 0.05 });
    const dsk = new Map<unknown, unknown>([
      ["x", [ramp, 1000, 1, true]],
      ["y", [ramp, 1000, 2, true]],
      ["spin-1", [spinCpu, 600]],
      ["spin-2", [spinCpu, 600]],
      ["s", [total, "x", "y"]],
    ]);
    const pretasks: string[] = [];
    const seen = new Set<string>();
    const order = {
      pretask: (key: unknown) => pretasks.push(String(key)),
      posttask: (key: unknown) => {
        assert.ok(pretasks.includes(String(key)), `pretask before posttask for ${String(key)}`);
        seen.add(String(key));
      },
    };
    const cpuBefore = process.cpuUsage();
    const result = await withCallbacks([progress, profiler, cache, resources, new Callback(order)], () =>
      get(dsk as never, ["s", "spin-1", "spin-2"]),
    );
    assert.equal((result as number[])[0], total(ramp(1000, 1, true), ramp(1000, 2, true)));
    assert.deepEqual([...seen].sort(), ["s", "spin-1", "spin-2", "x", "y"]);
    assert.match(text, /\[#{40}\] \| 100% Completed \|/);
    assert.equal(profiler.results.length, 5);
    const addresses = [...cluster.workers.keys()];
    for (const record of profiler.results) {
      assert.match(String(record.workerId), /^unix:\/\/.+#\d+$/);
      assert.ok(addresses.includes(String(record.workerId).split("#")[0]));
      assert.ok(record.endTime >= record.startTime);
    }
    const spins = profiler.results.filter((r) => String(r.key).startsWith("spin"));
    assert.ok(spins.every((r) => r.endTime - r.startTime >= 0.59), "the worker's own timing of the task");
    const x = cache.results.find((r) => r.key === "x")!;
    assert.equal(x.metric, 8000, "CacheProfiler measured the result on its worker");
    assert.ok(x.freeTime >= x.cacheTime);
    assert.ok(resources.results.length > 3);
    const mainMB = process.memoryUsage.rss() / 1e6;
    assert.ok(Math.max(...resources.results.map((r) => r.mem)) > mainMB + 40, "the workers' memory is counted");
    // CPU: what the samples add up to beyond this process's own use (the workers' spinning).
    let sampledSeconds = 0;
    for (let i = 1; i < resources.results.length; i++) {
      const [previous, current] = [resources.results[i - 1], resources.results[i]];
      sampledSeconds += (current.cpu / 100) * (current.time - previous.time);
    }
    const ownSeconds = (process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system) / 1e6;
    assert.ok(sampledSeconds > ownSeconds + 0.1, `the workers' CPU is counted (${sampledSeconds.toFixed(2)} s sampled, ${ownSeconds.toFixed(2)} s here)`);
  });

  test("abort stops the computation and leaves the cluster usable", async () => {
    const controller = new AbortController();
    const running = get({ long: [slowInc, 1, 30_000], longer: [slowInc, "long", 30_000] }, "longer", { signal: controller.signal });
    await until(() => cluster.scheduler.state.stateCounts().processing === 2, 5000, "the task to start");
    const t0 = performance.now();
    controller.abort(new Error("enough"));
    await assert.rejects(running, (error: Error) => error instanceof AbortError && /enough/.test(error.message));
    assert.ok(performance.now() - t0 < 1000, "the abort is prompt");
    await until(() => cluster.scheduler.state.taskCount === 0, 5000, "the computation's tasks to be forgotten");
    assert.equal(await get({ quick: [slowInc, 1, 1] }, "quick"), 2);
  });

  test("a task's console.log reaches this process's output", async () => {
    await capturing(process.stdout, async (written) => {
      await get({ say: [shout, "hello from a worker"] }, "say");
      await until(() => written().includes("hello from a worker"), 2000, "the worker's output");
    });
  });

  test("scale adds and retires workers", async () => {
    await cluster.scale(3);
    assert.equal(cluster.workers.size, 3);
    const names = await client.run((worker) => worker.name);
    assert.equal(Object.keys(names).length, 3);
    await cluster.scale(2);
    assert.equal(cluster.workers.size, 2);
    assert.equal(await get({ z: [slowInc, 41, 1] }, "z"), 42);
  });
});

describe("LocalCluster faults", () => {
  test("a worker killed with SIGKILL mid-computation: detected within 2 s, the answer is still right", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1, name: "sigkill" }, async (cluster, client) => {
    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < 8; i++) dsk[`slow-${i}`] = [slowInc, i, 150];
    dsk.total = [(...xs: number[]) => xs.reduce((a, b) => a + b, 0), ...Object.keys(dsk)];
    const computing = get(dsk, "total", { scheduler: client });
    await until(() => cluster.scheduler.taskStream.index >= 2, 10_000, "some tasks to finish");
    const victim = cluster.processes[0];
    const left = new Promise<number>((resolve) => cluster.scheduler.once("worker-left", () => resolve(performance.now())));
    const killedAt = performance.now();
    process.kill(victim.pid, "SIGKILL");
    assert.ok((await left) - killedAt < 2000, "the death is noticed within 2 s");
    assert.equal(await computing, 36);
    await until(() => cluster.workers.size === 2, 10_000, "the nanny to replace the worker");
    assert.ok(!alive(victim.pid));
    });
  });

  test("a task that kills every worker it runs on fails with KilledWorkerError naming it", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1, name: "killer" }, async (cluster, client) => {
    await assert.rejects(get({ poison: [killOwnProcess] }, "poison", { scheduler: client }), (error: KilledWorkerError) => {
      assert.ok(error instanceof KilledWorkerError);
      assert.equal(error.key, "poison", "the key itself, as Dask's KilledWorker.task");
      assert.equal(error.failures, 4, "Dask's allowed-failures = 3: the fourth death fails it");
      assert.match(error.message, /'poison'/);
      return true;
    });
    await until(() => cluster.workers.size === 2, 10_000, "the nanny to replace the workers");
    assert.equal(await get({ fine: [slowInc, 1, 1] }, "fine", { scheduler: client }), 2);
    });
  });

  test("the nanny restarts a worker whose memory passes 95 % of its limit, saying so", async () => {
    await withCluster({ nWorkers: 1, threadsPerWorker: 1, memoryLimit: "300 MiB", allowedFailures: 0, name: "nanny" }, async (cluster) => {
      const pid = cluster.processes[0].pid;
      const said = await capturing(process.stderr, async () => {
        await assert.rejects(get({ hog: [hog, 400, 10_000] }, "hog"), KilledWorkerError);
      });
      assert.match(said, new RegExp(`worker worker-0 \\(unix://.+, pid ${pid}\\) uses [\\d.]+ MiB of its 300.00 MiB memory limit \\(more than 95 %\\): restarting it`));
      assert.ok(!alive(pid));
      await until(() => cluster.workers.size === 1, 10_000, "the replacement worker");
      assert.notEqual(cluster.processes[0].pid, pid);
    });
  });

  test("spill to disk under a small memory limit, and read back", async () => {
    const options: LocalClusterOptions = {
      nWorkers: 1,
      threadsPerWorker: 1,
      memoryLimit: "400 MiB",
      memoryThresholds: { target: 0.15, spill: false, pause: false },
      name: "spill",
    };
    await withCluster(options, async (cluster, client) => {
    const futures = Array.from({ length: 24 }, (_, i) => client.submit(ramp, 500_000, i, true));
    await client.gather(futures.slice(-1));
    await Promise.all(futures.map((f) => f.result().then(() => undefined)));
    const [layout] = Object.values(
      await client.run((worker) => {
        const fs = require("node:fs") as typeof import("node:fs");
        const files = fs.readdirSync(worker.localDirectory, { recursive: true }) as string[];
        const modes = [...new Set(files.map((file) => (fs.statSync(`${worker.localDirectory}/${file}`).mode & 0o777).toString(8)))];
        const folderMode = (fs.statSync(worker.localDirectory).mode & 0o777).toString(8);
        return { onDisk: worker.data.onDisk.length, inMemory: worker.data.inMemory.length, files: files.length, spilled: worker.memory.spilled, modes, folderMode };
      }),
    ) as { onDisk: number; inMemory: number; files: number; spilled: number; modes: string[]; folderMode: string }[];
    assert.ok(layout.onDisk > 0, "some results went to disk");
    assert.ok(layout.files > 0, "as files in the worker's folder");
    // Private inside the 0700 cluster folder too: spill files 0600, the worker's folder 0700, sockets 0600.
    assert.deepEqual(layout.modes, ["600"]);
    assert.equal(layout.folderMode, "700");
    const sockets = readdirSync(cluster.folder).filter((name) => name.endsWith(".sock"));
    assert.ok(sockets.includes("scheduler.sock") && sockets.length >= 2, `the scheduler's and the worker's sockets: ${sockets.join(", ")}`);
    for (const name of sockets) assert.equal((statSync(join(cluster.folder, name)).mode & 0o777).toString(8), "600", name);
    assert.equal(layout.onDisk + layout.inMemory, 24);
    // Read back: every value intact.
    const values = (await client.gather(futures)) as Float64Array[];
    values.forEach((value, i) => {
      assert.equal(value.length, 500_000);
      assert.equal(value[0], i);
      assert.equal(value[499_999], i + 499_999);
    });
    assert.ok(layout.spilled >= 4_000_000 * layout.onDisk);
    await until(() => cluster.scheduler.memory().spilled > 0, 3000, "a heartbeat to report the spilled bytes");
    assert.ok(cluster.scheduler.memory().managed > 0);
    });
  });

  for (const { mebibytes, count, megabytes } of [
    { mebibytes: 512, count: 16, megabytes: 64 },
    { mebibytes: 256, count: 5, megabytes: 32 },
  ]) {
    const limit = `${mebibytes} MiB`;
    test(`${count} results of ${megabytes} MB held under a ${limit} limit: spilled, never a restart or near one, all right`, async () => {
      const options: LocalClusterOptions = { nWorkers: 1, threadsPerWorker: 1, memoryLimit: limit, allowedFailures: 0, name: "pressure" };
      let folder = "";
      const said = await capturing(process.stderr, () =>
        withCluster(options, async (cluster, client) => {
          folder = cluster.folder;
          const pid = cluster.processes[0].pid;
          let peak = 0;
          const sampler = setInterval(() => (peak = Math.max(peak, cluster.processes[0].residentBytes() ?? 0)), 10);
          const values = (megabytes * 1e6) / 8;
          const futures = Array.from({ length: count }, (_, i) => client.submit(noise, values, i));
          // Held, not gathered: the worker keeps them all (Dask's wait).
          const errors = await Promise.all(futures.map((future) => future.exception()));
          clearInterval(sampler);
          assert.deepEqual(errors, futures.map(() => undefined));
          assert.equal(cluster.processes[0].pid, pid, "the worker was never restarted");
          // Results spilled as they land and freed when written: far from the nanny's 95 %
          // (copied off its thread and freed at the next collection, each result took twice its size).
          assert.ok(peak < 0.85 * mebibytes * 2 ** 20, `the worker's resident memory peaked at ${(peak / 2 ** 20).toFixed(0)} MiB of its ${limit}`);
          const [layout] = Object.values(
            await client.run((worker) => ({ onDisk: worker.data.onDisk.length, files: (require("node:fs") as typeof import("node:fs")).readdirSync(worker.localDirectory).length })),
          ) as { onDisk: number; files: number }[];
          assert.ok(layout.onDisk > 0 && layout.files === layout.onDisk, `results on disk: ${JSON.stringify(layout)}`);
          // One at a time, so the test's process holds one result at a time too; spilled ones are read back.
          for (const [i, future] of futures.entries()) {
            const value = await future.result();
            assert.ok(value.length === values && value[0] === i && value[values - 1] === i, `result ${i} is right`);
            future.release();
          }
          assert.equal(cluster.processes[0].pid, pid, "nor while its results were read back");
        }),
      );
      assert.doesNotMatch(said, /restarting it/);
      assert.equal(existsSync(folder), false, "no spill file or folder left after close");
    });
  }

  test("clock correction: records of a worker whose clock is 5 s ahead line up with the others'", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1, simulatedClockOffsets: [0, 5], name: "clocks" }, async (cluster, client) => {
    // Let each worker take a heartbeat reply or two.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const t0 = Date.now() / 1000;
    const futures = Array.from({ length: 6 }, (_, i) => client.submit(slowInc, i, 50));
    await client.gather(futures);
    const t1 = Date.now() / 1000;
    const records = cluster.scheduler.taskStream.collect();
    const byWorker = new Set(records.map((r) => r.worker));
    assert.equal(byWorker.size, 2, "both workers ran tasks");
    for (const record of records) {
      for (const phase of record.startstops) {
        assert.ok(phase.start >= t0 - 0.05 && phase.stop <= t1 + 0.05, `${record.key} on ${record.worker}: ${phase.start - t0} s after start`);
      }
    }
    const offsets = (await client.run((worker) => worker.clockOffset)) as Record<string, number>;
    const sorted = Object.values(offsets).sort((a, b) => a - b);
    assert.ok(Math.abs(sorted[0]) < 0.1 && Math.abs(sorted[1] - 5) < 0.1, `offset estimates ${sorted}`);
    const seen = cluster.scheduler.workerRecords().map((w) => w.clockOffset).sort((a, b) => a - b);
    assert.ok(Math.abs(seen[1] - 5) < 0.1, "the scheduler sees the offset too");
    });
  });
});

describe("LocalCluster lifetime", () => {
  test("close leaves no process, socket or temporary file", async () => {
    const cluster = await LocalCluster.start({ nWorkers: 2, name: "shutdown", dashboardAddress: null });
    const client = await Client.connect(cluster);
    await get({ x: [slowInc, 1, 1] }, "x");
    const pids = cluster.processes.map((p) => p.pid);
    const folder = cluster.folder;
    assert.ok(existsSync(folder));
    assert.ok(pids.every(alive));
    await cluster.close();
    assert.equal(client.status, "closed", "its clients close with it");
    assert.ok(!existsSync(folder), "the temporary folder is gone");
    assert.ok(pids.every((pid) => !alive(pid)), "the worker processes are gone");
    const children = execFileSync("ps", ["-o", "pid=", "--ppid", String(process.pid)], { encoding: "utf8" })
      .split("\n")
      .map(Number)
      .filter((pid) => pids.includes(pid));
    assert.deepEqual(children, []);
    await assert.rejects(get({ y: 1 }, "y", { scheduler: client }), /closed/);
    assert.equal(await get({ y: 1 }, "y"), 1, "get falls back to the local scheduler");
  });

  test("starting a cluster of the same name closes the earlier one (re-running a cell)", async () => {
    const first = await LocalCluster.start({ nWorkers: 1, name: "rerun", dashboardAddress: null });
    const pid = first.processes[0].pid;
    const second = await LocalCluster.start({ nWorkers: 1, name: "rerun", dashboardAddress: null });
    try {
      assert.equal(first.status, "closed");
      assert.ok(!alive(pid));
      assert.equal(second.status, "running");
    } finally {
      await second.close();
    }
  });

  test("a script that forgot close() still exits, and leaves nothing behind", async () => {
    const script = `
      const { LocalCluster, Client, get } = require(${JSON.stringify(join(root, "build/src"))});
      (async () => {
        const cluster = await LocalCluster.start({ nWorkers: 2, dashboardAddress: null });
        await Client.connect(cluster);
        console.log(JSON.stringify({ result: await get({ x: [Math.max, 1, 2] }, "x"), pids: cluster.processes.map((p) => p.pid), folder: cluster.folder }));
      })();`;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error("the script did not exit within 20 s"));
      }, 20_000);
      child.on("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    assert.equal(code, 0);
    const { result, pids, folder } = JSON.parse(out.trim().split("\n").pop()!) as { result: number; pids: number[]; folder: string };
    assert.equal(result, 2);
    await until(() => pids.every((pid) => !alive(pid)), 5000, "the orphaned workers to exit");
    assert.ok(!existsSync(folder));
  });

  test("a later start sweeps the folder of a process that died without closing", async () => {
    const script = `
      const { LocalCluster } = require(${JSON.stringify(join(root, "build/src"))});
      LocalCluster.start({ nWorkers: 1, dashboardAddress: null }).then((c) => { console.log(c.folder); process.kill(process.pid, "SIGKILL"); });`;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => child.on("exit", resolve));
    const folder = out.trim();
    assert.ok(folder.startsWith(join(tmpdir(), "tsdask-cluster-")));
    assert.ok(existsSync(folder), "SIGKILL left the folder behind");
    const cluster = await LocalCluster.start({ nWorkers: 1, name: "sweeper", dashboardAddress: null });
    await cluster.close();
    assert.ok(!existsSync(folder), "the next start removed it");
    assert.ok(!readdirSync(tmpdir()).some((name) => name.startsWith("tsdask-cluster-") && name.includes(`-${child.pid}-`)));
  });

  test("bad options are refused with the option's name", async () => {
    await assert.rejects(LocalCluster.start({ memoryLimit: "lots" }), /Option memoryLimit must be a number of bytes or a size such as "2 GiB".*"lots"/);
    await assert.rejects(LocalCluster.start({ nWorkers: 1.5 }), /Option nWorkers must be a whole number ≥ 0, got 1.5/);
    await assert.rejects(LocalCluster.start({ threadsPerWorker: 0 }), /Option threadsPerWorker must be a whole number ≥ 1/);
    await assert.rejects(LocalCluster.start({ workers: 2 } as never), /Unknown LocalCluster option "workers"/);
    await assert.rejects(LocalCluster.start({ dashboardAddress: "nowhere" }), /Option dashboardAddress must be "host:port", ":port", a port or null, got "nowhere"/);
  });
});
