// The pool schedulers ("threads", "processes"): real parallelism, which functions may travel,
// shared memory, worker-side measurements, dying workers, abort, and leaving nothing behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  AbortError,
  Callback,
  Graph,
  type PoolKind,
  SchedulerState,
  TaskTransferError,
  UnshippableFunctionError,
  WorkerDiedError,
  type WorkerId,
  buildPlan,
  closePools,
  get,
  getPool,
} from "../src";
import { now } from "../src/kernel/diagnostics/types";
import { PoolExecutor } from "../src/kernel/scheduler/pool-executor";
import { WorkerPool } from "../src/kernel/execution/pool";
import { isSharedMemory, standsInForPlain } from "../src/kernel/execution/buffers";
import { CALL, LITERAL } from "../src/kernel/execution/wire";
import type { TaskOutcome } from "../src/kernel/scheduler/executor";
import { burn, exitNow, fill, inc, pair, sha1, sleep, spin } from "./fixtures/tasks";

after(() => closePools());

const ROOT = join(__dirname, "..", "..");
const KINDS: readonly PoolKind[] = ["threads", "processes"];

/** Polls `check` until it holds or `ms` pass. */
async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** True while `pid` runs; an exited process waiting to be reaped (a zombie) counts as gone. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Pids of this process's children that run the pool's worker program. */
function workerChildren(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
      if (ppid === process.pid && state !== "Z" && readFileSync(`/proc/${name}/cmdline`, "utf8").includes("worker-main.js")) {
        pids.push(Number(name));
      }
    } catch {
      // the process ended while we looked
    }
  }
  return pids.sort();
}

function recordWorkers(): { cb: Callback; ids: WorkerId[]; pretasks: () => number } {
  const ids: WorkerId[] = [];
  let pretasks = 0;
  const cb = new Callback({ pretask: () => pretasks++, posttask: (_k, _r, _d, _s, workerId) => ids.push(workerId) });
  return { cb, ids, pretasks: () => pretasks };
}

for (const kind of KINDS) {
  describe(`"${kind}" pool`, () => {
    test("runs tasks in parallel: 4 tasks of 1 s on 2 workers take about 2 s", async () => {
      const { cb, ids } = recordWorkers();
      const dsk = { a: [spin, 1000], b: [spin, 1000], c: [spin, 1000], d: [spin, 1000] };
      await get({ warm: [inc, 1] }, "warm", { scheduler: kind, numWorkers: 2 });
      const start = performance.now();
      const ran = (await get(dsk, ["a", "b", "c", "d"], { scheduler: kind, numWorkers: 2, callbacks: [cb] })) as number[];
      const seconds = (performance.now() - start) / 1000;
      assert.ok(seconds > 1.8 && seconds < 3.2, `took ${seconds.toFixed(2)} s`);
      assert.equal(new Set(ids).size, 2, `worker ids ${ids}`);
      // The worker id the scheduler reports is the thread id / pid the task saw.
      assert.deepEqual(new Set(ran), new Set(ids));
      assert.ok(!ids.includes(kind === "threads" ? 0 : process.pid));
    });

    test("ships exported functions by reference and self-contained ones as source", async () => {
      const dsk = {
        hash: [sha1, "abc"], // uses an imported binding inside its own module
        max: [Math.max, 3, 9, 4], // a built-in
        json: [JSON.stringify, [pair, 1, 2]],
        os: [() => typeof (require("node:os") as typeof import("node:os")).cpus, "hash"],
        method: [{ twice(x: number) { return 2 * x; } }.twice, 21],
        tslab: [new Function("return function task(x) { return Math.sqrt(x) }")() as (x: number) => number, 16],
      };
      assert.deepEqual(await get(dsk, ["hash", "max", "json", "os", "method", "tslab"], { scheduler: kind }), [
        "a9993e364706816aba3e25717850c26c9cd0d89d",
        9,
        "[1,2]",
        "function",
        42,
        4,
      ]);
    });

    test("rejects functions that cannot run in a worker before any task starts", async () => {
      const k = 3;
      const scaler = { scale: 2, times(x: number) { return x * this.scale; } };
      class Task {}
      const cases: [string, unknown, RegExp, string | undefined][] = [
        ["closure", (x: number) => x + k, /uses "k"/, "k"],
        ["import", (path: string) => readFileSync(path, "utf8"), /uses "node_fs_1"/, "node_fs_1"],
        ["tslab", new Function("return function task(x) { return x + k }")(), /Function "task" .*uses "k"/, "k"],
        ["this", scaler.times, /uses `this`/, "this"],
        ["bound", inc.bind(null), /bound function/, undefined],
        ["class", Task, /is a class/, undefined],
      ];
      for (const [name, fn, message, identifier] of cases) {
        const { cb, pretasks } = recordWorkers();
        const dsk = { fine: [inc, 1], [name]: [fn, "fine"] };
        await assert.rejects(get(dsk, name, { scheduler: kind, callbacks: [cb] }), (error: unknown) => {
          assert.ok(error instanceof UnshippableFunctionError, `${name}: ${error}`);
          assert.match(error.message, message);
          assert.match(error.message, new RegExp(`task '${name}'`));
          assert.match(error.message, /scheduler: "sync"/);
          assert.equal(error.identifier, identifier);
          return true;
        });
        assert.equal(pretasks(), 0, `${name}: a task started`);
      }
    });

    test("names the key when an argument or a result cannot be cloned", async () => {
      await assert.rejects(get({ x: [pair, { callback: () => 1 }, 2] }, "x", { scheduler: kind }), (error: unknown) => {
        assert.ok(error instanceof TaskTransferError);
        assert.equal(error.direction, "argument");
        assert.deepEqual(error.key, "x");
        assert.equal(error.message, "Task 'x': argument 1 cannot be sent to a worker: .callback is a function () => 1, which cannot be copied");
        return true;
      });
      await assert.rejects(get({ y: [() => () => 1] }, "y", { scheduler: kind }), (error: unknown) => {
        assert.ok(error instanceof TaskTransferError);
        assert.equal(error.direction, "result");
        assert.equal(error.message, "Task 'y': its result cannot be sent back from the worker: it is a function () => 1, which cannot be copied");
        return true;
      });
    });

    test("reports worker-side wall times, thread CPU time and bytes moved", async () => {
      const pool = getPool(kind, 2);
      const executor = new PoolExecutor(pool);
      const input = new Float64Array(1000);
      // CPU time, unlike wall time, does not depend on how busy the machine is: compare the
      // worker's figure with the same work measured here.
      const iterations = 5e6;
      burn(iterations);
      const cpuBefore = process.cpuUsage();
      burn(iterations);
      const cpuHere = (process.cpuUsage().user - cpuBefore.user) / 1e6;
      const plan = buildPlan(Graph.from({ input, x: [burn, iterations], y: [(a: Float64Array) => "z".repeat(a.length), "input"] }), ["x", "y"]);
      const state = new SchedulerState(plan);
      await executor.prepare(plan);
      const before = now();
      const outcomes = await Promise.all(
        ["x", "y"].map((key) => {
          const node = plan.indexById.get(JSON.stringify(key)) ?? plan.keys.indexOf(key);
          return new Promise<TaskOutcome>((resolve) => executor.submit({ node, key, expr: plan.exprs[node]!, values: state.values }, resolve));
        }),
      );
      const after = now();
      const [x, y] = outcomes.map((outcome) => outcome.timing!);
      // One clock across threads and processes: the worker's times fall inside the caller's window
      // (give or take a millisecond; the clocks were measured to agree within ~0.1 ms).
      for (const timing of [x, y]) {
        const inside = before - 1e-3 <= timing.startTime && timing.startTime <= timing.endTime && timing.endTime <= after + 1e-3;
        assert.ok(inside, `${JSON.stringify(timing)} outside [${before}, ${after}]`);
      }
      const wall = x.endTime - x.startTime;
      assert.ok(x.cpuTime !== undefined && x.cpuTime > cpuHere / 3 && x.cpuTime < cpuHere * 3, `cpu ${x.cpuTime} s, here ${cpuHere} s`);
      assert.ok(x.cpuTime <= wall + 0.005, `cpu ${x.cpuTime} s > wall ${wall} s`);
      assert.ok(y.bytesIn! >= 8000, `bytes in ${y.bytesIn}`);
      assert.ok(y.bytesOut! >= 1000, `bytes out ${y.bytesOut}`);
      executor.release();
    });

    test("a worker that exits mid-task fails the computation, naming the key and worker, and is replaced", async () => {
      const pool = getPool(kind, 2);
      await get({ warm: [inc, 1] }, "warm", { scheduler: kind, numWorkers: 2 });
      const before = pool.workerIds;
      await assert.rejects(get({ doomed: [exitNow, 3] }, "doomed", { scheduler: kind, numWorkers: 2 }), (error: unknown) => {
        assert.ok(error instanceof WorkerDiedError);
        assert.ok(before.includes(error.workerId));
        assert.match(error.message, new RegExp(`Task 'doomed' failed: its worker ${error.workerId} exited with code 3`));
        return true;
      });
      assert.equal(await get({ x: [inc, 1] }, "x", { scheduler: kind, numWorkers: 2 }), 2);
      assert.equal(pool.workerIds.length, 2);
      assert.equal(pool.workerIds.filter((id) => before.includes(id)).length, 1);
    });

    test("a worker that runs out of memory fails its task and the computation ends", async () => {
      // In a separate node with a small heap limit, which the workers inherit.
      const script = `
        const { get } = require(${JSON.stringify(join(ROOT, "build/src"))});
        const hog = () => { const kept = []; for (;;) kept.push(new Array(1e5).fill(1)); };
        get({ x: [hog] }, "x", { scheduler: ${JSON.stringify(kind)} }).then(
          () => console.log("computed"),
          (error) => console.log("rejected " + error.name + ": " + error.message),
        );`;
      const child = spawn(process.execPath, ["--max-old-space-size=100", "-e", script], { stdio: ["ignore", "pipe", "ignore"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk));
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.on("exit", (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      assert.equal(code, 0);
      const how = kind === "threads" ? /crashed \(Worker terminated due to reaching memory limit/ : /was killed by SIGABRT/;
      assert.match(output, /rejected WorkerDiedError: Task 'x' failed: its worker \d+ /);
      assert.match(output, how);
    });

    test("an error thrown outside any task (after it returned) crashes only its worker", async () => {
      const lateThrow = (): Promise<never> =>
        new Promise(() => {
          setTimeout(() => {
            throw new Error("thrown later");
          }, 10);
        });
      await assert.rejects(get({ late: [lateThrow] }, "late", { scheduler: kind, numWorkers: 2 }), (error: unknown) => {
        assert.ok(error instanceof WorkerDiedError);
        assert.match(error.message, /Task 'late' failed: its worker \d+ crashed \(thrown later\)/);
        return true;
      });
      assert.equal(await get({ x: [inc, 1] }, "x", { scheduler: kind, numWorkers: 2 }), 2);
    });

    test("abort stops the running tasks' workers and replaces them", async () => {
      const pool = getPool(kind, 2);
      await get({ warm: [inc, 1] }, "warm", { scheduler: kind, numWorkers: 2 });
      const before = pool.workerIds;
      const controller = new AbortController();
      const start = Date.now();
      const running = get({ a: [spin, 20_000], b: [spin, 20_000] }, ["a", "b"], {
        scheduler: kind,
        numWorkers: 2,
        signal: controller.signal,
      });
      setTimeout(() => controller.abort(), 300);
      await assert.rejects(running, AbortError);
      assert.ok(Date.now() - start < 2000, `abort took ${Date.now() - start} ms`);
      assert.deepEqual(pool.workerIds.filter((id) => before.includes(id)), []);
      if (kind === "processes") assert.ok(await eventually(() => before.every((pid) => !alive(pid))), "old workers still alive");
      assert.equal(await get({ x: [inc, 1] }, "x", { scheduler: kind, numWorkers: 2 }), 2);
    });

    test("a script that computed something exits by itself", async () => {
      const script = `
        const { get } = require(${JSON.stringify(join(ROOT, "build/src"))});
        const { getPool } = require(${JSON.stringify(join(ROOT, "build/src"))});
        get({ a: [(x) => x + 1, 1], b: [(x) => x * 2, "a"] }, "b", { scheduler: ${JSON.stringify(kind)} }).then((v) => {
          console.log("computed " + v + " workers " + JSON.stringify(getPool(${JSON.stringify(kind)}).workerIds));
        });`;
      const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
      let computedAt = 0;
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk;
        if (output.includes("computed")) computedAt ||= Date.now();
      });
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        child.on("exit", (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      assert.equal(code, 0);
      assert.match(output, /computed 4/);
      assert.ok(Date.now() - computedAt < 1000, `exited ${Date.now() - computedAt} ms after computing`);
      if (kind === "processes") {
        const pids = JSON.parse(/workers (\[.*\])/.exec(output)![1]) as number[];
        assert.equal(pids.length, availableParallelism());
        assert.ok(await eventually(() => pids.every((pid) => !alive(pid)), 1000), "worker processes outlived the script");
      }
    });
  });
}

test("computations running at the same time share a pool without mixing results", async () => {
  const build = (offset: number): Record<string, unknown> => {
    const dsk: Record<string, unknown> = { "x-0": offset };
    for (let i = 1; i <= 500; i++) dsk[`x-${i}`] = [inc, `x-${i - 1}`];
    return dsk;
  };
  for (const scheduler of KINDS) {
    const results = await Promise.all([0, 1000, 2000].map((offset) => get(build(offset), "x-500", { scheduler, numWorkers: 2 })));
    assert.deepEqual(results, [500, 1500, 2500]);
  }
});

test("threads share SharedArrayBuffer memory with the caller; processes get a copy", async () => {
  const shared = new Int32Array(new SharedArrayBuffer(16));
  assert.equal(await get({ x: [fill, shared, 7] }, "x", { scheduler: "threads" }), 4);
  assert.deepEqual([...shared], [7, 7, 7, 7]);
  assert.equal(await get({ x: [fill, shared, 9] }, "x", { scheduler: "processes" }), 4);
  assert.deepEqual([...shared], [7, 7, 7, 7]);
});

test("a killed worker process fails its task with a clear error and nothing hangs", async () => {
  const pool = getPool("processes", 1);
  await get({ warm: [inc, 1] }, "warm", { scheduler: "processes", numWorkers: 1 });
  const [pid] = pool.workerIds;
  const started = new Callback({ pretask: () => setTimeout(() => process.kill(pid, "SIGKILL"), 200) });
  await assert.rejects(get({ slow: [sleep, 10_000] }, "slow", { scheduler: "processes", numWorkers: 1, callbacks: [started] }), (error: unknown) => {
    assert.ok(error instanceof WorkerDiedError);
    assert.equal(error.workerId, pid);
    assert.match(error.message, /Task 'slow' failed: its worker \d+ was killed by SIGKILL/);
    return true;
  });
  assert.equal(await get({ x: [inc, 1] }, "x", { scheduler: "processes", numWorkers: 1 }), 2);
});

test("no worker process is left over after errors, aborts and deaths", async () => {
  const sizes = [1, 2];
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const failures = [
    get({ a: [spin, 5000], b: [() => { throw new Error("boom"); }] }, ["a", "b"], { scheduler: "processes", numWorkers: 2 }),
    get({ a: [exitNow, 1] }, "a", { scheduler: "processes", numWorkers: 1 }),
    get({ a: [spin, 5000], b: [spin, 5000] }, ["a", "b"], { scheduler: "processes", numWorkers: 2, signal: controller.signal }),
  ];
  const outcomes = await Promise.allSettled(failures);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ["rejected", "rejected", "rejected"]);
  const expected = sizes.flatMap((size) => getPool("processes", size).workerIds).sort();
  assert.ok(await eventually(() => JSON.stringify(workerChildren()) === JSON.stringify(expected)), `children ${workerChildren()} vs pools ${expected}`);
});

test("no worker thread is left over after errors, aborts and deaths", async () => {
  const osThreads = (): number => readdirSync("/proc/self/task").length;
  const failThreeWays = async (): Promise<void> => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const outcomes = await Promise.allSettled([
      get({ a: [spin, 5000], b: [() => { throw new Error("boom"); }] }, ["a", "b"], { scheduler: "threads", numWorkers: 2 }),
      get({ a: [exitNow, 1] }, "a", { scheduler: "threads", numWorkers: 1 }),
      get({ a: [spin, 5000], b: [spin, 5000] }, ["a", "b"], { scheduler: "threads", numWorkers: 2, signal: controller.signal }),
    ]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status), ["rejected", "rejected", "rejected"]);
    await get({ x: [inc, 1] }, "x", { scheduler: "threads", numWorkers: 2 });
    await get({ x: [inc, 1] }, "x", { scheduler: "threads", numWorkers: 1 });
  };
  await failThreeWays(); // starts the pools and whatever threads Node starts lazily
  assert.ok(await eventually(() => osThreads() === osThreads()), "thread count unsettled");
  await new Promise((resolve) => setTimeout(resolve, 300));
  const baseline = osThreads();
  for (let round = 0; round < 3; round++) await failThreeWays();
  assert.ok(await eventually(() => osThreads() <= baseline), `${osThreads()} OS threads, ${baseline} before`);
});


/** Runs functions of test/fixtures/cluster-tasks on `pool`, by name, with wire arguments. */
async function clusterTaskRunner(pool: WorkerPool): Promise<(name: string, ...args: unknown[]) => Promise<TaskOutcome>> {
  await pool.ready();
  const tasks = require.resolve("./fixtures/cluster-tasks");
  const client = { batchSize: 1, quickTasks: false, recordDuration() {} };
  return (name, ...args) => {
    const id = pool.functionIdForSpec({ kind: "module", path: tasks, name });
    return new Promise((resolve) => pool.enqueue(client, { node: 0, key: "k" }, [CALL, id, ...args], [id], resolve));
  };
}

for (const shareResults of [true, false]) {
  test(`a thread pool with shareResults ${shareResults} ${shareResults ? "shares a result's own buffers as stand-ins for plain memory, not shared or partly viewed ones" : "copies results"}`, async () => {
    const pool = new WorkerPool("threads", 1, { shareResults, waitAwake: false });
    try {
      const run = await clusterTaskRunner(pool);
      const n = 100_000;
      const made = await run("keepAndReturn", [LITERAL, n]);
      assert.ok(made.ok);
      const arrays = made.value as Float64Array[];
      assert.deepEqual(arrays.map((array) => [array.length, array[0], array[n - 1]]), [[n, 1, 1], [n, 2, 2], [n, 3, 3]]);
      // Only the buffer the result owns stands in for plain memory; real shared memory stays shared.
      assert.deepEqual(arrays.map((array) => standsInForPlain(array.buffer)), [shareResults, false, false]);
      assert.deepEqual(arrays.map((array) => isSharedMemory(array.buffer)), [false, true, false]);
      const left = await run("keptLengths");
      // Shared: the thread's own array was released (empty now); shared memory and a half-viewed buffer were left in place.
      assert.deepEqual(left.ok && left.value, shareResults ? [0, n, n] : [n, n, n]);
    } finally {
      pool.close();
    }
  });
}

test("a thread pool with shareResults and moveInputs hands a result back to a task as plain memory, copied on the task's thread, not here", async (t) => {
  // Which buffers each message to a thread moved, and which stand-ins it named (the pool's port is one of this process's MessagePorts).
  const moved: number[][] = [];
  const named: number[] = [];
  const { MessagePort } = await import("node:worker_threads");
  const post = MessagePort.prototype.postMessage;
  t.mock.method(MessagePort.prototype, "postMessage", function (this: InstanceType<typeof MessagePort>, value: unknown, transfer?: readonly ArrayBuffer[]) {
    if (Array.isArray(value) && Array.isArray(value[1])) named.push(value[1].length);
    moved.push((transfer ?? []).map((buffer) => buffer.byteLength));
    return post.call(this, value, transfer as never);
  });
  const pool = new WorkerPool("threads", 1, { shareResults: true, moveInputs: true, waitAwake: false });
  try {
    const run = await clusterTaskRunner(pool);
    const n = 100_000;
    const made = await run("keepAndReturn", [LITERAL, n]);
    assert.ok(made.ok);
    const [own] = made.value as Float64Array[];
    assert.equal(standsInForPlain(own.buffer), true);
    moved.length = 0;
    named.length = 0;
    const described = await run("describeArrays", own, own);
    assert.ok(described.ok);
    // The task sees a plain Float64Array of its own, as it would have without sharing.
    assert.deepEqual(described.value, [
      { type: "Float64Array", shared: false, length: n, first: 1, last: 1 },
      { type: "Float64Array", shared: false, length: n, first: 1, last: 1 },
    ]);
    // Nothing copied or moved here: the message shares the stand-in once and names it.
    assert.deepEqual(moved, [[]]);
    assert.deepEqual(named, [1]);
    assert.deepEqual([own.length, own[0], standsInForPlain(own.buffer)], [n, 1, true]);
  } finally {
    pool.close();
  }
});

for (const moveInputs of [true, false]) {
  test(`a thread pool with moveInputs ${moveInputs} ${moveInputs ? "moves copies of big plain inputs, sharing shared ones and leaving the caller's whole" : "clones inputs"}`, async (t) => {
    // Which buffers each message to a thread moved (the pool's port is one of this process's MessagePorts).
    const moved: number[][] = [];
    const { MessagePort } = await import("node:worker_threads");
    const post = MessagePort.prototype.postMessage;
    t.mock.method(MessagePort.prototype, "postMessage", function (this: InstanceType<typeof MessagePort>, value: unknown, transfer?: readonly ArrayBuffer[]) {
      moved.push((transfer ?? []).map((buffer) => buffer.byteLength));
      return post.call(this, value, transfer as never);
    });
    const pool = new WorkerPool("threads", 1, { moveInputs, waitAwake: false });
    try {
      await pool.ready();
      const describe = pool.functionIdForSpec({ kind: "module", path: require.resolve("./fixtures/cluster-tasks"), name: "describeArrays" });
      const client = { batchSize: 1, quickTasks: false, recordDuration() {} };
      const n = 100_000;
      const own = new Float64Array(n).fill(1);
      const shared = new Float64Array(new SharedArrayBuffer(8 * n)).fill(2);
      const small = new Float64Array(10).fill(3);
      moved.length = 0;
      const outcome = await new Promise<TaskOutcome>((resolve) => pool.enqueue(client, { node: 0, key: "k" }, [CALL, describe, own, shared, small, own], [describe], resolve));
      assert.ok(outcome.ok);
      assert.deepEqual(outcome.value, [
        { type: "Float64Array", shared: false, length: n, first: 1, last: 1 },
        { type: "Float64Array", shared: true, length: n, first: 2, last: 2 },
        { type: "Float64Array", shared: false, length: 10, first: 3, last: 3 },
        { type: "Float64Array", shared: false, length: n, first: 1, last: 1 },
      ]);
      // One copy of the big plain buffer moved (once, though passed twice); the caller's array is whole.
      assert.deepEqual(moved, [moveInputs ? [8 * n] : []]);
      assert.deepEqual([own.length, own[n - 1]], [n, 1]);
    } finally {
      pool.close();
    }
  });
}
