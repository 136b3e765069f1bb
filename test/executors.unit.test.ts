// The scheduler's foundation behaviour, run once per scheduler: whatever runs the tasks, the
// results, callbacks, errors, aborts and collections behave the same (the worker id aside).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { AbortError, Callback, type Key, type SchedulerName, type WorkerId, closePools, compute, delayed, get, getPool } from "../src";
import { MyError, add, inc, mul, pair, sleep, throwMine, throwRange } from "./fixtures/tasks";

after(() => closePools());

const SCHEDULERS: readonly SchedulerName[] = ["sync", "threads", "processes"];
const WORKERS = 2;

/** The ids a task may report under `scheduler`: null for sync, else one of the pool's workers. */
function assertWorkerId(scheduler: SchedulerName, workerId: WorkerId): void {
  if (scheduler === "sync") assert.equal(workerId, null);
  else assert.ok(getPool(scheduler, WORKERS).workerIds.includes(workerId as number), `unknown worker ${workerId}`);
}

for (const scheduler of SCHEDULERS) {
  const options = { scheduler, numWorkers: WORKERS };

  describe(`scheduler "${scheduler}"`, () => {
    test("computes single keys, nested key lists and tuple keys", async () => {
      const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
      assert.equal(await get(dsk, "e", options), 6);
      assert.deepEqual(await get(dsk, [["c"], "d"], options), [[3], 2]);
      const tuples = new Map<Key, unknown>([
        [["x", 0], 10],
        [["x", 1], [inc, ["x", 0]]],
        [["y", 0], [(a: number, b: number) => [a, b], ["x", 0], ["x", 1]]],
      ]);
      assert.deepEqual(await get(tuples, [["y", 0], ["x", 1]], options), [[10, 11], 11]);
      // Nested calls and lists inside one task, with an inline self-contained function.
      const nested = { x: 1, y: [inc, "x"], z: [add, [inc, "x"], "y"], w: [(xs: number[]) => xs.length, ["x", "y", "z"]] };
      assert.deepEqual(await get(nested, ["z", "w"], options), [4, 3]);
    });

    test("fires callbacks in Dask's order with the worker's id", async () => {
      const events: string[] = [];
      const workerIds: WorkerId[] = [];
      const cb = new Callback({
        start: () => events.push("start"),
        startState: () => events.push("startState"),
        pretask: (key) => events.push(`pre ${key}`),
        posttask: (key, result, _dsk, _state, workerId) => {
          events.push(`post ${key}=${result}`);
          workerIds.push(workerId);
        },
        finish: (_dsk, _state, errored) => events.push(`finish ${errored}`),
      });
      const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
      assert.equal(await get(dsk, "e", { ...options, callbacks: [cb] }), 6);
      assert.deepEqual(events.slice(0, 2), ["start", "startState"]);
      assert.equal(events.at(-1), "finish false");
      for (const key of ["c", "d", "e"]) {
        assert.ok(events.indexOf(`pre ${key}`) < events.indexOf(`post ${key}=${{ c: 3, d: 2, e: 6 }[key]}`), key);
      }
      assert.ok(events.indexOf("pre e") > events.indexOf("post c=3") && events.indexOf("pre e") > events.indexOf("post d=2"));
      assert.equal(workerIds.length, 3);
      for (const id of workerIds) assertWorkerId(scheduler, id);
    });

    test("rethrows a task's error with its class, message, own properties and stack", async () => {
      const finished: boolean[] = [];
      const cb = new Callback({ finish: (_dsk, _state, errored) => finished.push(errored) });
      await assert.rejects(get({ x: [throwRange, "out of range"] }, "x", { ...options, callbacks: [cb] }), (error: unknown) => {
        assert.ok(error instanceof RangeError);
        assert.equal(error.message, "out of range");
        assert.equal((error as RangeError & { code: string }).code, "E_RANGE");
        assert.equal((error as RangeError & { detail: number }).detail, 42);
        assert.match(error.stack ?? "", /throwRange/);
        return true;
      });
      assert.deepEqual(finished, [true]);
      await assert.rejects(get({ x: 1, y: [throwMine, "mine"] }, "y", options), (error: unknown) => {
        assert.ok(error instanceof Error);
        // A class the caller's globals lack comes back as an Error with the original name.
        if (scheduler === "sync") assert.ok(error instanceof MyError);
        assert.equal(error.name, "MyError");
        assert.equal(error.message, "mine");
        const fields = error as unknown as { a: number; b: unknown; code: string };
        assert.deepEqual([fields.a, fields.b, fields.code], [1, { nested: [2] }, "E_MINE"]);
        assert.match(error.stack ?? "", /throwMine/);
        return true;
      });
      await assert.rejects(get({ x: [() => { throw "plain text"; }] }, "x", options), (error) => error === "plain text");
    });

    test("aborts a running computation through its signal", async () => {
      const controller = new AbortController();
      const started = Date.now();
      const running = get({ a: [sleep, 3000], b: [sleep, 3000], c: [pair, "a", "b"] }, "c", { ...options, signal: controller.signal });
      setTimeout(() => controller.abort(new Error("stop")), 300);
      await assert.rejects(running, AbortError);
      assert.ok(Date.now() - started < 2500, `abort took ${Date.now() - started} ms`);
      // The pool is usable right after.
      assert.equal(await get({ x: [inc, 1] }, "x", options), 2);
    });

    test("computes delayed values, with list and object arguments", async () => {
      const one = delayed(inc)(0);
      const two = delayed(add)(one, 1);
      const both = delayed(pair)([one, two], { two });
      assert.deepEqual(await compute(both, two, 7, options), [[[1, 2], { two: 2 }], 2, 7]);
      assert.equal(await delayed(mul)(two, 3).compute(options), 6);
    });

    test("runs a 10 000-task chain", async () => {
      const dsk: Record<string, unknown> = { "x-0": 0 };
      for (let i = 1; i <= 10_000; i++) dsk[`x-${i}`] = [inc, `x-${i - 1}`];
      assert.equal(await get(dsk, "x-10000", options), 10_000);
    });
  });
}
