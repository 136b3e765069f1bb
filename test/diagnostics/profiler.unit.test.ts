// Profiler and CacheProfiler: ports of dask/diagnostics/tests/test_profiler.py, plus lifecycle fixes.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { CacheProfiler, type GetOptions, type GraphInput, type Key, Profiler, ProgressBar, ResourceProfiler, closePools, get, nbytes, now, threadProf, processProf, withCallbacks } from "../../src";
import * as da from "../../src/kernel/collections/array";
import { Graph } from "../../src/kernel/graph/graph";
import type { Executor, TaskJob, TaskOutcome } from "../../src/kernel/scheduler/executor";
import { evaluate } from "../../src/kernel/graph/spec";
import { runLoop } from "../../src/kernel/scheduler/loop";
import { SCHEDULERS, dsk, dsk2, sleep } from "./fixtures";
import { add, div, length, zeros } from "./tasks";

after(() => closePools());

for (const scheduler of SCHEDULERS) {
  describe(`Profiler (${scheduler})`, () => {
    const prof = new Profiler(); // reused across tests, as in Dask

    test("R1: records each task within the block's span", async () => {
      let tIn = 0;
      const out = await withCallbacks(prof, () => {
        tIn = now();
        return get(dsk, "e", { scheduler });
      });
      assert.equal(out, 6);
      assert.ok(prof.startTime! < tIn && tIn < prof.endTime!);
      const results = [...prof.results].sort((a, b) => String(a.key).localeCompare(String(b.key)));
      assert.deepEqual(results.map((r) => r.key), ["c", "d", "e"]);
      for (const r of results) {
        assert.ok(Array.isArray(r.task) && typeof r.task[0] === "function", "task is the graph's task spec");
        assert.ok(prof.startTime! <= r.startTime && r.startTime <= r.endTime && r.endTime <= prof.endTime!);
        if (scheduler === "sync") assert.equal(r.workerId, null);
        else assert.notEqual(r.workerId, null);
      }
      prof.clear();
      assert.deepEqual(prof.results, []);
    });

    test("R2: failed tasks leave no record", async () => {
      await assert.rejects(withCallbacks(prof, () => get({ x: [div, 1, 1], y: [div, "x", 2], z: [div, "y", 0] }, "z", { scheduler })), RangeError);
      assert.deepEqual(prof.results.map((r) => Object.keys(r).sort()), [0, 1].map(() => ["endTime", "key", "startTime", "task", "workerId"]));
      assert.deepEqual(prof.results.map((r) => r.key), ["x", "y"]);
    });

    test("R3: records accumulate over several computations in one block", async () => {
      const other = { x: [add, 1, 2], y: [add, "x", "x"] };
      await withCallbacks(prof, () => get(dsk, "e", { scheduler }));
      const n = prof.results.length;
      await withCallbacks(prof, () => get(other, "y", { scheduler }));
      const m = prof.results.length;
      await withCallbacks(prof, async () => {
        await get(dsk, "e", { scheduler });
        await get(other, "y", { scheduler });
        await get(dsk, "e", { scheduler });
      });
      assert.deepEqual([n, m, prof.results.length], [3, 2, n + m + n]);
    });

    test("R7: registered use accumulates and has a start and end (Dask's bug: None)", async () => {
      const registered = new Profiler().register();
      try {
        await get(dsk2, "c", { scheduler });
        const n = registered.results.length;
        assert.ok(n > 0);
        const first = registered.snapshot();
        await get(dsk2, "c", { scheduler });
        assert.ok(registered.results.length > n);
        assert.equal(registered.startTime, first.startTime);
        assert.ok(registered.endTime! > first.endTime);
        const snap = registered.snapshot();
        assert.equal(snap.kind, "tasks");
        assert.ok(snap.startTime <= registered.results[0].startTime && registered.results.at(-1)!.endTime <= snap.endTime);
      } finally {
        registered.unregister();
      }
    });

    test("opts.callbacks", async () => {
      const p = new Profiler();
      await get(dsk, "e", { scheduler, callbacks: [p] });
      assert.equal(p.results.length, 3);
      assert.ok(p.startTime! <= p.results[0].startTime && p.results[2].endTime <= p.endTime!);
    });

    test("concurrent computations with the same keys stay apart", async () => {
      const p = new Profiler();
      await withCallbacks(p, () => Promise.all([get(dsk2, "c", { scheduler }), get(dsk2, "c", { scheduler })]));
      assert.equal(p.results.length, 2);
      for (const r of p.results) assert.ok(r.endTime - r.startTime >= 0.09, `${r.endTime - r.startTime}`);
    });
  });

  describe(`CacheProfiler (${scheduler})`, () => {
    test("R6: records, span, clear, metric called once per task, metric names", async () => {
      const cprof = new CacheProfiler();
      let tIn = 0;
      await withCallbacks(cprof, () => {
        tIn = now();
        return get(dsk2, "c", { scheduler });
      });
      assert.ok(cprof.results.length > 0);
      for (const r of cprof.results) assert.deepEqual(Object.keys(r).sort(), ["cacheTime", "freeTime", "key", "metric", "task"]);
      assert.ok(cprof.startTime! < tIn && tIn < cprof.endTime!);
      cprof.clear();
      assert.deepEqual(cprof.results, []);

      const tics = [0];
      const counter = (): number => {
        tics.push(tics.at(-1)! + 1);
        return tics.at(-1)!;
      };
      const counted = new CacheProfiler({ metric: counter });
      await withCallbacks(counted, () => get(dsk, "e", { scheduler }));
      assert.equal(tics.at(-1), counted.results.length);
      assert.equal(Math.max(...counted.results.map((r) => r.metric)), counted.results.length);
      assert.equal(counted.metricName, "counter");
      assert.equal(new CacheProfiler({ metric: counter, metricName: "foo" }).metricName, "foo");
      assert.equal(new CacheProfiler().metricName, "count");
    });

    test("results leave the cache when released, the rest at the end (Dask's trace)", async () => {
      const cprof = new CacheProfiler();
      let finishedAt = 0;
      await withCallbacks(cprof, async () => {
        await get(dsk, "e", { scheduler });
        finishedAt = now();
      });
      assert.deepEqual(cprof.results.map((r) => r.key).slice(0, 2).sort(), ["c", "d"]);
      assert.equal(cprof.results[2].key, "e");
      const byKey = new Map(cprof.results.map((r) => [r.key, r]));
      const [c, d, e] = ["c", "d", "e"].map((key) => byKey.get(key)!);
      assert.ok(d.freeTime === c.freeTime && c.freeTime < e.freeTime, "c and d are released when e finishes");
      assert.ok(e.cacheTime <= d.freeTime, "…which is e's posttask time");
      assert.ok(e.freeTime <= finishedAt);
      assert.ok(cprof.results.every((r) => r.metric === 1 && r.cacheTime <= r.freeTime));
    });

    test("R7: registered use", async () => {
      const cprof = new CacheProfiler().register();
      try {
        await get(dsk2, "c", { scheduler });
        const n = cprof.results.length;
        assert.ok(n > 0);
        await get(dsk2, "c", { scheduler });
        assert.ok(cprof.results.length > n);
        assert.ok(cprof.startTime !== undefined && cprof.endTime! >= cprof.startTime);
      } finally {
        cprof.unregister();
      }
    });

    test("nbytes as the metric", async () => {
      const cprof = new CacheProfiler({ metric: nbytes });
      await withCallbacks(cprof, () => get({ x: [zeros, 1000], y: [length, "x"] }, "y", { scheduler }));
      assert.deepEqual(cprof.results.map((r) => [r.key, r.metric]), [["x", 8000], ["y", 8]]);
      assert.equal(cprof.metricName, "nbytes");
    });
  });
}

test("several profilers in one block share the block's start and end (Dask #9478)", async () => {
  const prof = new Profiler();
  const cprof = new CacheProfiler();
  await withCallbacks([prof, cprof], () => get(dsk, "e"));
  assert.equal(prof.startTime, cprof.startTime);
  assert.equal(prof.endTime, cprof.endTime);
  assert.deepEqual([prof.snapshot().startTime, prof.snapshot().endTime], [cprof.snapshot().startTime, cprof.snapshot().endTime]);
});

test("a nested block with the same profiler keeps one span and its records", async () => {
  const prof = new Profiler();
  await withCallbacks(prof, async () => {
    await get(dsk, "e");
    await withCallbacks(prof, () => get(dsk, "e"));
  });
  assert.equal(prof.results.length, 6);
});

test("pool executors: Profiler uses the worker-side start and end", async () => {
  // A stand-in for a pool executor: runs the task a while after dispatch and reports the worker's own clock.
  const workerTimes: { startTime: number; endTime: number }[] = [];
  const executor: Executor = {
    capacity: 2,
    submit(job: TaskJob, done: (outcome: TaskOutcome) => void): void {
      setTimeout(() => {
        const startTime = now();
        const value = evaluate(job.expr, job.values);
        const endTime = now();
        workerTimes.push({ startTime, endTime });
        setTimeout(() => done({ node: job.node, ok: true, value, workerId: 7, timing: { startTime, endTime } }), 20);
      }, 20);
    },
  };
  const prof = new Profiler();
  assert.equal(await runLoop({ graph: Graph.from(dsk), keys: "e", executor, callbacks: [prof] }), 6);
  assert.equal(prof.results.length, 3);
  assert.deepEqual(
    prof.results.map((r) => ({ startTime: r.startTime, endTime: r.endTime })),
    workerTimes,
  );
  assert.ok(prof.results.every((r) => r.workerId === 7));
});

test("bad CacheProfiler options are named", () => {
  assert.throws(() => new CacheProfiler({ metric: 3 as never }), /metric/);
  assert.throws(() => new CacheProfiler({ metricName: 3 as never }), /metricName/);
  // Dask's keyword, as a Dask user would write it: named, with the right spelling.
  assert.throws(() => new CacheProfiler({ metric_name: "bytes" } as never), /Unknown CacheProfiler option "metric_name" \(did you mean metricName\?\); known: metric, metricName/);
});

test("unknown options of the other diagnostics are TypeErrors naming them", () => {
  assert.throws(() => new ProgressBar({ widht: 10 } as never), /Unknown ProgressBar option "widht"; known: minimum, width, dt, out, display/);
  assert.throws(() => new ResourceProfiler({ dt: 0.5, interval: 1 } as never), /Unknown ResourceProfiler option "interval"; known: dt/);
  // Dask's positional dt: the options object is what TypeScript takes.
  assert.throws(() => new ResourceProfiler(0.25 as never), /Expected an object of ResourceProfiler options \(dt\), got 0.25/);
});

test("nbytes", () => {
  assert.equal(nbytes(new Float64Array(10)), 80);
  assert.equal(nbytes(new Float64Array(new ArrayBuffer(800), 8, 10)), 80);
  assert.equal(nbytes(new ArrayBuffer(12)), 12);
  assert.equal(nbytes(new SharedArrayBuffer(16)), 16);
  assert.equal(nbytes(Buffer.from("héllo")), 6);
  assert.equal(nbytes("héllo"), 10);
  assert.equal(nbytes(1.5), 8);
  assert.equal(nbytes(true), 4);
  assert.equal(nbytes(null), 0);
  assert.equal(nbytes([1, 2]), 8 * 2 + 8 * 2);
  assert.equal(nbytes({ ab: 1 }), 4 + 8);
  const cyclic: Record<string, unknown> = { a: new Uint8Array(100) };
  cyclic.self = cyclic;
  cyclic.again = cyclic.a;
  assert.equal(nbytes(cyclic), 2 * 1 + 100 + 2 * 4 + 2 * 5);
  assert.equal(nbytes(new Map([["k", [new Uint8Array(3)]]])), 2 + 8 + 3);
});

test("a profiler used once reports a sensible span before any run", async () => {
  const snap = new Profiler().snapshot();
  assert.ok(snap.endTime >= snap.startTime);
  await sleep(0);
});

describe("seed 001's Profiler(get)", () => {
  test("prof.get computes with the given get and records that computation; results() returns the records", async () => {
    const calls: unknown[] = [];
    const myGet = (graph: GraphInput, keys: Key | readonly unknown[], options?: GetOptions): Promise<unknown> => {
      calls.push(keys);
      return get(graph, keys, options);
    };
    const prof = new Profiler(myGet);
    assert.equal(await prof.get(dsk, "e"), 6);
    assert.deepEqual(calls, ["e"]);
    const records = prof.results();
    assert.deepEqual(records.map((r) => r.key).sort(), ["c", "d", "e"]);
    assert.ok(records.every((r) => r.workerId === null && r.startTime <= r.endTime));
    // Each get is one profiled computation, as in Dask: the next one replaces the records.
    assert.deepEqual(await prof.get(dsk, [["c"], "d"]), [[3], 2]);
    assert.deepEqual(prof.results().map((r) => r.key).sort(), ["c", "d"]);
    // Only its own computations: others are not recorded.
    await get(dsk, "e");
    assert.equal(prof.results().length, 2);
  });

  test("an inline get function works too, and anything else is a TypeError", async () => {
    const prof = new Profiler((graph, keys) => get(graph, keys));
    await prof.get({ x: [add, 1, 2] }, "x");
    assert.equal(prof.results().length, 1);
    assert.throws(() => new Profiler(3 as never), /Profiler takes nothing, or a scheduler's get function/);
    assert.throws(() => new Profiler({ pretask: () => undefined } as never), /got object/);
  });

  test("threadProf and processProf run on threads and on processes", async () => {
    assert.equal(await threadProf.get(dsk, "e", { numWorkers: 2 }), 6);
    const threadIds = new Set(threadProf.results().map((r) => r.workerId));
    assert.equal(threadProf.results().length, 3);
    assert.ok([...threadIds].every((id) => typeof id === "number" && id !== process.pid), `thread ids ${[...threadIds]}`);
    assert.equal(await processProf.get(dsk, "e", { numWorkers: 1 }), 6);
    const pids = new Set(processProf.results().map((r) => r.workerId));
    assert.equal(pids.size, 1);
    assert.ok([...pids].every((pid) => typeof pid === "number" && pid !== process.pid), `pids ${[...pids]}`);
  });

  test("a2.compute(get=thread_prof.get) is compute({ scheduler: threadProf.get })", async () => {
    const a = da.random.random([40, 10], { chunks: [10, 10] });
    const [q, r] = da.linalg.qr(a);
    const a2 = q.dot(r);
    const out = await a2.compute({ scheduler: threadProf.get });
    assert.deepEqual(out.shape, [40, 10]);
    const expected = await a.compute({ scheduler: "sync" });
    out.data.forEach((value, i) => assert.ok(Math.abs(value - expected.data[i]) < 1e-9));
    const records = threadProf.results();
    assert.ok(records.length > 10, `${records.length} records`);
    assert.ok(records.every((record) => typeof record.workerId === "number"));
  });
});
