// contextMeter and the per-task ledger on their own (no scheduler): Dask's test_metrics.py cases
// that apply, the no-op outside a task, bad input, and the execute-layer arithmetic.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { contextMeter } from "../../src";
import { type TaskTimes, ThreadClock, threadCpuMs } from "../../src/kernel/metrics/clock";
import { TaskLedger, TaskMeter, executeMetrics } from "../../src/kernel/metrics/context-meter";

const meter = new TaskMeter();

/** Runs `fn` as a task would run, and returns its ledger once it settled. */
async function asTask(fn: () => unknown): Promise<TaskLedger> {
  const ledger = meter.begin();
  await meter.run(ledger, fn);
  meter.end(ledger);
  return ledger;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** label → summed value of one unit. */
function byLabel(ledger: TaskLedger, unit = "seconds"): Map<string, number> {
  return new Map((ledger.userMetrics() ?? []).filter(([, , u]) => u === unit).map(([label, value]) => [label, value]));
}

describe("contextMeter", () => {
  test("outside a task it only runs the code: meter returns fn's result, digestMetric does nothing", async () => {
    assert.equal(contextMeter.meter("I/O", () => 42), 42);
    assert.equal(await contextMeter.meter("I/O", async () => 43), 43);
    contextMeter.digestMetric("S3", 1, "bytes");
    const wrapped = contextMeter.meter("I/O")((a: number, b: number) => a + b);
    assert.equal(wrapped(1, 2), 3);
  });

  test("bad input is an error naming the label and what is wrong, even outside a task", () => {
    assert.throws(() => contextMeter.meter("", () => 1), /label must be a non-empty string, got ""/);
    assert.throws(() => contextMeter.meter("I/O", 5 as never), /contextMeter.meter\("I\/O", fn\): fn must be a function, got number/);
    assert.throws(() => contextMeter.digestMetric("S3", Number.NaN, "bytes"), /digestMetric\("S3"\): the value must be a finite number, got NaN/);
    assert.throws(() => contextMeter.digestMetric("S3", 1, ""), /digestMetric\("S3"\): the unit must be a non-empty string/);
    assert.throws(() => contextMeter.meter("I/O")(7 as never), /wraps a function, got number/);
  });

  test("a meter logs its wall time under its label; digests keep their unit; repeats add up (Dask 6)", async () => {
    const ledger = await asTask(() => {
      contextMeter.meter("m1", () => sleepSync(30));
      contextMeter.digestMetric("m2", 1, "foo");
      contextMeter.digestMetric("m2", 2, "foo");
      contextMeter.digestMetric("m1", 0.5, "seconds");
    });
    const seconds = byLabel(ledger);
    assert.ok(seconds.get("m1")! >= 0.5 + 0.029 && seconds.get("m1")! < 0.5 + 0.5, `m1 ${seconds.get("m1")}`);
    assert.deepEqual(byLabel(ledger, "foo"), new Map([["m2", 3]]));
  });

  test("the metric is digested even when the metered code throws or rejects (Dask 4, 7)", async () => {
    const ledger = await asTask(async () => {
      assert.throws(() => contextMeter.meter("sync-fail", () => {
        sleepSync(20);
        throw new Error("boom");
      }), /boom/);
      await assert.rejects(contextMeter.meter("async-fail", async () => {
        await sleep(20);
        throw new Error("bang");
      }), /bang/);
    });
    const seconds = byLabel(ledger);
    assert.ok(seconds.get("sync-fail")! >= 0.019, `sync-fail ${seconds.get("sync-fail")}`);
    assert.ok(seconds.get("async-fail")! >= 0.019, `async-fail ${seconds.get("async-fail")}`);
  });

  test("nested meters: the outer one logs only its own time, nothing is counted twice (Dask 8)", async () => {
    const ledger = await asTask(() =>
      contextMeter.meter("outer", () => {
        sleepSync(40);
        contextMeter.meter("inner", () => sleepSync(80));
      }),
    );
    const seconds = byLabel(ledger);
    // (A busy machine may wake a sleeper late: loose upper bounds.)
    assert.ok(seconds.get("inner")! >= 0.079 && seconds.get("inner")! < 0.5, `inner ${seconds.get("inner")}`);
    assert.ok(seconds.get("outer")! >= 0.039 && seconds.get("outer")! < 0.5, `outer ${seconds.get("outer")}`);
    // The task's own time outside the meters is what remains of its wall time.
    const wall = (ledger.end - ledger.start) / 1000;
    const total = executeMetrics(wall, ledger.cpu / 1000, ledger).reduce((sum, [, value, unit]) => sum + (unit === "seconds" ? value : 0), 0);
    assert.ok(Math.abs(total - wall) < 1e-9, `Σ ${total} s, wall ${wall} s`);
  });

  test("as a function wrapper: every call inside a task is metered, calls outside are not (Dask 9)", async () => {
    const wait = contextMeter.meter("wrapped")((ms: number) => {
      sleepSync(ms);
      return ms;
    });
    assert.equal(wait(1), 1);
    const ledger = await asTask(() => {
      wait(20);
      wait(30);
    });
    assert.ok(byLabel(ledger).get("wrapped")! >= 0.049);
    assert.equal(ledger.user!.filter(([label]) => label === "wrapped").length, 2);
  });

  test("works as a TypeScript 5 method decorator", async () => {
    const decorate = contextMeter.meter("method");
    class Reader {
      calls = 0;
      read(ms: number): number {
        sleepSync(ms);
        return ++this.calls;
      }
    }
    // What `@contextMeter.meter("method")` on `read` compiles to with TS 5 decorators.
    Reader.prototype.read = decorate(Reader.prototype.read, { kind: "method", name: "read" });
    const reader = new Reader();
    const ledger = await asTask(() => reader.read(20));
    assert.equal(reader.calls, 1);
    assert.ok(byLabel(ledger).get("method")! >= 0.019);
  });

  test("async code: the ledger follows the task across awaits; concurrent tasks never see each other's", async () => {
    const a = meter.begin();
    const b = meter.begin();
    const work = (label: string) => async () => {
      for (let i = 0; i < 10; i++) {
        contextMeter.digestMetric(label, 1, "count");
        await sleep(1);
      }
      await contextMeter.meter(`${label}-wait`, () => sleep(30));
    };
    await Promise.all([meter.run(a, work("a")), meter.run(b, work("b"))]);
    assert.deepEqual(byLabel(a, "count"), new Map([["a", 10]]));
    assert.deepEqual(byLabel(b, "count"), new Map([["b", 10]]));
    assert.ok(byLabel(a).get("a-wait")! >= 0.029 && !byLabel(a).has("b-wait"));
  });
});

describe("executeMetrics: a task's execute-layer breakdown", () => {
  function ledgerWith(fields: Partial<Pick<TaskLedger, "meteredWall" | "meteredCpu" | "digestedSeconds">>, user: [string, number, string][] = []): TaskLedger {
    const ledger = new TaskLedger();
    Object.assign(ledger, fields);
    for (const [label, value, unit] of user) ledger.digest(label, value, unit);
    return ledger;
  }
  const asMap = (metrics: readonly (readonly [string, number, string])[]): Map<string, number> =>
    new Map(metrics.map(([activity, value, unit]) => [`${activity} ${unit}`, Math.round(value * 1e6) / 1e6]));

  test("without user metrics: thread-cpu and the rest of the wall time as thread-noncpu", () => {
    assert.deepEqual(asMap(executeMetrics(0.3, 0.1, null)), new Map([["thread-cpu seconds", 0.1], ["thread-noncpu seconds", 0.2]]));
  });

  test("a meter around I/O takes its CPU from thread-cpu and the rest from thread-noncpu (Dask floors thread-cpu to 0)", () => {
    // 0.1 s computing, then 0.2 s asleep inside meter("I/O") (0.001 s of CPU in it).
    const ledger = ledgerWith({ meteredWall: 200, meteredCpu: 1 }, [["I/O", 0.2, "seconds"]]);
    assert.deepEqual(asMap(executeMetrics(0.3, 0.101, ledger)), new Map([["I/O seconds", 0.2], ["thread-cpu seconds", 0.1], ["thread-noncpu seconds", 0]]));
  });

  test("seconds digested without a meter come out of thread-noncpu first, then thread-cpu, never below 0 (Dask 13)", () => {
    const small = ledgerWith({ digestedSeconds: 0.05 }, [["I/O", 0.05, "seconds"]]);
    assert.deepEqual(asMap(executeMetrics(0.2, 0.1, small)), new Map([["I/O seconds", 0.05], ["thread-cpu seconds", 0.1], ["thread-noncpu seconds", 0.05]]));
    const huge = ledgerWith({ digestedSeconds: 5 }, [["I/O", 5, "seconds"]]);
    assert.deepEqual(asMap(executeMetrics(0.2, 0.1, huge)), new Map([["I/O seconds", 5], ["thread-cpu seconds", 0], ["thread-noncpu seconds", 0]]));
  });

  test("other units take nothing from the time; integers stay integers", () => {
    const ledger = ledgerWith({}, [["S3 Infrequent Access", 1000, "bytes"], ["S3 Infrequent Access", 24, "bytes"]]);
    const metrics = executeMetrics(0.2, 0.2, ledger);
    assert.deepEqual(asMap(metrics), new Map([["S3 Infrequent Access bytes", 1024], ["thread-cpu seconds", 0.2], ["thread-noncpu seconds", 0]]));
    assert.ok(Number.isInteger(metrics.find(([activity]) => activity === "S3 Infrequent Access")![1]));
  });

  test("no CPU clock on the platform: the time is reported whole, as 'thread'", () => {
    assert.deepEqual(asMap(executeMetrics(0.3, Number.NaN, null)), new Map([["thread seconds", 0.3]]));
  });
});

describe("ThreadClock: a task's CPU time", () => {
  /**
   * Spins until this thread has had `ms` of CPU time, by its own counter: a neighbour on a busy
   * machine stretches the spin's wall time but not the CPU the task is to be credited with.
   */
  function spin(ms: number): void {
    const end = threadCpuMs() + ms;
    while (threadCpuMs() < end);
  }

  test("a thread that waits between tasks (idle) splits their CPU time right", async () => {
    const clock = new ThreadClock();
    const times = (): TaskTimes => ({ start: 0, end: 0, cpu: Number.NaN, cpuStart: Number.NaN });
    /** Runs `work` as a task after a 30 ms wait; its measured CPU ms and what the thread's own counter says it used. */
    const afterWait = async (work: () => void): Promise<{ measured: number; used: number; wall: number }> => {
      clock.idle();
      await sleep(30);
      const task = times();
      const before = threadCpuMs();
      clock.begin(task);
      work();
      clock.end(task);
      return { measured: task.cpu, used: threadCpuMs() - before, wall: task.end - task.start };
    };
    const first = times();
    clock.begin(first);
    spin(5);
    clock.end(first);
    for (let round = 0; round < 3; round++) {
      // Had the 30 ms wait counted as CPU (as the time since the last reading does when the
      // thread never said it went idle), the spin would show almost no CPU.
      const busy = await afterWait(() => spin(20));
      // (What Linux's counter lags behind is carried from task to task: a few ms either way.)
      assert.ok(busy.measured > 0.5 * busy.used && busy.measured <= busy.wall, `a 20 ms spin after a wait: ${busy.measured} ms of CPU measured, ${busy.used} ms used`);
      const sleeper = await afterWait(() => sleepSync(20));
      assert.ok(sleeper.measured < 0.5 * sleeper.wall, `a 20 ms sleep after a wait: ${sleeper.measured} ms of CPU measured, ${sleeper.used} ms used`);
    }
  });
});
