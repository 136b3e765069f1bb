// Workers on other "machines": redis-server and two workers each in a network namespace of their
// own, on a private bridge the test makes; the Client reaches them through its own interface. The
// inputs and results really cross network interfaces (their byte counters say so), and the
// results equal the local scheduler's. Each worker's data listener is on its own interface, where
// a peer on another host reaches it, and the seeds' QR example runs with its blocks crossing the
// veth pairs from worker to worker. Where namespaces cannot be made, the test says why.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client, get } from "../../src";
import * as da from "../../src/kernel/collections/array";
import { PeerSecret } from "../../src/kernel/distributed/comm/handshake";
import { Namespace } from "../../src/kernel/distributed/redis/keys";
import { registeredWorkers } from "../../src/kernel/distributed/redis/registry";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { PeerClient } from "../../src/kernel/distributed/worker/peers";
import { ramp, total } from "../fixtures/cluster-tasks";
import { describeWorker } from "../fixtures/redis-tasks";
import { add } from "../fixtures/tasks";
import { type PrivateNetwork, createNetwork, namespacesUnavailable } from "../helpers/netns";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { type WorkerProcess, startWorker } from "../helpers/redis-workers";

// The skip reason (no `ip`, no CAP_NET_ADMIN) is printed with the skipped suite.
const unavailable = namespacesUnavailable();

describe("a Redis cluster across network namespaces", { skip: unavailable }, () => {
  let network: PrivateNetwork;
  let server: RedisServer;
  const workers: WorkerProcess[] = [];
  before(async () => {
    network = createNetwork(["redis", "alpha", "beta"]);
    server = await startRedisServer({ netns: network.namespace("redis"), host: network.address("redis"), port: 6379, password: "netpw" });
    for (const name of ["alpha", "beta"]) workers.push(await startWorker(server.url, { name, nthreads: 1, netns: network.namespace(name) }));
  });
  after(async () => {
    try {
      await Promise.all(workers.map((worker) => worker.stop()));
      await server?.stop();
    } finally {
      network?.destroy();
    }
  });

  test("inputs and results cross the network; results equal the local scheduler's", async () => {
    assert.match(server.url, new RegExp(`^redis://:netpw@${network.address("redis").replace(/\./g, "\\.")}:6379$`));
    const before = { alpha: network.counters("alpha"), beta: network.counters("beta"), redis: network.counters("redis") };
    // Every result through Redis, whatever its size: the data crosses the veth pairs to the Redis host.
    const client = await Client.connect(server.url, { holdAbove: 2 ** 40 });
    try {
      const graph: Record<string, unknown> = {};
      const parts: string[] = [];
      for (let i = 0; i < 8; i++) {
        graph[`block-${i}`] = [ramp, 250_000, i, false]; // 2 MB each, made on a worker
        graph[`sum-${i}`] = [total, `block-${i}`]; // read back by a worker
        parts.push(`sum-${i}`);
      }
      graph.sum = [add, ...parts.slice(0, 2)];
      const keys = [parts, "sum", "block-3"];
      const expected = await get(graph, keys, { scheduler: "sync" });
      assert.deepEqual(await get(graph, keys), expected);
      const hosts = new Set(client.scheduler.getTaskStream().map((record) => record.worker));
      assert.deepEqual(hosts, new Set(["alpha", "beta"]), "both hosts ran tasks");
      const alphaSent = network.counters("alpha").sent - before.alpha.sent;
      const betaSent = network.counters("beta").sent - before.beta.sent;
      const alphaReceived = network.counters("alpha").received - before.alpha.received;
      const betaReceived = network.counters("beta").received - before.beta.received;
      const redisReceived = network.counters("redis").received - before.redis.received;
      // 8 blocks of 2 MB were written by the workers and read again by them; the client read one.
      assert.ok(alphaSent + betaSent > 16e6, `workers sent ${alphaSent + betaSent} bytes`);
      assert.ok(alphaReceived + betaReceived > 16e6, `workers received ${alphaReceived + betaReceived} bytes`);
      assert.ok(redisReceived > 16e6, `redis received ${redisReceived} bytes`);
    } finally {
      await client.close();
    }
    const check = new Redis(server.url);
    try {
      assert.deepEqual((await check.keys("*")).filter((key) => !key.startsWith("tsdask:worker")), [], "only the workers' registrations are left");
    } finally {
      check.disconnect();
    }
  });

  test("each worker listens for peer data on the interface that reaches Redis; a peer on another host is answered", async () => {
    const client = await Client.connect(server.url);
    const redis = new Redis(server.url);
    const clientId = (client.scheduler.transport as RedisTransport).clientId;
    const peers = new PeerClient({ credentials: { clientId, secret: new PeerSecret((await redis.get(new Namespace(clientId).peerSecret))!) } });
    try {
      const registered = await registeredWorkers(redis);
      for (const name of ["alpha", "beta"]) {
        const address = registered.find((worker) => worker.info.name === name)?.info.dataAddress;
        assert.match(address ?? "", new RegExp(`^tcp://${network.address(name).replace(/\./g, "\\.")}:\\d+$`), `${name}'s data address`);
        // From this process, on the host side of the bridge.
        assert.deepEqual((await peers.getData(address!, ["k"], "tcp://192.0.2.1:1")).missing, ["k"]);
      }
    } finally {
      peers.close();
      redis.disconnect();
      await client.close();
    }
  });

  test("the seeds' QR example with big values kept by their workers: blocks cross the veth pairs from peer to peer; q·r equals the local scheduler's", async () => {
    // The seeds' example (bench/redis-data.ts) at 4000×1000: four 8 MB blocks, far above the
    // default --hold-above, so every block stays with its worker and its consumers fetch it there.
    const a = da.random.random([4000, 1000], { chunks: [1000, 1000], seed: 7 });
    const [q, r] = da.linalg.qr(a);
    const expected = await q.dot(r).compute({ scheduler: "sync" });
    const before = { alpha: network.counters("alpha"), beta: network.counters("beta") };
    const client = await Client.connect(server.url);
    try {
      const product = await q.dot(r).compute({ scheduler: client });
      assert.deepEqual(product.shape, [4000, 1000]);
      let worst = 0;
      for (let i = 0; i < expected.data.length; i++) worst = Math.max(worst, Math.abs(product.data[i] - expected.data[i]));
      assert.ok(worst < 1e-9, `q·r differs from the local scheduler's by up to ${worst}`);
      const seen = await client.run(describeWorker);
      const fromPeers = Object.values(seen).flatMap((worker) => worker.incoming.filter((transfer) => transfer.who === (worker.name === "alpha" ? "beta" : "alpha")).map((transfer) => ({ ...transfer, to: worker.name })));
      const peerBytes = fromPeers.reduce((sum, transfer) => sum + transfer.total, 0);
      assert.ok(peerBytes >= 8e6, `the workers fetched ${peerBytes} bytes from each other: ${JSON.stringify(seen)}`);
      // What came from a peer crossed both hosts' interfaces (plus the other traffic).
      const alphaSent = network.counters("alpha").sent - before.alpha.sent;
      const betaSent = network.counters("beta").sent - before.beta.sent;
      const sentToPeer = (name: string): number => fromPeers.filter((transfer) => transfer.who === name).reduce((sum, transfer) => sum + transfer.total, 0);
      assert.ok(alphaSent >= sentToPeer("alpha") && betaSent >= sentToPeer("beta"), `alpha sent ${alphaSent}, beta ${betaSent} bytes`);
    } finally {
      await client.close();
    }
  });
});
