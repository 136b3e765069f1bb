// Dask's own diagnostics tests (distributed/diagnostics/tests/test_task_stream.py and
// test_memory_sampler.py) with Dask's inputs and expected values, and the performance report's
// Worker Logs tab, on a real LocalCluster (forked workers, Unix sockets).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, type Future, LocalCluster, MemorySampler, get, getTaskStream, now, performanceReport } from "../../src";
import type { WorkerLogLine } from "../../src/protocol/records";
import { inc, ramp, throwMine } from "../fixtures/cluster-tasks";
import { waitFor } from "../helpers/wait";

const dir = mkdtempSync(join(tmpdir(), "tsdask-dask-diagnostics-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const EVIL = "<img src=x onerror=globalThis.__xss=1>";
/** Python's range(start, stop), or range(stop). */
const range = (start: number, stop?: number): number[] => (stop === undefined ? range(0, start) : Array.from({ length: stop - start }, (_, i) => start + i));
const pause = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

describe("Dask's diagnostics tests on a LocalCluster of 2 workers × 1 thread", () => {
  let cluster: LocalCluster;
  let client: Client;

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, memoryLimit: "1 GiB", dashboardAddress: null, name: "dask-diagnostics" });
    client = await Client.connect(cluster);
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  /** Releases `futures` and waits until the scheduler counts no managed memory (Dask's fresh gen_cluster). */
  async function releaseAll(futures: readonly Future<unknown>[]): Promise<void> {
    for (const future of futures) future.release();
    await waitFor("the cluster to hold no results", () => cluster.scheduler.memory().managed === 0, 15);
  }

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_client (first: a fresh scheduler)
  test("test_client: client.getTaskStream() gives the 10 records of map(inc, range(10)), keyed as the futures", async () => {
    assert.deepEqual(await client.getTaskStream(), []);
    const futures = client.map(inc, range(10));
    await client.gather(futures);
    const data = await client.getTaskStream();
    assert.equal(data.length, 10);
    // Dask's records carry the key itself: a string key equals the Future's.
    assert.deepEqual(new Set(data.map((record) => record.key)), new Set(futures.map((future) => future.key)));
    assert.ok(futures.every((future) => data.some((record) => record.key === future.key)));
    await releaseAll(futures);
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_client_ctx
  test("test_client_ctx: getTaskStream(block) records the block's 10 tasks", async () => {
    const ts = await getTaskStream(async () => {
      const futures = client.map(inc, range(10, 20));
      await client.gather(futures);
      return futures;
    });
    assert.equal(ts.data.length, 10);
    await releaseAll(ts.result);
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_collect (on the cluster: Dask's
  // relative times and counts against the scheduler's own ring)
  test("test_collect: start, relative start, count, stop with count, start with count", async () => {
    // Workers' times reach us through an estimated clock offset (on a loaded machine, tens of ms
    // off soon after start): gaps keep the previous test's last tasks from looking as if they
    // ended after `start`, and this test's first from looking as if it started before it.
    await pause(0.1);
    const start = now();
    await pause(0.1);
    const futures = client.map(inc, range(100, 110));
    await client.gather(futures);
    const all = await client.getTaskStream({ start });
    assert.equal(all.length, 10);
    const lastTwenty = await client.getTaskStream({ start: "20 s" });
    assert.ok(all.every((record) => lastTwenty.some((r) => r.key === record.key)), "the last 20 s hold this test's 10");
    const recent = (await client.getTaskStream({ start: "500ms" })).length;
    assert.ok(recent > 0 && recent <= 30, `${recent} records in the last 500 ms`);
    const three = await client.getTaskStream({ count: 3 });
    assert.deepEqual(three, all.slice(-3));
    assert.deepEqual(await client.getTaskStream({ stop: start + 100, count: 3 }), three);
    assert.deepEqual(await client.getTaskStream({ start, count: 3 }), all.slice(0, 3));
    await releaseAll(futures);
  });

  // Port of distributed/diagnostics/tests/test_task_stream.py::test_get_task_stream_plot and
  // ::test_get_task_stream_save
  test("test_get_task_stream_plot / _save: the 10 records and the plot, saved with the prefix in it", async () => {
    const from = cluster.scheduler.taskStream.index;
    const futures = client.map(inc, range(200, 210));
    await client.gather(futures);
    const plotted = await client.getTaskStream({ startIndex: from, plot: true, filename: join(dir, "plot.html") });
    assert.equal(plotted.data.length, 10);
    assert.ok(plotted.figure !== undefined);
    const file = join(dir, "foo.html");
    const saved = await client.getTaskStream({ startIndex: from, plot: "save", filename: file });
    assert.equal(saved.data.length, 10);
    const html = readFileSync(file, "utf8");
    assert.ok(html.includes("inc"));
    await releaseAll(futures);
  });

  // Port of the some_sample fixture of distributed/diagnostics/tests/test_memory_sampler.py
  // (and test_sync, its synchronous twin): a result that lands and is released inside a 0.2 s
  // block shows in "managed" at once, not at the next heartbeat.
  test("some_sample / test_sync: managed memory of a result held 0.1 s, sampled every 1 ms", async () => {
    const ms = new MemorySampler();
    await ms.sample(
      "foo",
      async () => {
        const f = client.submit(inc, 0);
        await f.result();
        await pause(0.1);
        f.release();
        await pause(0.1);
      },
      { measure: "managed", interval: 0.001 },
    );
    const samples = ms.samples.get("foo")!;
    assert.equal(samples[0][1], 0);
    assert.ok(samples.reduce((sum, [, bytes]) => sum + bytes, 0) > 0, `some sample counts the result: ${[...new Set(samples.map(([, b]) => b))]}`);
  });

  // Port of distributed/diagnostics/tests/test_memory_sampler.py::test_at_least_one_sample
  test("test_at_least_one_sample: the first sample is taken at once; the label may be left out", async () => {
    const ms = new MemorySampler();
    await ms.sample(undefined, () => undefined);
    assert.equal([...ms.samples.values()][0].length, 1);
  });

  // Port of distributed/diagnostics/tests/test_memory_sampler.py::test_multi_sample
  // (Dask mocks the worker's process memory to 20 MiB; a real worker's is what it is, so only
  // "managed" is compared with Dask's exact value).
  test("test_multi_sample: two series at once; managed ends at the 100 KiB payload exactly", async () => {
    const ms = new MemorySampler();
    const expectedManaged = 100 * 1024;
    let payload: Future<Float64Array> | undefined;
    await ms.sample(
      "managed",
      () =>
        ms.sample(
          "process",
          async () => {
            payload = client.submit(ramp, expectedManaged / 8, 0, false);
            await payload.result();
            await pause(0.01);
          },
          { interval: 0.001 },
        ),
      { measure: "managed", interval: 0.001 },
    );
    const m = ms.samples.get("managed")!;
    const p = ms.samples.get("process")!;
    assert.ok(m.length >= 2);
    assert.equal(m[0][1], 0);
    assert.equal(m[m.length - 1][1], expectedManaged);
    assert.ok(p.length >= 2);
    assert.ok(p.every(([, bytes]) => bytes > 0), "the workers' real process memory");
    await releaseAll([payload!]);
  });

  // Port of distributed/diagnostics/tests/test_memory_sampler.py::test_pandas_multiseries (the
  // series; to_pandas has no TypeScript twin)
  test("test_pandas_multiseries: each series starts at 0 and ends with the result counted", async () => {
    const ms = new MemorySampler();
    for (const [label, interval, finalSleep] of [["foo", 0.001, 0.2], ["bar", 0.002, 0.01]] as const) {
      let x: Future<number> | undefined;
      await ms.sample(
        label,
        async () => {
          x = client.submit(inc, 1);
          await x.result();
          await pause(finalSleep);
        },
        { measure: "managed", interval },
      );
      await releaseAll([x!]);
    }
    for (const label of ["foo", "bar"]) {
      const samples = ms.samples.get(label)!;
      assert.equal(samples[0][1], 0, label);
      assert.ok(samples[samples.length - 1][1] > 0, label);
    }
  });

  test("performanceReport's Worker Logs tab: each worker's recent lines, hostile text kept as text", async () => {
    const file = join(dir, "dask-report.html");
    const report = await performanceReport({ filename: file }, async () => {
      // The key and the error's message are the user's text, markup included.
      await assert.rejects(get({ [EVIL]: [throwMine, `boom ${EVIL}`] }, EVIL), /boom <img/);
    });
    const logs = report.data.workerLogs;
    assert.equal(logs.note, undefined);
    assert.deepEqual(logs.data!.map((worker) => worker.name).sort(), ["worker-0", "worker-1"]);
    for (const worker of logs.data!) {
      assert.ok(worker.lines.some((line) => line.level === "INFO" && line.message === `Start worker at: ${worker.address}`), `${worker.name}: ${JSON.stringify(worker.lines)}`);
    }
    const failed = logs.data!.flatMap((worker) => worker.lines).filter((line) => line.message.startsWith("Compute Failed"));
    assert.equal(failed.length, 1);
    assert.equal(failed[0].level, "WARNING");
    assert.ok(failed[0].message.startsWith(`Compute Failed\nKey: ${EVIL}\nException: `) && failed[0].message.endsWith(`Error: boom ${EVIL}`), failed[0].message);
    // The page carries the lines as data (escaped), never as markup.
    const html = readFileSync(file, "utf8");
    assert.ok(existsSync(file));
    assert.ok(!html.includes(EVIL), "no raw markup from a log line in the page");
    assert.ok(html.includes("Compute Failed\\nKey: \\u003cimg src=x onerror=globalThis.__xss=1>"));
    // The same lines through client.run, as Dask's get_worker_logs gives them.
    const viaRun = (await client.run((worker) => worker.logs)) as Record<string, WorkerLogLine[]>;
    assert.deepEqual(Object.keys(viaRun).sort(), [...cluster.workers.keys()].sort());
    assert.ok(Object.values(viaRun).flat().some((line) => line.message.startsWith("Compute Failed")));
  });
});
