// The pure parts of Redis workers' data plane (issue 27), in this process: where placement sends a
// task whose inputs workers keep (the holder of most bytes, unless it is busy), and a worker's
// kept values — per client, counted in its memory, dropped by free-keys or when a client leaves —
// and the option that decides which results stay with their worker.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { describe, test } from "node:test";
import { Client } from "../../src";
import { parseWorkerArgs } from "../../src/cli/worker";
import { RedisWorker } from "../../src/kernel/distributed/redis";
import { KeptValues, workerFolder } from "../../src/kernel/distributed/redis/held";
import { PLACED_PER_THREAD, type WorkerLoad, placeByData } from "../../src/kernel/distributed/redis/placement";
import { Digests } from "../../src/kernel/distributed/worker/digests";

describe("placement of a task whose inputs Redis workers keep", () => {
  const idle = (nthreads: number): WorkerLoad => ({ nthreads, placed: 0 });

  test("the worker keeping most of the input bytes gets it, counting every input it keeps", () => {
    const loads: Record<string, WorkerLoad> = { a: idle(1), b: idle(1) };
    const inputs = [
      { holder: "a", nbytes: 5_000_000 },
      { holder: "b", nbytes: 4_000_000 },
      { holder: "b", nbytes: 4_000_000 },
    ];
    assert.equal(placeByData(inputs, (worker) => loads[worker]), "b");
    assert.equal(placeByData(inputs.slice(0, 2), (worker) => loads[worker]), "a");
  });

  test("no kept input, a holder no longer registered, or a busy holder: the shared queue", () => {
    assert.equal(placeByData([], () => idle(4)), undefined);
    assert.equal(placeByData([{ holder: "gone", nbytes: 1e6 }], () => undefined), undefined);
    const busy = { nthreads: 2, placed: PLACED_PER_THREAD * 2 };
    assert.equal(placeByData([{ holder: "a", nbytes: 1e6 }], () => busy), undefined);
    assert.equal(placeByData([{ holder: "a", nbytes: 1e6 }], () => ({ ...busy, placed: busy.placed - 1 })), "a");
  });

  test("ties go to the first name, whatever the inputs' order", () => {
    const inputs = [
      { holder: "b", nbytes: 1e6 },
      { holder: "a", nbytes: 1e6 },
    ];
    assert.equal(placeByData(inputs, () => idle(1)), "a");
    assert.equal(placeByData([...inputs].reverse(), () => idle(1)), "a");
  });
});

describe("a Redis worker's kept values", () => {
  const keeping = (memoryLimit: number, statuses: string[] = [], notes: string[] = []) => ({
    memoryLimit,
    digests: new Digests(),
    status: () => (statuses.at(-1) ?? "running") as "running" | "paused",
    setStatus: (status: "running" | "paused") => void statuses.push(status),
    note: (line: string) => void notes.push(line),
  });

  test("each client sees only its own; client.run's view shows bare keys and counts their bytes; free-keys and a client leaving drop them", () => {
    const folder = workerFolder();
    const kept = new KeptValues(folder, keeping(0));
    try {
      const value = new Float64Array(100_000);
      kept.keep("c1", "x", 3, value, value.byteLength, "Float64Array", { add() {} });
      kept.keep("c2", "y", 4, new Float64Array(10), 80, "Float64Array", { add() {} });
      assert.ok(kept.of("c1").has("x") && !kept.of("c2").has("x"));
      assert.equal(kept.of("c1").get("x"), value);
      assert.deepEqual([kept.of("c1").nbytesOf("x"), kept.of("c1").typeOf("x")], [800_000, "Float64Array"]);
      assert.deepEqual(kept.layout(), { memory: ["y", "x"], disk: [] }, "least recently used first: x was just read");
      assert.deepEqual(kept.find("y").nbytes, 80);
      assert.equal(kept.held().managed, 800_080);
      kept.drop("c1", ["x"]);
      assert.ok(!kept.of("c1").has("x"));
      kept.dropClient("c2");
      assert.deepEqual(kept.layout(), { memory: [], disk: [] });
      assert.equal(kept.held().managed, 0);
    } finally {
      kept.close();
    }
    assert.ok(!existsSync(folder), "its folder goes when it closes");
  });

  test("a worker whose process is past its memory limit's thresholds spills what it keeps to its folder and pauses", () => {
    // A 1 MB limit: this process's memory is far past 70 % (spill) and 80 % (pause) of it.
    const statuses: string[] = [];
    const notes: string[] = [];
    const kept = new KeptValues(workerFolder(), keeping(1_000_000, statuses, notes));
    try {
      kept.keep("c1", "big", 1, new Float64Array(50_000).fill(7), 400_000, "Float64Array", { add() {} });
      assert.deepEqual(kept.layout(), { memory: [], disk: ["big"] });
      assert.deepEqual(statuses, ["paused"]);
      assert.ok(notes.some((line) => line.startsWith("Spilled")) && notes.some((line) => line.startsWith("Pausing worker")), notes.join("\n"));
      assert.equal(kept.held().spilled, 400_000);
      assert.equal((kept.of("c1").get("big") as Float64Array)[49_999], 7, "read back from disk");
    } finally {
      kept.close();
    }
  });
});

describe("the holdAbove option", () => {
  test("a bad value is a TypeError naming the option and its unit, before anything connects; the command line reads a size", async () => {
    await assert.rejects(Client.connect("redis://127.0.0.1:1", { holdAbove: -1 } as never), /^TypeError: Client\.connect option holdAbove must be a positive number of bytes, got -1$/);
    await assert.rejects(RedisWorker.start({ url: "redis://127.0.0.1:1", holdAbove: "64 KiB" as never }), /^TypeError: RedisWorker option holdAbove must be a positive number of bytes, got "64 KiB"$/);
    assert.equal(parseWorkerArgs(["redis://h:1", "--hold-above", "1 MiB"]).holdAbove, 2 ** 20);
    assert.throws(() => parseWorkerArgs(["redis://h:1", "--hold-above", "big"]), /--hold-above needs a size such as "4 GiB" or "500 MB", got "big"/);
  });
});
