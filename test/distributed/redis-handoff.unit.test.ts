// The pure parts of a Redis worker's graceful leaving (issue 27, "faults lose nothing"): which
// peers may take the results it keeps, and who takes which (./handoff). The processes, signals
// and transfers are in redis-faults-data.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KeptEntry } from "../../src/kernel/distributed/redis/held";
import { planHandoff, recipientsOf } from "../../src/kernel/distributed/redis/handoff";
import type { RegisteredWorker } from "../../src/kernel/distributed/redis/registry";
import type { WorkerMetrics } from "../../src/kernel/distributed/messages";
import type { WorkerStatus } from "../../src/protocol/records";

const MB = 1e6;
const entry = (key: string, nbytes: number, clientId = "c1"): KeptEntry => ({ clientId, key, job: 1, nbytes });

function registered(name: string, options: { memoryLimit?: number; memory?: number; status?: WorkerStatus; dataAddress?: string | null; beat?: boolean } = {}): RegisteredWorker {
  const info = {
    name,
    host: "h",
    pid: 1,
    nthreads: 1,
    memoryLimit: options.memoryLimit ?? 1000 * MB,
    globals: [],
    allowSource: false,
    started: 0,
    ...(options.dataAddress === null ? {} : { dataAddress: options.dataAddress ?? `tcp://127.0.0.1:${name.length}` }),
  };
  const metrics = { memory: options.memory ?? 0 } as Partial<WorkerMetrics> as WorkerMetrics;
  const beat = options.beat === false ? undefined : { time: 0, seq: 1, status: options.status ?? "running", clockOffset: 0, metrics };
  return { info, beat };
}

describe("a leaving Redis worker's recipients", () => {
  test("running, listening peers other than itself, with the memory they may gain before pausing (80 % of their limit)", () => {
    const recipients = recipientsOf(
      [
        registered("self"),
        registered("roomy", { memoryLimit: 1000 * MB, memory: 100 * MB }),
        registered("paused", { status: "paused" }),
        registered("leaving", { status: "closing" }),
        registered("deaf", { dataAddress: null }),
        registered("silent", { beat: false }),
        registered("full", { memoryLimit: 100 * MB, memory: 90 * MB }),
      ],
      "self",
    );
    assert.deepEqual(recipients, [{ name: "roomy", headroom: 700 * MB }]);
  });
});

describe("who takes a leaving worker's values", () => {
  test("the biggest first, each to the peer with the most room left", () => {
    const plan = planHandoff([entry("small", 10 * MB), entry("big", 300 * MB), entry("mid", 200 * MB)], [
      { name: "a", headroom: 400 * MB },
      { name: "b", headroom: 350 * MB },
    ]);
    // big → a (400 → 100); mid → b (350 → 150); small → b (150 > 100).
    assert.deepEqual(Object.fromEntries([...plan.toPeers].map(([peer, values]) => [peer, values.map(({ key }) => key)])), { a: ["big"], b: ["mid", "small"] });
    assert.deepEqual(plan.toRedis, []);
  });

  test("a value no peer has room for goes to Redis; with no peer at all, every value does", () => {
    const plan = planHandoff([entry("huge", 500 * MB), entry("fits", 50 * MB)], [{ name: "a", headroom: 100 * MB }]);
    assert.deepEqual([...plan.toPeers.keys()], ["a"]);
    assert.deepEqual(plan.toPeers.get("a")!.map(({ key }) => key), ["fits"]);
    assert.deepEqual(plan.toRedis.map(({ key }) => key), ["huge"]);
    const alone = planHandoff([entry("x", 1), entry("y", 2, "c2")], []);
    assert.equal(alone.toPeers.size, 0);
    assert.deepEqual(alone.toRedis.map(({ key }) => key).sort(), ["x", "y"]);
  });

  test("ties go to the first name, whatever the order the peers came in", () => {
    const peers = [
      { name: "b", headroom: 100 * MB },
      { name: "a", headroom: 100 * MB },
    ];
    assert.deepEqual([...planHandoff([entry("x", MB)], peers).toPeers.keys()], ["a"]);
    assert.deepEqual([...planHandoff([entry("x", MB)], [...peers].reverse()).toPeers.keys()], ["a"]);
  });
});
