// Placement on a real LocalCluster: worker restrictions on submit, map, compute and get, client.run
// with arguments and workers, and work stealing moving a task queued behind a long one to the
// worker that went idle (the case issue 24 measured against Dask).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Client, type LocalCluster, delayed } from "../../src";
import { processId } from "../fixtures/cluster-client-tasks";
import { inc, spin } from "../fixtures/tasks";
import { withCluster } from "../helpers/cluster";

/** Worker address → its process id, from the registrations. */
function pids(cluster: LocalCluster): Map<number, string> {
  return new Map([...cluster.workers.values()].map((ws) => [ws.registration.pid, ws.address]));
}

function addresses(client: Client): string[] {
  return [...client.workers.keys()].sort();
}

describe("work stealing on a LocalCluster", () => {
  // Issue 24's measurement: Dask finishes the tiny task at 1.31 s, tsdask did at 4.02 s.
  for (const workStealing of [true, false]) {
    test(`2 workers × 1 thread, 4 s and 1 s tasks running, then a tiny task: ${workStealing ? "it moves to the worker that goes idle and finishes long before the 4 s task" : "without stealing it waits behind the 4 s task"}`, async () => {
      await withCluster({ nWorkers: 2, threadsPerWorker: 1, workStealing }, async (_cluster, client) => {
        const start = performance.now();
        const long = client.submit(spin, 4000);
        const short = client.submit(spin, 1000);
        const tiny = client.submit(inc, 1);
        let longDone = Infinity;
        const longResult = long.result().then(() => (longDone = performance.now() - start));
        assert.equal(await tiny.result(), 2);
        const tinyDone = performance.now() - start;
        await short.result();
        await longResult;
        if (workStealing) {
          assert.ok(tinyDone < longDone - 1000, `the tiny task finished at ${tinyDone.toFixed(0)} ms, the 4 s task at ${longDone.toFixed(0)} ms`);
          assert.ok(tinyDone < 3000, `the tiny task finished at ${tinyDone.toFixed(0)} ms (Dask: ~1310 ms)`);
        } else {
          assert.ok(tinyDone > 3500, `placed behind the 4 s task, it finished at ${tinyDone.toFixed(0)} ms`);
        }
      });
    });
  }
});

describe("placement options on a LocalCluster", () => {
  // Port of distributed/tests/test_client.py::test_restrictions_ip_port and test_restrictions_map
  test("test_restrictions_ip_port, test_restrictions_map: submit and map run where workers= says, by address or name", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1 }, async (cluster, client) => {
      const [a, b] = addresses(client);
      const byPid = pids(cluster);
      const x = client.submit(processId, { workers: [a] });
      const y = client.submit((_: number) => process.pid, x, { workers: b });
      assert.equal(byPid.get(await x.result()), a);
      assert.equal(byPid.get(await y.result()), b);
      const nameOfA = cluster.workers.get(a)!.name;
      const mapped = client.map((i: number) => [i, process.pid], [0, 1, 2, 3, 4], { workers: [nameOfA] });
      for (const [, pid] of await client.gather(mapped)) assert.equal(byPid.get(pid as number), a);
    });
  });

  // Port of distributed/tests/test_client.py::test_restrictions_get (a compute and a get on one worker)
  test("test_restrictions_get: get and compute with workers= run every task there", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1 }, async (cluster, client) => {
      const [, b] = addresses(client);
      const byPid = pids(cluster);
      const where = (x: number) => [x, process.pid];
      const dsk = { x: 1, y: [where, "x"], z: [where, ["x"]] };
      const result = (await client.get(dsk, ["y", "z"], { workers: [b] })) as [number, number][];
      for (const [, pid] of result) assert.equal(byPid.get(pid), b);
      const z = delayed(where)(delayed(inc)(1));
      const [, pid] = (await client.compute(z, { workers: b }).result()) as [number, number];
      assert.equal(byPid.get(pid), b);
    });
  });

  // Port of distributed/tests/test_client.py::test_allow_restrictions
  test("test_allow_restrictions: allowOtherWorkers keeps the named worker when it exists, uses another when none matches; bad values are errors", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1 }, async (cluster, client) => {
      const [a] = addresses(client);
      const byPid = pids(cluster);
      assert.equal(byPid.get(await client.submit((x: number) => x && process.pid, 2, { workers: a, allowOtherWorkers: true }).result()), a);
      const mapped = client.map((x: number) => x && process.pid, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12], { workers: a, allowOtherWorkers: true });
      assert.equal((await client.gather(mapped)).length, 10);
      assert.equal(await client.submit(inc, 15, { workers: "127.0.0.3", allowOtherWorkers: true }).result(), 16);
      assert.deepEqual(await client.gather(client.map(inc, [15, 16], { workers: "127.0.0.3", allowOtherWorkers: true })), [16, 17]);
      assert.throws(() => client.submit(inc, 1, { allowOtherWorkers: true }), /allowOtherWorkers is only meaningful with workers/);
      assert.throws(() => client.map(inc, [1], { allowOtherWorkers: true }), /allowOtherWorkers is only meaningful with workers/);
      assert.throws(() => client.submit(inc, 20, { workers: a, allowOtherWorkers: "Hello!" as never }), TypeError);
      assert.throws(() => client.map(inc, [20], { workers: a, allowOtherWorkers: "Hello!" as never }), TypeError);
      assert.throws(() => client.submit(inc, 1, { workers: a, worker: a } as never), /Unknown client\.submit option "worker"/);
      assert.throws(() => client.compute(delayed(inc)(1), { worker: a } as never), /Unknown client\.compute option "worker"/);
      await assert.rejects(() => client.get({ x: 1 }, "x", { workers: 3 as never }), /workers must be a worker address, name or host/);
    });
  });

  test("a restriction naming no worker waits (as Dask's), and a plain object argument stays an argument", async () => {
    await withCluster({ nWorkers: 1, threadsPerWorker: 1 }, async (_cluster, client) => {
      const waiting = client.submit(inc, 1, { workers: ["no-such-worker"] });
      const state = client.scheduler.state;
      assert.equal(state.stateOf(state.slotOf(waiting.key as string)!), "no-worker");
      waiting.release();
      assert.deepEqual(await client.submit(Object.keys, { a: 1, b: 2 }).result(), ["a", "b"]);
    });
  });

  // Port of distributed/tests/test_client.py::test_run
  test("test_run: client.run(fn, ...args, { workers }) passes the arguments, on the workers named", async () => {
    await withCluster({ nWorkers: 2, threadsPerWorker: 1 }, async (cluster, client) => {
      const [a, b] = addresses(client);
      const plusOne = (x: number) => x + 1;
      assert.deepEqual(await client.run(plusOne, 1), { [a]: 2, [b]: 2 });
      assert.deepEqual(await client.run(plusOne, 1, { workers: [a] }), { [a]: 2 });
      assert.deepEqual(await client.run(plusOne, 1, { workers: [] }), {});
      // The worker's view comes after the arguments.
      const where = (x: number, worker: { address: string }) => `${x}@${worker.address}`;
      assert.deepEqual(await client.run(where, 7, { workers: cluster.workers.get(b)!.name }), { [b]: `7@${b}` });
      await assert.rejects(() => client.run(plusOne, 1, { workers: ["nobody"] }), /No worker "nobody"/);
      await assert.rejects(async () => client.run(plusOne, 1, { workers: [a], worker: a }), /Unknown client\.run option "worker"/);
    });
  });
});
