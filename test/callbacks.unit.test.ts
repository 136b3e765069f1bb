// The callback protocol: ports of dask/tests/test_callbacks.py (C1–C5) and test_threaded's
// broken-callback case (X1), plus per-computation scoping, which Dask gets wrong.
import assert from "node:assert/strict";
import { after, afterEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Callback, type Graph, type Key, type State, closePools, get, withCallbacks } from "../src";

const add = (a: number, b: number): number => a + b;
const mul = (a: number, b: number): number => a * b;
const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };

after(() => closePools());
afterEach(() => {
  for (const cb of [...Callback.active]) cb.unregister();
});

/** Records every hook call as a line. */
class Recorder extends Callback {
  readonly log: string[] = [];
  override start(): void {
    this.log.push("start");
  }
  override startState(_dsk: Graph, state: State): void {
    this.log.push(`startState ready=${[...state.ready]}`);
  }
  override pretask(key: Key): void {
    this.log.push(`pretask ${String(key)}`);
  }
  override posttask(key: Key, result: unknown, _dsk: Graph, _state: State, workerId: unknown): void {
    this.log.push(`posttask ${String(key)}=${result} worker=${workerId}`);
  }
  override finish(_dsk: Graph, _state: State, errored: boolean): void {
    this.log.push(`finish errored=${errored}`);
  }
}

describe("hooks fire as in dask/local.py", () => {
  test("the verified trace of the five-key graph", async () => {
    const rec = new Recorder();
    assert.equal(await withCallbacks([rec], () => get(dsk, "e")), 6);
    assert.deepEqual(rec.log, [
      "start",
      "startState ready=c,d",
      "pretask d",
      "posttask d=2 worker=null",
      "pretask c",
      "posttask c=3 worker=null",
      "pretask e",
      "posttask e=6 worker=null",
      "finish errored=false",
    ]);
  });

  test("the error trace: no posttask for the failed task, finish(errored) sees it running", async () => {
    const div = (x: number, y: number): number => {
      if (y === 0) throw new Error("division by zero");
      return x / y;
    };
    let running: Key[] = [];
    let finished: Key[] = [];
    const rec = new Recorder();
    const spy = new Callback({
      finish: (_d, state) => {
        running = [...state.running];
        finished = [...state.finished];
      },
    });
    await assert.rejects(
      get({ x: [div, 1, 1], y: [div, "x", 2], z: [div, "y", 0] }, "z", { callbacks: [rec, spy] }),
      /division by zero/,
    );
    assert.deepEqual(rec.log.slice(1), ["startState ready=x", "pretask x", "posttask x=1 worker=null", "pretask y", "posttask y=0.5 worker=null", "pretask z", "finish errored=true"]);
    assert.deepEqual(running, ["z"]);
    assert.deepEqual(finished.sort(), ["x", "y"]);
  });

  test("C1 start fires even when there are no tasks", async () => {
    const rec = new Recorder();
    await withCallbacks([rec], () => get({ x: 1 }, "x"));
    assert.deepEqual(rec.log, ["start", "startState ready=", "finish errored=false"]);
  });

  test("C2 startState sees the graph and the cache", async () => {
    let seen: [unknown, number] | undefined;
    await get({ x: 1 }, "x", { callbacks: [new Callback({ startState: (d, state) => (seen = [d.get("x"), state.cache.size]) })] });
    assert.deepEqual(seen, [1, 1]);
  });

  test("C3 finish always runs: task error, callback error", async () => {
    const errors: boolean[] = [];
    const cb = new Callback({ finish: (_d, _s, errored) => errors.push(errored) });
    await assert.rejects(withCallbacks([cb], () => get({ x: [() => JSON.parse("{")] }, "x")), SyntaxError);
    const broken = new Callback({
      pretask: () => {
        throw new Error("pretask broke");
      },
    });
    await assert.rejects(get({ x: [() => 1] }, "x", { callbacks: [broken, cb] }), /pretask broke/);
    assert.deepEqual(errors, [true, true]);
  });

  test("a graph rejected before any task still gets finish(errored) with an empty, readable state", async () => {
    let seen: [boolean, number, number] | undefined;
    const cb = new Callback({ finish: (_d, state, errored) => (seen = [errored, state.finished.size, state.ready.length]) });
    await assert.rejects(get({ x: 1 }, "nope", { callbacks: [cb] }), /'nope' is not in the graph/);
    assert.deepEqual(seen, [true, 0, 0]);
  });

  test("X1 a callback whose start raises: the error propagates, finish runs for those started", async () => {
    const finished: string[] = [];
    const ok = new Callback({ finish: () => finished.push("ok") });
    const bad = new Callback({
      start: () => {
        throw new Error("my_exception");
      },
      finish: () => finished.push("bad"),
    });
    await assert.rejects(get({ x: [() => 1] }, "x", { callbacks: [ok, bad] }), /my_exception/);
    assert.deepEqual(finished, ["ok"]);
  });

  test("an error in finish surfaces when the computation itself succeeded", async () => {
    const cb = new Callback({
      finish: () => {
        throw new Error("finish broke");
      },
    });
    await assert.rejects(get({ x: [() => 1] }, "x", { callbacks: [cb] }), /finish broke/);
  });
});

describe("registration and scoping", () => {
  test("C5 register adds to and unregister removes from the active set", async () => {
    assert.equal(Callback.active.size, 0);
    const rec = new Recorder().register();
    assert.equal(Callback.active.size, 1);
    await get(dsk, "e");
    rec.unregister();
    assert.equal(Callback.active.size, 0);
    assert.equal(rec.log.filter((line) => line.startsWith("pretask")).length, 3);
    await get(dsk, "e");
    assert.equal(rec.log.filter((line) => line.startsWith("pretask")).length, 3);
  });

  test("unregistering one that is not registered throws, naming its class", () => {
    assert.throws(() => new Recorder().unregister(), /Recorder is not registered/);
  });

  test("Symbol.dispose unregisters", () => {
    const cb = new Callback().register();
    cb[Symbol.dispose]();
    assert.equal(Callback.active.size, 0);
  });

  test("registering twice, or registering and scoping, still calls each hook once", async () => {
    const rec = new Recorder().register().register();
    await withCallbacks([rec], () => get(dsk, "e", { callbacks: [rec] }));
    assert.equal(rec.log.filter((line) => line === "start").length, 1);
  });

  test("hook functions and subclass methods are equivalent (seed 002's PrintKeys)", async () => {
    const printed: string[] = [];
    class PrintKeys extends Callback {
      override pretask(key: Key): void {
        printed.push(`Computing: ${String(key)}!`);
      }
    }
    await withCallbacks([new PrintKeys()], () => get(dsk, "e"));
    await withCallbacks([new Callback({ pretask: (key) => printed.push(`Computing: ${String(key)}!`) })], () => get(dsk, "e"));
    assert.deepEqual(printed, ["Computing: d!", "Computing: c!", "Computing: e!", "Computing: d!", "Computing: c!", "Computing: e!"]);
  });

  test("a hook that is not a function is rejected by name", () => {
    assert.throws(() => new Callback({ pretask: 3 as never }), /Callback hook pretask must be a function/);
  });

  test("concurrent withCallbacks blocks never see each other's computations", async () => {
    const slow = async (x: number): Promise<number> => (await sleep(5), x);
    const graphA = { a1: [slow, 1], a2: [slow, "a1"], a3: [add, "a2", 1] };
    const graphB = { b1: [slow, 1], b2: [slow, "b1"], b3: [add, "b2", 1] };
    const recA = new Recorder();
    const recB = new Recorder();
    // Interleaved on purpose: B's block starts while A's computation is running.
    const runA = withCallbacks([recA], async () => {
      await sleep(1);
      return get(graphA, "a3");
    });
    const runB = withCallbacks([recB], () => get(graphB, "b3"));
    await Promise.all([runA, runB]);
    const keysOf = (rec: Recorder) => rec.log.filter((l) => l.startsWith("pretask")).map((l) => l.split(" ")[1]);
    assert.deepEqual(keysOf(recA).sort(), ["a1", "a2", "a3"]);
    assert.deepEqual(keysOf(recB).sort(), ["b1", "b2", "b3"]);
  });

  test("C4 a computation started inside a task sees no outer callbacks", async () => {
    const outerKeys: Key[] = [];
    const innerKeys: Key[] = [];
    const outer = new Callback({ pretask: (key) => outerKeys.push(key) }).register();
    const inner = new Callback({ pretask: (key) => innerKeys.push(key) });
    const innerDsk = { x: [add, 1, 2], y: [add, "x", 3] };
    const nested = async (x: number): Promise<number> => {
      const y = (await withCallbacks([inner], () => get(innerDsk, "y"))) as number;
      return y + x;
    };
    const scoped = new Callback({ pretask: (key) => outerKeys.push(`scoped:${String(key)}`) });
    const result = await withCallbacks([scoped], () => get({ a: [nested, 1], b: [add, "a", 2] }, "b"));
    outer.unregister();
    assert.equal(result, 9);
    assert.deepEqual(outerKeys.sort(), ["a", "b", "scoped:a", "scoped:b"]);
    assert.deepEqual(innerKeys.sort(), ["x", "y"]);
    assert.equal(Callback.active.size, 0);
  });

  test("blockStart and blockEnd bracket a withCallbacks block, also when it throws", async () => {
    const events: string[] = [];
    class Timed extends Callback {
      override blockStart(): void {
        events.push("blockStart");
      }
      override async blockEnd(): Promise<void> {
        await sleep(1);
        events.push("blockEnd");
      }
      override start(): void {
        events.push("start");
      }
    }
    await withCallbacks([new Timed()], () => get(dsk, "e"));
    await assert.rejects(
      withCallbacks([new Timed()], async () => {
        throw new Error("inside");
      }),
      /inside/,
    );
    assert.deepEqual(events, ["blockStart", "start", "blockEnd", "blockStart", "blockEnd"]);
  });
});

describe("withCallbacks is always a promise (its type says so)", () => {
  test("a synchronous fn: a promise of its value, with blockEnd run before it settles", async () => {
    const events: string[] = [];
    class Timed extends Callback {
      override async blockEnd(): Promise<void> {
        await sleep(1);
        events.push("blockEnd");
      }
    }
    const result = withCallbacks([new Timed()], () => 42);
    assert.ok(result instanceof Promise);
    assert.deepEqual(events, []);
    assert.equal(await result, 42);
    assert.deepEqual(events, ["blockEnd"]);
    // With nothing asynchronous at all, still a promise.
    const plain = withCallbacks([new Callback()], () => "x");
    assert.ok(plain instanceof Promise);
    assert.equal(await plain, "x");
  });

  test("a throwing fn or a bad argument rejects instead of throwing", async () => {
    const thrown = withCallbacks([new Callback()], () => {
      throw new RangeError("inside");
    });
    assert.ok(thrown instanceof Promise);
    await assert.rejects(thrown, RangeError);
    await assert.rejects(withCallbacks([{} as Callback], () => 1), /withCallbacks takes Callback objects/);
  });

  test("a failing blockEnd does not hide the block's own error, and surfaces when the block succeeded", async () => {
    class BadEnd extends Callback {
      override blockEnd(): void {
        throw new Error("blockEnd broke");
      }
    }
    await assert.rejects(
      withCallbacks([new BadEnd()], () => {
        throw new Error("block broke");
      }),
      /block broke/,
    );
    await assert.rejects(withCallbacks([new BadEnd()], () => 1), /blockEnd broke/);
  });
});

describe("no silent typos: unknown hook names are TypeErrors", () => {
  test("an unknown constructor option is named, with the valid hooks listed", () => {
    assert.throws(
      () => new Callback({ postTask: () => undefined } as never),
      (error: unknown) =>
        error instanceof TypeError &&
        /Unknown Callback hook "postTask" \(did you mean posttask\?\)/.test(error.message) &&
        /start, startState, pretask, posttask, finish, startCallback, endCallback/.test(error.message),
    );
    assert.throws(() => new Callback({ onTask: () => undefined } as never), /Unknown Callback hook "onTask"; known: start, /);
  });

  test("a subclass method spelt like a hook it does not define is rejected, naming class, method and hook", () => {
    class Typo extends Callback {
      postTask(): void {}
    }
    assert.throws(() => new Typo(), /Typo defines postTask, which is not a Callback hook \(did you mean posttask\?\)/);
    // Dask's subclass spelling, ported as is.
    class DaskStyle extends Callback {
      _pretask(): void {}
    }
    assert.throws(() => new DaskStyle(), /DaskStyle defines _pretask, .*did you mean pretask\?/);
    class Inherited extends DaskStyle {}
    assert.throws(() => new Inherited(), /Inherited defines _pretask/);
  });

  test("helper methods are the subclass's own business, even one named like a hook it does define", async () => {
    class Helpers extends Callback {
      readonly seen: string[] = [];
      override finish(): void {
        this._finish();
      }
      _finish(): void {
        this.seen.push("finished");
      }
      report(): string {
        return this.seen.join();
      }
    }
    const cb = new Helpers();
    await get(dsk, "e", { callbacks: [cb] });
    assert.equal(cb.report(), "finished");
  });

  test("a hook given to the constructor covers a near-miss method", () => {
    class Typo extends Callback {
      postTask(): void {}
    }
    assert.doesNotThrow(() => new Typo({ posttask: () => undefined }));
    assert.throws(() => new Typo(), /did you mean posttask/);
  });
});

describe("seed 001's two-callback protocol", () => {
  test("startCallback and endCallback per task, then each once more with null at the end", async () => {
    const log: string[] = [];
    const cb = new Callback({
      startCallback: (key, d, state) => log.push(`start ${String(key)} ${d instanceof Object} running=${state.running.size}`),
      endCallback: (key, _d, state, id) => log.push(`end ${String(key)} ${String(id)} finished=${state.finished.size}`),
    });
    assert.equal(await withCallbacks(cb, () => get(dsk, "e")), 6);
    assert.deepEqual(log, [
      "start d true running=1",
      "end d null finished=1",
      "start c true running=1",
      "end c null finished=2",
      "start e true running=1",
      "end e null finished=3",
      "start null true running=0",
      "end null null finished=3",
    ]);
  });

  test("they run beside the five hooks, as subclass methods too; a failed computation gets no final call", async () => {
    const log: string[] = [];
    class Both extends Callback {
      override pretask(key: Key): void {
        log.push(`pretask ${String(key)}`);
      }
      override startCallback(key: Key | null): void {
        log.push(`startCallback ${String(key)}`);
      }
      override endCallback(key: Key | null, _d: Graph, _s: State, id: unknown): void {
        log.push(`endCallback ${String(key)} ${String(id)}`);
      }
      override finish(_d: Graph, _s: State, errored: boolean): void {
        log.push(`finish ${errored}`);
      }
    }
    await get({ x: [add, 1, 2] }, "x", { callbacks: [new Both()] });
    assert.deepEqual(log, ["pretask x", "startCallback x", "endCallback x null", "startCallback null", "endCallback null null", "finish false"]);
    log.length = 0;
    const boom = (): never => {
      throw new Error("boom");
    };
    await assert.rejects(get({ x: [boom] }, "x", { callbacks: [new Both()] }), /boom/);
    assert.deepEqual(log, ["pretask x", "startCallback x", "finish true"]);
  });

  test("on the threaded scheduler endCallback gets the worker's id", async () => {
    const ids: unknown[] = [];
    await get({ x: [Math.max, 1, 2], y: [Math.max, "x", 3] }, "y", {
      scheduler: "threads",
      numWorkers: 1,
      callbacks: [new Callback({ endCallback: (_key, _d, _s, id) => ids.push(id) })],
    });
    assert.equal(ids.length, 3);
    assert.equal(typeof ids[0], "number");
    assert.equal(ids[0], ids[1]);
    assert.equal(ids[2], null);
  });
});
