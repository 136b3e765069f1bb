// Seed 004's first form on a real LocalCluster: a function wrapped by contextMeter.meter(label),
// or decorated with it, defined where the user types it (so it travels as source, as a notebook
// cell's would), computes on a worker and its time shows under the label; tasks reach
// contextMeter as a global, and a worker's profile keeps Node's module loader out.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, LocalCluster, type MetricRecord, now } from "../../src";
import type { ProfileNode } from "../../src/protocol/records";

/** Seconds the cluster's fine performance metrics hold under `activity` for the function `prefix`. */
function secondsUnder(records: readonly MetricRecord[], prefix: string, activity: string): number {
  return records.filter((r) => r.prefix === prefix && r.activity === activity && r.unit === "seconds").reduce((total, r) => total + r.value, 0);
}

/** Every file name in the tree. */
function filenames(node: ProfileNode, into = new Set<string>()): Set<string> {
  into.add(node.description.filename);
  for (const child of Object.values(node.children)) filenames(child, into);
  return into;
}

class Reader {
  // The decorator form of seed 004 (TypeScript 5 decorators); no `this`, so it can travel.
  @contextMeter.meter("disk")
  static async readFiles(ms: number): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `read for ${ms} ms`;
  }
}

describe("contextMeter.meter on a LocalCluster", () => {
  let cluster: LocalCluster;
  let client: Client;

  before(async () => {
    cluster = await LocalCluster.start({ nWorkers: 1, threadsPerWorker: 1, name: "cluster-metered", dashboardAddress: null });
    client = await Client.connect(cluster);
  });

  after(async () => {
    await client?.close();
    await cluster?.close();
  });

  test("a function wrapped by meter(label) computes on a worker, its time under the label", async () => {
    const readSome = contextMeter.meter("I/O")(async (ms: number) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return ms * 2;
    });
    assert.equal(await client.submit(readSome, 300).result(), 600);
    const metrics = await client.metrics();
    const prefixes = [...new Set(metrics.filter((r) => r.activity === "I/O").map((r) => r.prefix))];
    assert.equal(prefixes.length, 1, `one function metered "I/O": ${prefixes.join(", ")}`);
    const io = secondsUnder(metrics, prefixes[0]!, "I/O");
    assert.ok(io >= 0.29 && io < 2, `I/O: ${io} s for a 300 ms read`);
  });

  test("the decorator form computes on a worker, its time under the label, its key named after the method", async () => {
    assert.equal(await client.submit(Reader.readFiles, 200).result(), "read for 200 ms");
    const disk = secondsUnder(await client.metrics(), "readFiles", "disk");
    assert.ok(disk >= 0.19 && disk < 2, `disk: ${disk} s for a 200 ms read`);
  });

  test("a wrapped function that cannot travel is refused naming what it wraps", () => {
    const outside = 5;
    const wrapped = contextMeter.meter("I/O")(() => outside);
    assert.throws(() => client.submit(wrapped), /wraps \(with contextMeter\.meter\("I\/O"\)\) \(anonymous\), and it uses "outside"/);
  });

  test("a task uses the global contextMeter; its profile has no Node module-loader frames", async () => {
    const t0 = now();
    const digested = await client
      .submit(function requireAndDigest(ms: number) {
        // Each require goes through Node's module loader (cached or not): its frames are sampled.
        const end = Date.now() + ms;
        let calls = 0;
        while (Date.now() < end) {
          require("./package.json");
          contextMeter.digestMetric("requires", 1, "count");
          calls++;
        }
        return calls;
      }, 400)
      .result();
    const t1 = now();
    const counted = (await client.metrics()).filter((r) => r.prefix === "requireAndDigest" && r.activity === "requires").reduce((n, r) => n + r.value, 0);
    assert.equal(counted, digested, "every digest reached the cluster's metrics");
    const profile = await client.profile({ key: "requireAndDigest", start: t0, stop: t1 + 1 });
    assert.ok(profile.count >= 10, `${profile.count} samples`);
    const loader = [...filenames(profile)].filter((file) => file.startsWith("node:internal/modules"));
    assert.deepEqual(loader, [], "no frame of Node's module loader");
  });
});
