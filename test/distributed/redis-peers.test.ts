// Redis workers' data listeners (issue 27, the first layer), against a real redis-server, a real
// Client and real `tsdask worker` processes: each worker registers the address peers are told
// (tcp:// on the interface that reaches Redis by default, tls:// with --tls-cert/--tls-key, the
// --contact-address when given, none with --no-listen); a peer that proves it knows its client's
// secret gets answers; a wrong secret, no handshake or no TLS gets nothing and is logged once per
// remote address; bad options are errors naming them; a stopped worker leaves nothing open.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client } from "../../src";
import { Connection } from "../../src/kernel/distributed/comm/connection";
import { parseCommAddress } from "../../src/kernel/distributed/comm/address";
import { CHALLENGE_BYTES, PeerSecret } from "../../src/kernel/distributed/comm/handshake";
import { RedisWorker } from "../../src/kernel/distributed/redis";
import { DataListener, planDataListener } from "../../src/kernel/distributed/redis/data-listener";
import { Namespace } from "../../src/kernel/distributed/redis/keys";
import { registeredWorkers } from "../../src/kernel/distributed/redis/registry";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { WorkerClock } from "../../src/kernel/distributed/worker/clock";
import { Digests } from "../../src/kernel/distributed/worker/digests";
import { PeerClient } from "../../src/kernel/distributed/worker/peers";
import { DataStore } from "../../src/kernel/distributed/worker/store";
import { TransferStats } from "../../src/kernel/distributed/worker/transfers";
import { removeOnExit } from "../helpers/children";
import { getDataWithoutHandshake } from "../helpers/net";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { TSDASK_CLI, type WorkerProcess, closeRedisTest, linesWith, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

const quiet = ["--no-profile"];

/** What a `tsdask worker` that should not start prints, and its exit code. */
function runWorkerCommand(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSDASK_CLI, "worker", ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, output: stdout + stderr });
    });
  });
}

describe("Redis workers listen for peer data", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  let clientId: string;
  let secret: PeerSecret;
  let folder: string;
  let cert: Buffer;
  const workers = new Map<string, WorkerProcess>();

  /** The data address worker `name` registered (undefined: none). */
  const registered = async (name: string): Promise<string | undefined> => {
    const entry = (await registeredWorkers(redis)).find((worker) => worker.info.name === name);
    assert.ok(entry !== undefined, `worker ${name} is not registered`);
    return entry.info.dataAddress;
  };

  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    folder = mkdtempSync(join(tmpdir(), "tsdask-peers-"));
    removeOnExit(folder);
    // A self-signed certificate for 127.0.0.1: peers trust it by taking it as their CA.
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "peer.key", "-out", "peer.crt"], {
      cwd: folder,
      stdio: "ignore",
    });
    cert = readFileSync(join(folder, "peer.crt"));
    client = await Client.connect(server.url, { name: "peers" });
    clientId = (client.scheduler.transport as RedisTransport).clientId;
    secret = new PeerSecret((await redis.get(new Namespace(clientId).peerSecret))!);
    const started = await Promise.all([
      startWorker(server.url, { name: "plain", extraArgs: quiet }),
      startWorker(server.url, { name: "tls", extraArgs: [...quiet, "--tls-cert", join(folder, "peer.crt"), "--tls-key", join(folder, "peer.key")] }),
      startWorker(server.url, { name: "unlisted", extraArgs: [...quiet, "--no-listen"] }),
      startWorker(server.url, { name: "natted", extraArgs: [...quiet, "--listen", "tcp://0.0.0.0:0", "--contact-address", "192.0.2.10:31000"] }),
    ]);
    for (const worker of started) workers.set(worker.name, worker);
  });
  after(async () => {
    await closeRedisTest(client, workers.values(), redis, server);
    rmSync(folder, { recursive: true, force: true });
  });

  test("a worker registers a reachable tcp:// address, which the client reads; a peer with the client's secret is answered", async () => {
    const address = await registered("plain");
    assert.match(address ?? "", /^tcp:\/\/127\.0\.0\.1:\d+$/, "the interface that reaches Redis, a port of its own");
    assert.deepEqual(linesWith(workers.get("plain")!.output(), "listening for peers"), [`tsdask worker plain: listening for peers at ${address}; they must know their client's secret`]);
    const transport = client.scheduler.transport as RedisTransport;
    await waitFor("the client to read the worker's data address", () => transport.registeredWorkers.some((worker) => worker.info.dataAddress === address));
    assert.equal(client.workers.get("plain")?.registration.dataAddress, address, "the scheduler's worker list has it");
    assert.equal(client.workers.get("unlisted")?.registration.dataAddress, undefined);
    const peers = new PeerClient({ credentials: { clientId, secret } });
    try {
      // A key the worker does not keep is missing, and said so.
      const fetched = await peers.getData(address!, ["('x', 0)"], "tcp://127.0.0.1:1");
      assert.deepEqual([fetched.values, fetched.missing], [{}, ["('x', 0)"]]);
    } finally {
      peers.close();
    }
  });

  test("a wrong secret, or no handshake at all, gets nothing: closed, and logged once per remote address", async () => {
    const address = parseCommAddress((await registered("plain"))!);
    assert.ok(address.scheme === "tcp");
    const wrong = new PeerSecret(PeerSecret.generate());
    for (let attempt = 0; attempt < 3; attempt++) {
      await assert.rejects(Connection.connectTo(address, { credentials: { clientId, secret: wrong } }), /the listener closed the connection during the handshake/);
    }
    const plain = workers.get("plain")!;
    await waitFor("the refusal in the worker's log", () => plain.output().includes("refused a data connection from 127.0.0.1"));
    // A LocalCluster-style get-data frame straight away, from another loopback address.
    assert.equal((await getDataWithoutHandshake(address.host, address.port, "127.0.0.2")).length, CHALLENGE_BYTES, "only the challenge came back");
    await waitFor("the second refusal in the worker's log", () => plain.output().includes("refused a data connection from 127.0.0.2"));
    assert.deepEqual(linesWith(plain.output(), "refused a data connection"), [
      "tsdask worker plain: refused a data connection from 127.0.0.1: it does not know the cluster's secret (further refusals from 127.0.0.1 are not logged)",
      "tsdask worker plain: refused a data connection from 127.0.0.2: it did not answer the handshake (further refusals from 127.0.0.2 are not logged)",
    ]);
    assert.ok(!plain.output().includes((await redis.get(new Namespace(clientId).peerSecret))!), "the secret is never printed");
  });

  test("with --tls-cert and --tls-key the worker listens at tls://: a peer that trusts the certificate is answered, others get nothing", async () => {
    const address = (await registered("tls"))!;
    assert.match(address, /^tls:\/\/127\.0\.0\.1:\d+$/);
    const peers = new PeerClient({ credentials: { clientId, secret }, tls: { ca: cert } });
    try {
      assert.deepEqual((await peers.getData(address, ["k"], "me")).missing, ["k"]);
    } finally {
      peers.close();
    }
    const untrusting = new PeerClient({ credentials: { clientId, secret } });
    await assert.rejects(untrusting.getData(address, ["k"], "me"), /Cannot reach worker tls:\/\/127\.0\.0\.1:\d+: Cannot connect to tls:\/\/127\.0\.0\.1:\d+: self[- ]signed certificate/);
    untrusting.close();
    // A peer speaking plain TCP to the TLS port: a get-data frame straight away.
    const { host, port } = parseCommAddress(address) as { host: string; port: number };
    assert.ok(!(await getDataWithoutHandshake(host, port)).includes(Buffer.from("TSDASKP1")), "it never reached the handshake");
    const tlsWorker = workers.get("tls")!;
    await waitFor("the TLS refusal in the worker's log", () => tlsWorker.output().includes("refused a data connection from 127.0.0.1: TLS failed"));
  });

  test("--contact-address is what peers are told; --no-listen registers no address and opens no listener", async () => {
    assert.equal(await registered("natted"), "tcp://192.0.2.10:31000");
    assert.match(workers.get("natted")!.output(), /listening for peers at tcp:\/\/192\.0\.2\.10:31000 \(bound to tcp:\/\/0\.0\.0\.0:\d+\)/);
    assert.equal(await registered("unlisted"), undefined);
    assert.ok(!workers.get("unlisted")!.output().includes("listening for peers"));
  });

  test("bad or contradictory options stop the worker command with an error naming the option", async () => {
    const address = parseCommAddress((await registered("plain"))!) as { host: string; port: number };
    const cases: [string[], number, RegExp][] = [
      [["--listen", "http://127.0.0.1:1"], 1, /^tsdask worker: listen \(--listen\): Not a data address: "http:\/\/127.0.0.1:1" \(expected tcp:\/\/HOST:PORT or tls:\/\/HOST:PORT\)$/m],
      [["--listen", "tls://127.0.0.1:0"], 1, /^tsdask worker: listen \(--listen\) tls:\/\/127.0.0.1:0 asks for TLS: give the listener's certificate and key \(--tls-cert, --tls-key\)$/m],
      [["--no-listen", "--contact-address", "192.0.2.1:5"], 1, /^tsdask worker: contactAddress \(--contact-address\) tells peers where the data listener is, but listen is false \(--no-listen\)$/m],
      [["--contact-address", "192.0.2.1"], 1, /^tsdask worker: contactAddress \(--contact-address\): "192.0.2.1" is not HOST:PORT/m],
      [["--listen", `tcp://127.0.0.1:${address.port}`], 1, new RegExp(`^tsdask worker: The data listener: Cannot listen on tcp://127.0.0.1:${address.port}: listen EADDRINUSE`, "m")],
      [["--tls-cert", join(folder, "peer.crt")], 2, /^tsdask: --tls-cert and --tls-key go together/m],
      [["--tls-cert", join(folder, "missing.crt"), "--tls-key", join(folder, "peer.key")], 2, /^tsdask: --tls-cert ".*missing.crt" cannot be read: ENOENT/m],
      [["--listen", "tcp://127.0.0.1:0", "--no-listen"], 2, /^tsdask: --no-listen turns the data listener off: leave out --listen$/m],
      [["--listen-on", "tcp://127.0.0.1:0"], 2, /--listen-on/],
    ];
    for (const [args, code, message] of cases) {
      const result = await runWorkerCommand([server.url, "--name", "bad", ...quiet, ...args]);
      assert.equal(result.code, code, `${args.join(" ")}:\n${result.output}`);
      assert.match(result.output, message, args.join(" "));
    }
    assert.ok(!(await registeredWorkers(redis)).some((worker) => worker.info.name === "bad"), "a worker that could not listen did not register");
    // Checked before connecting: a bad option is named even when Redis cannot be reached.
    const unreachable = await runWorkerCommand(["redis://127.0.0.1:1", "--listen", "tcp://127.0.0.1"]);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.output, /^tsdask worker: listen \(--listen\): "tcp:\/\/127.0.0.1" is not HOST:PORT/m);
  });

  test("a worker's data listener answers with the values it holds, over TLS, to a peer with the secret from Redis", async () => {
    // The listener a Redis worker runs, in this process, with a store holding a value (what a
    // worker keeps of its big results, see redis-peers-data.test.ts).
    const store = new DataStore(folder, Infinity);
    const value = Float64Array.from({ length: 250_000 }, (_, i) => Math.sqrt(i));
    store.put("('x', 0)", value, value.byteLength, "Float64Array");
    const peerTls = { cert, key: readFileSync(join(folder, "peer.key")) };
    const listener = await DataListener.start(planDataListener({ peerTls })!, { peerTls }, redis);
    const logged: string[] = [];
    const transfers = new TransferStats();
    listener.attach({ held: (id) => (id === clientId ? store : new DataStore(folder, Infinity)), digests: new Digests(), transfers, clock: new WorkerClock(), log: (line) => logged.push(line) });
    const peers = new PeerClient({ credentials: { clientId, secret }, tls: { ca: cert } });
    try {
      const fetched = await peers.getData(listener.address, ["('x', 0)"], "tls://127.0.0.1:1");
      const received = fetched.values["('x', 0)"] as Float64Array;
      assert.ok(received instanceof Float64Array);
      assert.deepEqual(Buffer.from(received.buffer, received.byteOffset, received.byteLength), Buffer.from(value.buffer));
      await waitFor("the outgoing transfer to be logged", () => transfers.outgoing.entries().length === 1);
      assert.deepEqual(logged, [`listening for peers at ${listener.address}; they must know their client's secret`]);
      // An authenticated peer that asks for something other than data is closed, and logged.
      const other = await Connection.connectTo(parseCommAddress(listener.address), { credentials: { clientId, secret }, tls: { ca: cert } });
      const closed = new Promise((resolve) => other.once("close", resolve));
      other.send({ op: "run", fn: "anything" });
      await closed;
      assert.equal(logged[1], `closed a data connection for client ${clientId}: it sent "run", not get-data or gather`);
    } finally {
      peers.close();
      await listener.close();
    }
  });

  test("a worker closed in this process leaves no listener or socket open; a stopped CLI worker exits with a peer still connected", async () => {
    const handles = (): string[] => process.getActiveResourcesInfo().filter((name) => name === "TCPServerWrap");
    // A closed server's handle goes on a later turn of the event loop: the earlier tests' listeners.
    await waitFor("the earlier tests' listeners to be gone", () => handles().length === 0);
    const worker = await RedisWorker.start({ url: server.url, name: "in-process", nthreads: 1, profile: false, log: () => {} });
    try {
      assert.equal(handles().length, 1, "its data listener");
    } finally {
      await worker.close();
    }
    await waitFor("the worker's listener to be gone", () => handles().length === 0, 10);

    const stopping = await startWorker(server.url, { name: "stopping", extraArgs: quiet });
    const peers = new PeerClient({ credentials: { clientId, secret } });
    await peers.getData((await registered("stopping"))!, ["k"], "me");
    await stopping.stop();
    assert.equal(await stopping.exited, 0, stopping.output());
    peers.close();
  });
});
