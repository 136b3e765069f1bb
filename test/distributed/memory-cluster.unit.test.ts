// Scheduling on a whole cluster in one process (test/helpers/memory-cluster.ts): the real Client,
// Scheduler and worker state machines, tasks run on this thread, so placement, queueing and
// faults are seen in milliseconds. Several tests are ports of Dask's tests/test_scheduler.py.
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { Client, KilledWorkerError, get } from "../../src";
import type { Future } from "../../src/kernel/distributed/client/future";
import { add, callCount, divideCounted, inc, incOnlyOnce, openGate, resetTaskState, waitForGate, waitForGateAfter } from "../fixtures/memory-tasks";
import { MemoryCluster, type MemoryClusterOptions } from "../helpers/memory-cluster";

let cluster: MemoryCluster | undefined;
let client: Client | undefined;

async function start(options: MemoryClusterOptions = {}): Promise<{ cluster: MemoryCluster; client: Client }> {
  cluster = await MemoryCluster.start(options);
  client = await Client.connect(cluster);
  return { cluster, client };
}

beforeEach(() => resetTaskState());
afterEach(async () => {
  await client?.close();
  await cluster?.close();
  client = cluster = undefined;
});

/** The scheduler's state of `key`. */
function stateOf(key: string): string {
  const state = cluster!.scheduler.state;
  const slot = state.slotOf(key);
  return slot === undefined ? "forgotten" : state.stateOf(slot);
}

/** Tasks processing on each worker, by name, as the scheduler counts them. */
function processing(): Record<string, number> {
  return Object.fromEntries([...cluster!.workers.values()].map((ws) => [ws.name, ws.processing.size]));
}

/** Keys `${prefix}-0` … `${prefix}-${n - 1}`. */
function keys(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
}

/** `n` tasks that wait on gate `gate`, keyed `${prefix}-i`. */
function waiting(prefix: string, n: number, gate = "go"): Future<number>[] {
  return client!.map(waitForGate, Array(n).fill(gate), Array.from({ length: n }, (_, i) => i), { key: keys(prefix, n) });
}

describe("in-memory cluster: placement", () => {
  test("a computation runs end to end through the real Client, Scheduler and worker state machines", async () => {
    const { client } = await start();
    const started = performance.now();
    const x = client.submit(inc, 1);
    const y = client.submit(add, x, 10);
    assert.equal(await y.result(), 12);
    assert.deepEqual(await client.gather(client.map(inc, [1, 2, 3])), [2, 3, 4]);
    assert.ok(performance.now() - started < 1000, "no process, socket or thread: milliseconds");
  });

  test("a graph's first tasks leave for the workers before listeners hear it was submitted", async () => {
    const { cluster, client } = await start();
    const unsent: number[] = [];
    cluster.scheduler.on("graph-submitted", () => {
      for (const ws of cluster.workers.values()) unsent.push(ws.outbox.length);
    });
    assert.deepEqual(await get({ a: [inc, 1], b: [inc, 2] }, ["a", "b"], { scheduler: client }), [2, 3]);
    assert.deepEqual(unsent, [0, 0], "each worker's compute-task went out within the submission");
  });

  // Port of distributed/tests/test_scheduler.py::test_respect_data_in_memory
  test("test_respect_data_in_memory: a result held on a worker is used, not recomputed, by a later graph", async () => {
    const { cluster, client } = await start({ workers: [1] });
    const [x] = client.map(incOnlyOnce, ["x"], [1], { key: ["x"] });
    const [y] = client.map(incOnlyOnce, ["y"], [x], { key: ["y"] });
    assert.equal(await y.result(), 3);
    assert.deepEqual(cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf("y")!).map((ws) => ws.name), ["worker-0"]);
    const [z] = client.map(add, [x], [y], { key: ["z"] });
    assert.equal(await z.result(), 5);
    assert.equal(callCount("x"), 1);
    assert.equal(callCount("y"), 1);
  });

  // Port of distributed/tests/test_scheduler.py::test_recompute_released_results
  test("test_recompute_released_results: an input released after use is recomputed for a new dependent", async () => {
    const { cluster, client } = await start();
    const [x] = client.map(inc, [1], { key: ["x"] });
    const [y] = client.map(inc, [x], { key: ["y"] });
    assert.equal(await y.result(), 3);
    x.release();
    await cluster.settled();
    assert.deepEqual(cluster.scheduler.state.whoHas(cluster.scheduler.state.slotOf("x")!), [], "no worker holds x once y is computed and x's Future is gone");
    assert.ok(cluster.running.every((worker) => !worker.data.has("x")));
    const [z] = client.map((value: number) => value - 1, [client.map(inc, [1], { key: ["x"] })[0]], { key: ["z"] });
    assert.equal(await z.result(), 1);
  });

  // Port of distributed/tests/test_scheduler.py::test_decide_worker_with_many_independent_leaves
  test("test_decide_worker_with_many_independent_leaves: each leaf's dependent runs where its input is", async () => {
    const { cluster, client } = await start();
    // Dask scatters evens to a and odds to b; here each root is computed on the worker that takes it.
    const roots = client.map(inc, Array.from({ length: 100 }, (_, i) => i));
    await client.gather(roots);
    const holder = (key: string): string => cluster.running.find((worker) => worker.data.has(key))!.name;
    const rootHolders = roots.map((root) => holder(String(root.key)));
    assert.equal(new Set(rootHolders).size, 2, "the roots are spread over both workers");
    const leaves = client.map(inc, roots);
    await client.gather(leaves);
    const hits = leaves.filter((leaf, i) => cluster.worker(rootHolders[i]).started.includes(String(leaf.key))).length;
    assert.ok(hits > 80, `${hits} of 100 leaves ran beside their input (Dask asks for > 80)`);
  });

  test("a task with inputs on two workers runs on one of them and fetches the other input from its peer", async () => {
    const { cluster, client } = await start({ workers: [1, 1], workerSaturation: Infinity });
    const [a, b] = waiting("in", 2);
    await cluster.settled();
    const inputOf = new Map(cluster.running.map((worker) => [worker, worker.executing]));
    assert.deepEqual([...inputOf.values()].map((running) => running.length), [1, 1], "one input on each worker");
    openGate("go");
    const [sum] = client.map(add, [a], [b], { key: ["sum"] });
    assert.equal(await sum.result(), 1);
    const ran = cluster.running.find((worker) => worker.started.includes("sum"))!;
    const other = cluster.running.find((worker) => worker !== ran)!;
    assert.ok(ran.data.has("in-0") && ran.data.has("in-1"), "the runner fetched its peer's input");
    assert.ok(other.data.has(inputOf.get(other)![0]), "the peer keeps its own copy");
  });
});

describe("in-memory cluster: queueing", () => {
  // Port of distributed/tests/test_scheduler.py::test_saturation_factor
  for (const [saturation, expected] of [
    [2.5, [5, 3]],
    [2.0, [4, 2]],
    [1.1, [3, 2]],
    [1.0, [2, 1]],
    [0.1, [1, 1]],
  ] as const) {
    test(`test_saturation_factor: worker-saturation ${saturation} sends ${expected.join(" and ")} of 10 root tasks to workers of 2 and 1 threads`, async () => {
      const { cluster } = await start({ workers: [2, 1], workerSaturation: saturation });
      waiting("wait", 10);
      await cluster.settled();
      assert.deepEqual(cluster.running.map((worker) => worker.state.tasks.size), [...expected]);
      assert.equal(cluster.scheduler.state.queuedCount, 10 - expected[0] - expected[1], "the rest wait on the scheduler");
      openGate("go");
      await cluster.settled();
      assert.equal(cluster.scheduler.state.queuedCount, 0);
    });
  }

  test("test_saturation_factor: worker-saturation Infinity sends all 10 root tasks at once, more to the bigger worker", async () => {
    const { cluster } = await start({ workers: [2, 1], workerSaturation: Infinity });
    waiting("wait", 10);
    await cluster.settled();
    const [a, b] = cluster.running.map((worker) => worker.state.tasks.size);
    assert.equal(a + b, 10);
    assert.ok(a > b, `${a} on the 2-thread worker, ${b} on the 1-thread one`);
  });

  // Port of distributed/tests/test_scheduler.py::test_queued_remove_add_worker
  test("test_queued_remove_add_worker: a removed worker's tasks go back to the queue, a new worker drains it", async () => {
    const { cluster, client } = await start({ workers: [2, 2], workerSaturation: 1.0 });
    const futures = waiting("wait", 10);
    await cluster.settled();
    assert.equal(cluster.scheduler.state.queuedCount, 6);
    cluster.removeWorker("worker-0");
    await cluster.settled();
    assert.equal(cluster.scheduler.state.queuedCount, 8);
    cluster.addWorker(2);
    await cluster.settled();
    assert.equal(cluster.scheduler.state.queuedCount, 6);
    openGate("go");
    assert.deepEqual(await client.gather(futures), keys("wait", 10).map((_, i) => i));
  });

  // Port of distributed/tests/test_scheduler.py::test_ready_remove_worker (worker_saturation=1.0 and inf)
  for (const saturation of [1.0, Infinity]) {
    test(`test_ready_remove_worker (saturation ${saturation}): every task is processing or queued, before and after a worker goes`, async () => {
      const { cluster, client } = await start({ workers: [1, 1], workerSaturation: saturation });
      const futures = waiting("wait", 20);
      await cluster.settled();
      const check = (): void => {
        for (const ws of cluster.workers.values()) {
          if (saturation === 1.0) assert.equal(ws.processing.size, ws.nthreads);
          else assert.ok(ws.processing.size > ws.nthreads);
        }
        const total = [...cluster.workers.values()].reduce((sum, ws) => sum + ws.processing.size, 0);
        assert.equal(total + cluster.scheduler.state.queuedCount, cluster.scheduler.state.taskCount);
      };
      check();
      cluster.removeWorker("worker-0");
      await cluster.settled();
      assert.deepEqual([...cluster.workers.values()].map((ws) => ws.name), ["worker-1"]);
      check();
      openGate("go");
      assert.equal((await client.gather(futures)).length, 20);
    });
  }

  // Port of distributed/tests/test_scheduler.py::test_add_worker
  test("test_add_worker: a task submitted with no worker waits, and runs on the first one to join", async () => {
    // Unlike Dask's, our Client refuses a task before any worker has said which globals shipped
    // functions may use: the cluster starts with a worker that leaves before the submission.
    const { cluster, client } = await start({ workers: [1] });
    cluster.removeWorker("worker-0");
    const [x] = client.map(inc, [1], { key: ["x"] });
    await cluster.settled();
    assert.ok(["queued", "no-worker"].includes(stateOf("x")), stateOf("x"));
    cluster.addWorker(1);
    assert.equal(await x.result(), 2);
  });

  test("a paused worker gets no new tasks; the other takes them; resumed, it gets work again", async () => {
    const { cluster, client } = await start({ workers: [1, 1], workerSaturation: 1.0 });
    cluster.worker("worker-0").setPaused(true);
    await cluster.settled();
    // More than twice the threads: root-ish, so queued on the scheduler (Dask's is_rootish).
    const futures = waiting("wait", 8);
    await cluster.settled();
    assert.deepEqual(processing(), { "worker-0": 0, "worker-1": 1 });
    assert.equal(cluster.scheduler.state.queuedCount, 7);
    cluster.worker("worker-0").setPaused(false);
    await cluster.settled();
    assert.deepEqual(processing(), { "worker-0": 1, "worker-1": 1 });
    openGate("go");
    await client.gather(futures);
  });
});

describe("in-memory cluster: faults", () => {
  // Port of distributed/tests/test_scheduler.py::test_remove_worker_from_scheduler
  test("test_remove_worker_from_scheduler: a worker removed mid-computation; the other finishes everything", async () => {
    const { cluster, client } = await start({ workers: [1, 1] });
    const futures = waiting("wait", 20);
    await cluster.settled();
    assert.ok(cluster.worker("worker-0").executing.length > 0, "worker-0 was running a task when it left");
    cluster.removeWorker("worker-0");
    await cluster.settled();
    const [remaining] = cluster.workers.values();
    assert.equal(remaining.processing.size + cluster.scheduler.state.queuedCount, 20);
    openGate("go");
    assert.equal((await client.gather(futures)).length, 20);
    assert.ok(cluster.worker("worker-1").started.length >= 20);
  });

  test("a result lost with its worker is recomputed for the dependent that needs it", async () => {
    const { cluster, client } = await start({ workers: [1, 1], workerSaturation: Infinity });
    const [a, b] = client.map(inc, [1, 2], { key: ["a", "b"] });
    await client.gather([a, b]);
    const holderOfA = cluster.running.find((worker) => worker.data.has("a"))!;
    cluster.removeWorker(holderOfA.name, "its process died");
    const replacement = cluster.addWorker(1);
    const [sum] = client.map(add, [a], [b], { key: ["sum"] });
    assert.equal(await sum.result(), 5);
    const startedA = cluster.running.filter((worker) => worker.started.includes("a"));
    assert.ok(startedA.length === 1 && stateOf("a") === "memory", "a was computed again on a worker still running");
    assert.ok(replacement.started.length + cluster.running[0].started.length > 2);
  });

  test("KilledWorker: a task whose every worker dies under it errs after allowed-failures; nothing else is lost", async () => {
    const { cluster, client } = await start({ workers: [1], allowedFailures: 2 });
    let deaths = 0;
    cluster.onTaskStarted((worker, key) => {
      if (!key.startsWith("bomb")) return;
      deaths++;
      cluster.removeWorker(worker.name, "the task killed it");
      cluster.addWorker(1); // the nanny's replacement
    });
    const [bomb] = client.map(inc, [1], { key: ["bomb"] });
    await assert.rejects(bomb.result(), (error: Error) => error instanceof KilledWorkerError && /bomb/.test(error.message));
    assert.equal(deaths, 3, "allowed-failures 2: the third death gives the task up");
    const [fine] = client.map(inc, [1], { key: ["fine"] });
    assert.equal(await fine.result(), 2);
  });

  // Port of distributed/tests/test_scheduler.py::test_dont_recompute_if_erred
  test("test_dont_recompute_if_erred: an erred task is not run again when its Future is asked for again", async () => {
    const { client } = await start();
    const [x] = client.map(incOnlyOnce, ["x"], [1], { key: ["x"] });
    const [y] = client.map(divideCounted, ["y"], [x], [0], { key: ["y"] });
    await assert.rejects(y.result(), /division by zero/);
    const [again] = client.map(divideCounted, ["y"], [x], [0], { key: ["y"] });
    await assert.rejects(again.result(), /division by zero/);
    assert.equal(callCount("x"), 1);
    assert.equal(callCount("y"), 1);
  });

  // Port of distributed/tests/test_scheduler.py::test_dont_forget_released_keys
  test("test_dont_forget_released_keys: an input stays known while a dependent still needs it", async () => {
    const { cluster, client } = await start();
    const [x] = client.map(inc, [1], { key: ["x"] });
    const [y] = client.map(inc, [x], { key: ["y"] });
    const [z] = client.map((value: number) => value - 1, [x], { key: ["z"] });
    x.release();
    await client.gather([y, z]);
    z.release();
    await cluster.settled();
    assert.equal(stateOf("z"), "forgotten");
    assert.notEqual(stateOf("x"), "forgotten", "y's Future keeps the graph that reached x");
  });

  // Port of distributed/tests/test_scheduler.py::test_forget_tasks_while_processing
  test("test_forget_tasks_while_processing: closing the client forgets running tasks; their late outcomes are dropped", async () => {
    const { cluster, client: first } = await start();
    const [done] = client!.map(waitForGate, ["first"], [0], { key: ["first"] });
    waiting("wait", 9);
    openGate("first");
    await done.result();
    assert.ok(cluster.scheduler.state.taskCount > 0);
    await first.close();
    await cluster.settled();
    assert.equal(cluster.scheduler.state.taskCount, 0, "the scheduler forgot every task");
    openGate("go");
    await cluster.settled();
    assert.equal(cluster.scheduler.state.taskCount, 0, "outcomes of the cancelled tasks do not bring them back");
    assert.ok(cluster.running.every((worker) => worker.data.size === 0), "and their results are not kept");
  });
});
