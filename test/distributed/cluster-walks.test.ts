// A real LocalCluster under a deep graph's abort and under callbacks and listeners that throw:
// the computation fails as it would on the local schedulers, and the cluster stays usable.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Callback, type CallbackOptions, Client, LocalCluster, get } from "../../src";
import { AbortError } from "../../src/kernel/scheduler/loop";
import { chain } from "../../bench/graphs";
import { capturingStderr } from "../helpers/stderr";

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("LocalCluster: deep graphs, throwing callbacks and listeners", () => {
  let cluster: LocalCluster;
  let client: Client;
  let run = 0;
  const workersLeft: string[] = [];

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "walks-tests", dashboardAddress: null });
    client = await Client.connect(cluster);
    cluster.scheduler.on("worker-left", (address, reason) => workersLeft.push(`${address}: ${reason}`));
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  /** A small graph with keys of its own (a key still held would not run again). */
  function small(): { dsk: Record<string, unknown>; key: string } {
    run++;
    return { dsk: { [`a-${run}`]: [Math.max, 1, 2], [`b-${run}`]: [Math.max, `a-${run}`, 3] }, key: `b-${run}` };
  }

  async function nextComputationIsFine(): Promise<void> {
    const { dsk, key } = small();
    assert.equal(await get(dsk, key), 3);
    assert.deepEqual(workersLeft, [], "no worker lost its connection");
  }

  for (const hook of ["start", "pretask", "posttask", "finish"] as const) {
    test(`a ${hook} that throws fails the computation as on the sync scheduler, and the cluster goes on`, async () => {
      const outcomes = [];
      for (const scheduler of ["sync", client] as const) {
        const thrown = new RangeError(`${hook} broke`);
        const finishes: boolean[] = [];
        const hooks: CallbackOptions = {
          [hook]: () => {
            throw thrown;
          },
        };
        if (hook !== "finish") hooks.finish = (_dsk, _state, errored) => void finishes.push(errored);
        const { dsk, key } = small();
        const error = await get(dsk, key, { scheduler, callbacks: [new Callback(hooks)] }).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        assert.equal(error, thrown, `${scheduler === "sync" ? "sync" : "cluster"}: the hook's own error`);
        outcomes.push(finishes);
      }
      assert.deepEqual(outcomes[1], outcomes[0], "finish ran as on sync");
      await nextComputationIsFine();
    });
  }

  test("a scheduler listener that throws is reported, not passed to the transport; the cluster goes on", async () => {
    const broken = (): void => {
      throw new Error("graph listener broke");
    };
    cluster.scheduler.on("graph-submitted", broken);
    const written = await capturingStderr(async () => {
      try {
        await nextComputationIsFine();
      } finally {
        cluster.scheduler.off("graph-submitted", broken);
      }
    });
    assert.match(written, /A "graph-submitted" listener of the scheduler failed \(the scheduler carries on\): Error: graph listener broke/);
  });

  test("aborting a 200 000-task chain rejects with AbortError; the next computation finishes within a second", async () => {
    const graph = chain(200_000, run++);
    const controller = new AbortController();
    const running = get(graph.graph, graph.keys, { signal: controller.signal });
    await until(() => (cluster.scheduler.state.stateCounts().processing ?? 0) > 0, 120_000, "the chain to start");
    controller.abort(new Error("enough"));
    await assert.rejects(running, (error: Error) => error instanceof AbortError && /enough/.test(error.message));
    const start = performance.now();
    await nextComputationIsFine();
    const seconds = (performance.now() - start) / 1000;
    assert.ok(seconds < 1, `the next computation took ${seconds.toFixed(2)} s`);
    await until(() => cluster.scheduler.state.taskCount === 0, 10_000, "the chain to be forgotten");
  });
});
