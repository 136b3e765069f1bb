// Redis workers' data plane in one process: data addresses read and refused with errors naming
// them, the HMAC handshake's state machines, the data listener's options, the worker command's
// flags, and a real TCP listener on loopback that serves get-data only to a peer that proves it
// knows its client's secret (a typed array crosses as raw bytes) and leaves no handle behind.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { inspect } from "node:util";
import { parseWorkerArgs } from "../../src/cli/worker";
import { UsageError } from "../../src/cli/install";
import { CommAddressError, formatCommAddress, parseCommAddress, parseHostPort } from "../../src/kernel/distributed/comm/address";
import { Connection } from "../../src/kernel/distributed/comm/connection";
import { type NetworkListener, listenNetwork } from "../../src/kernel/distributed/comm/listen";
import { CHALLENGE_BYTES, ListenerHandshake, PeerHandshake, PeerSecret } from "../../src/kernel/distributed/comm/handshake";
import type { GetDataRequest } from "../../src/kernel/distributed/messages";
import { planDataListener } from "../../src/kernel/distributed/redis/data-listener";
import { DataListenerOptionError } from "../../src/kernel/distributed/redis/errors";
import { WorkerClock } from "../../src/kernel/distributed/worker/clock";
import { Digests } from "../../src/kernel/distributed/worker/digests";
import { PeerClient, serveGetData } from "../../src/kernel/distributed/worker/peers";
import { DataStore } from "../../src/kernel/distributed/worker/store";
import { TransferStats } from "../../src/kernel/distributed/worker/transfers";
import { getDataWithoutHandshake } from "../helpers/net";

const SECRET = new PeerSecret(PeerSecret.generate());
const OTHER = new PeerSecret(PeerSecret.generate());
const CLIENT = "client-1";

describe("data addresses", () => {
  test("tcp://, tls:// and unix:// addresses are read and written back", () => {
    assert.deepEqual(parseCommAddress("tcp://10.0.0.5:40123"), { scheme: "tcp", host: "10.0.0.5", port: 40123 });
    assert.deepEqual(parseCommAddress("tls://[::1]:8786"), { scheme: "tls", host: "::1", port: 8786 });
    assert.deepEqual(parseCommAddress("unix:///tmp/w-0.sock"), { scheme: "unix", path: "/tmp/w-0.sock" });
    assert.deepEqual(parseCommAddress("tcp://worker-3.example:0"), { scheme: "tcp", host: "worker-3.example", port: 0 });
    for (const text of ["tcp://10.0.0.5:40123", "tls://[::1]:8786", "unix:///tmp/w-0.sock"]) assert.equal(formatCommAddress(parseCommAddress(text)), text);
  });

  test("a bad address is an error naming it and what is wrong", () => {
    const cases: [string, RegExp][] = [
      ["http://10.0.0.5:80", /Not a data address: "http:\/\/10.0.0.5:80" \(expected unix:\/\/PATH or tcp:\/\/HOST:PORT or tls:\/\/HOST:PORT\)$/],
      ["10.0.0.5:80", /Not a data address: "10.0.0.5:80"/],
      ["tcp://10.0.0.5", /"tcp:\/\/10.0.0.5" is not HOST:PORT/],
      ["tcp://:80", /"tcp:\/\/:80" names no host/],
      ["tcp://host:http", /"tcp:\/\/host:http" has port "http", not a number from 0 to 65535/],
      ["tcp://host:70000", /has port "70000"/],
      ["tcp://::1:80", /is not HOST:PORT \(an IPv6 host goes in brackets/],
      ["unix://", /"unix:\/\/" names no socket path/],
    ];
    for (const [text, message] of cases) assert.throws(() => parseCommAddress(text), (error: Error) => error instanceof CommAddressError && message.test(error.message), text);
    assert.throws(() => parseCommAddress("unix:///tmp/s", ["tcp", "tls"]), /Not a data address: "unix:\/\/\/tmp\/s" \(expected tcp:\/\/HOST:PORT or tls:\/\/HOST:PORT\)/);
    assert.deepEqual(parseHostPort("203.0.113.9:9000"), { host: "203.0.113.9", port: 9000 });
  });
});

/** Runs both sides of a handshake in memory; what each side ended with. */
function shake(peerSecret: PeerSecret, listenerSecret: PeerSecret | undefined, clientId = CLIENT): { claimed?: string; peer: string } {
  const listener = new ListenerHandshake();
  const peer = new PeerHandshake(clientId, peerSecret);
  const response = peer.receive(listener.challenge);
  assert.equal(response.kind, "send");
  const claim = listener.receive((response as { bytes: Buffer }).bytes);
  assert.equal(claim.kind, "claim");
  const { clientId: claimed, verify } = claim as { clientId: string; verify(secret: PeerSecret | undefined): Buffer | undefined };
  const accept = verify(listenerSecret);
  if (accept === undefined) return { claimed, peer: "refused" };
  return { claimed, peer: peer.receive(accept).kind };
}

describe("the handshake", () => {
  test("peer and listener that share the client's secret accept each other", () => {
    assert.deepEqual(shake(SECRET, SECRET), { claimed: CLIENT, peer: "accepted" });
  });

  test("a wrong secret, or a client the listener does not know, is refused", () => {
    assert.deepEqual(shake(OTHER, SECRET), { claimed: CLIENT, peer: "refused" });
    assert.deepEqual(shake(SECRET, undefined), { claimed: CLIENT, peer: "refused" });
  });

  test("a listener that does not know the secret is refused by the peer: it gets no request", () => {
    const listener = new ListenerHandshake();
    const peer = new PeerHandshake(CLIENT, SECRET);
    const response = peer.receive(listener.challenge) as { bytes: Buffer };
    const step = listener.receive(response.bytes) as { verify(secret: PeerSecret): Buffer | undefined };
    // The impostor signs with its own secret, which it claims is the client's.
    const forged = step.verify(OTHER);
    assert.equal(forged, undefined, "the listener refuses first: the peer's proof is not its secret's");
    assert.deepEqual(peer.receive(Buffer.alloc(32)), { kind: "fail", reason: "it does not know the cluster's secret" });
  });

  test("the secret never crosses the wire, and a recorded response is no use against a fresh challenge", () => {
    const listener = new ListenerHandshake();
    const secretText = "0123456789abcdef0123456789abcdef";
    const peer = new PeerHandshake(CLIENT, new PeerSecret(secretText));
    const response = (peer.receive(listener.challenge) as { bytes: Buffer }).bytes;
    assert.ok(!response.includes(Buffer.from(secretText)), "the response holds the secret");
    const replayed = new ListenerHandshake().receive(response) as { verify(secret: PeerSecret): Buffer | undefined };
    assert.equal(replayed.verify(new PeerSecret(secretText)), undefined);
  });

  test("bytes that are not a handshake are refused before anything is deserialised", () => {
    // A LocalCluster-style framed message straight away: 1 part of 200 bytes.
    const framed = Buffer.alloc(208);
    framed.writeUInt32LE(1, 0);
    framed.writeUInt32LE(200, 4);
    assert.deepEqual(new ListenerHandshake().receive(framed), { kind: "fail", reason: "it did not answer the handshake" });
    const listener = new ListenerHandshake();
    const response = (new PeerHandshake(CLIENT, SECRET).receive(listener.challenge) as { bytes: Buffer }).bytes;
    assert.deepEqual(listener.receive(Buffer.concat([response, Buffer.from([1, 0, 0, 0])])), { kind: "fail", reason: "it did not answer the handshake" });
    const patient = new ListenerHandshake();
    const claimed = patient.receive((new PeerHandshake(CLIENT, SECRET).receive(patient.challenge) as { bytes: Buffer }).bytes);
    assert.equal(claimed.kind, "claim");
    assert.deepEqual(patient.receive(Buffer.from([1, 0, 0, 0])), { kind: "fail", reason: "it sent data before it was accepted" });
    assert.deepEqual(new PeerHandshake(CLIENT, SECRET).receive(Buffer.alloc(CHALLENGE_BYTES)), { kind: "fail", reason: "it is not a tsdask data listener" });
    assert.throws(() => new PeerHandshake("no spaces allowed", SECRET), /Not a tsdask client id: "no spaces allowed"/);
  });

  test("a secret shows itself as hidden to inspect, JSON and string conversion", () => {
    const text = "this-is-the-cluster-secret-42";
    const secret = new PeerSecret(text);
    for (const shown of [inspect(secret, { depth: Infinity, showHidden: true }), JSON.stringify({ secret }), String(secret), `${secret}`]) {
      assert.ok(!shown.includes(text), shown);
      assert.match(shown, /PeerSecret <hidden>/);
    }
  });
});

describe("the data listener's options", () => {
  test("by default: TCP on a free port of the interface that reaches Redis (no host yet); TLS once a certificate is given", () => {
    assert.deepEqual(planDataListener({}), { bind: { scheme: "tcp", host: undefined, port: 0 }, contact: undefined });
    const peerTls = { cert: "CERT", key: "KEY" };
    assert.deepEqual(planDataListener({ peerTls })?.bind, { scheme: "tls", host: undefined, port: 0 });
    assert.deepEqual(planDataListener({ listen: "tcp://0.0.0.0:8788", contactAddress: "203.0.113.9:31000" }), {
      bind: { scheme: "tcp", host: "0.0.0.0", port: 8788 },
      contact: { host: "203.0.113.9", port: 31000 },
    });
    assert.equal(planDataListener({ listen: false }), undefined);
  });

  test("contradictions and bad addresses are errors naming the option", () => {
    const cases: [Parameters<typeof planDataListener>[0], RegExp][] = [
      [{ listen: false, contactAddress: "1.2.3.4:5" }, /^contactAddress \(--contact-address\) tells peers .* but listen is false \(--no-listen\)$/],
      [{ listen: false, peerTls: { cert: "C", key: "K" } }, /^peerTls \(--tls-cert, --tls-key\) secures the data listener, but listen is false/],
      [{ listen: "tls://127.0.0.1:0" }, /^listen \(--listen\) tls:\/\/127.0.0.1:0 asks for TLS: give the listener's certificate and key/],
      [{ listen: "tcp://127.0.0.1:0", peerTls: { cert: "C", key: "K" } }, /^listen \(--listen\) tcp:\/\/127.0.0.1:0 is plain TCP.*write tls:\/\/127.0.0.1:0$/],
      [{ listen: "unix:///tmp/s" }, /^listen \(--listen\): Not a data address: "unix:\/\/\/tmp\/s"/],
      [{ listen: "127.0.0.1:0" }, /^listen \(--listen\): Not a data address: "127.0.0.1:0"/],
      [{ contactAddress: "tcp://1.2.3.4:5" }, /^contactAddress \(--contact-address\): "tcp:\/\/1.2.3.4:5" is not HOST:PORT/],
      [{ contactAddress: "1.2.3.4:0" }, /^contactAddress \(--contact-address\) "1.2.3.4:0" needs the port peers connect to, not 0$/],
    ];
    for (const [options, message] of cases) {
      assert.throws(() => planDataListener(options), (error: Error) => error instanceof DataListenerOptionError && error instanceof TypeError && message.test(error.message), JSON.stringify(options));
    }
  });

  test("the worker command's flags: --listen, --no-listen, --contact-address, --tls-cert with --tls-key", () => {
    const url = "redis://127.0.0.1:6379";
    assert.equal(parseWorkerArgs([url]).listen, undefined);
    assert.equal(parseWorkerArgs([url, "--no-listen"]).listen, false);
    const parsed = parseWorkerArgs([url, "--listen", "tls://0.0.0.0:0", "--contact-address", "h:1", "--tls-cert", "c.pem", "--tls-key", "k.pem"]);
    assert.deepEqual([parsed.listen, parsed.contactAddress, parsed.tlsCert, parsed.tlsKey], ["tls://0.0.0.0:0", "h:1", "c.pem", "k.pem"]);
    const usage = (args: string[], message: RegExp): void => assert.throws(() => parseWorkerArgs([url, ...args]), (error: Error) => error instanceof UsageError && message.test(error.message), args.join(" "));
    usage(["--no-listen", "--listen", "tcp://127.0.0.1:0"], /--no-listen turns the data listener off: leave out --listen/);
    usage(["--tls-cert", "c.pem"], /--tls-cert and --tls-key go together/);
    usage(["--tls-key", "k.pem"], /--tls-cert and --tls-key go together/);
    usage(["--listen"], /--listen/);
    usage(["--listen-on", "tcp://h:1"], /--listen-on/);
  });
});

describe("a data listener on loopback TCP", () => {
  let folder: string;
  let store: DataStore;
  let listener: NetworkListener;
  const refusals: [string, string][] = [];
  const clientIds: string[] = [];
  const VALUE = Float64Array.from({ length: 100_000 }, (_, i) => i * 0.5);

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), "tsdask-peer-comm-"));
    store = new DataStore(folder, Infinity);
    store.put("x", VALUE, VALUE.byteLength, "Float64Array");
    const context = { store, digests: new Digests(), transfers: new TransferStats(), clock: new WorkerClock() };
    listener = await listenNetwork(
      { scheme: "tcp", host: "127.0.0.1", port: 0 },
      {
        secretOf: async (clientId) => (clientId === CLIENT ? SECRET : undefined),
        onConnection: (connection, clientId) => {
          clientIds.push(clientId);
          connection.setKeepsAlive(false);
          connection.on("message", (request) => serveGetData(request as GetDataRequest, connection, context));
        },
        onRejected: (remote, reason) => refusals.push([remote, reason]),
        handshakeTimeout: 30,
      },
    );
  });
  after(async () => {
    await listener.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test("a peer with its client's secret gets the value; its bytes arrive as they were", async () => {
    assert.notEqual(listener.address.port, 0);
    const peers = new PeerClient({ credentials: { clientId: CLIENT, secret: SECRET } });
    try {
      const fetched = await peers.getData(formatCommAddress(listener.address), ["x", "y"], "tcp://127.0.0.1:1");
      assert.deepEqual(fetched.missing, ["y"]);
      const value = fetched.values.x as Float64Array;
      assert.ok(value instanceof Float64Array);
      assert.deepEqual(Buffer.from(value.buffer, value.byteOffset, value.byteLength), Buffer.from(VALUE.buffer));
      assert.ok(fetched.wireBytes > VALUE.byteLength);
      assert.deepEqual(clientIds, [CLIENT]);
    } finally {
      peers.close();
    }
  });

  test("a peer that takes requests and answers nothing (frozen) fails them after the client's timeout, naming it; a connection idle between requests stays open", async () => {
    const context = { store, digests: new Digests(), transfers: new TransferStats(), clock: new WorkerClock() };
    let connections = 0;
    // Answers requests for x; any other it leaves unanswered, as a frozen process would.
    const silent = await listenNetwork(
      { scheme: "tcp", host: "127.0.0.1", port: 0 },
      {
        secretOf: async (clientId) => (clientId === CLIENT ? SECRET : undefined),
        onConnection: (connection) => {
          connections++;
          connection.setKeepsAlive(false);
          connection.on("message", (request) => {
            if ((request as GetDataRequest).keys[0] === "x") serveGetData(request as GetDataRequest, connection, context);
          });
        },
        onRejected: () => {},
        handshakeTimeout: 30,
      },
    );
    const address = formatCommAddress(silent.address);
    const peers = new PeerClient({ credentials: { clientId: CLIENT, secret: SECRET }, timeout: 0.3 });
    try {
      assert.deepEqual((await peers.getData(address, ["x"], "me")).missing, []);
      // Idle for longer than the timeout, with no request waiting: the pooled connection stays.
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.deepEqual((await peers.getData(address, ["x"], "me")).missing, []);
      assert.equal(connections, 1);
      await assert.rejects(peers.getData(address, ["frozen"], "me"), new RegExp(`^Error: The connection to worker ${address} closed \\(nothing sent or received for 0\\.3 s\\)$`));
    } finally {
      peers.close();
      await silent.close();
    }
  });

  test("a wrong secret or an unknown client gets nothing: refused, named with the remote address", async () => {
    for (const [credentials, reason] of [
      [{ clientId: CLIENT, secret: OTHER }, "it does not know the cluster's secret"],
      [{ clientId: "nobody", secret: SECRET }, "it named client nobody, which is not registered"],
    ] as const) {
      refusals.length = 0;
      await assert.rejects(
        Connection.connectTo(listener.address, { credentials }),
        /^Error: Cannot connect to tcp:\/\/127.0.0.1:\d+: the listener closed the connection during the handshake \(does this peer know the cluster's secret\?\)$/,
      );
      await waitUntil(() => refusals.length > 0);
      assert.deepEqual(refusals, [["127.0.0.1", reason]]);
    }
  });

  test("a peer that skips the handshake and sends a get-data frame gets the challenge and nothing else", async () => {
    refusals.length = 0;
    assert.equal((await getDataWithoutHandshake("127.0.0.1", listener.address.port)).length, CHALLENGE_BYTES);
    await waitUntil(() => refusals.length > 0);
    assert.deepEqual(refusals, [["127.0.0.1", "it did not answer the handshake"]]);
  });

  test("connecting to a network listener without credentials is an error naming the address", async () => {
    await assert.rejects(Connection.connectTo(listener.address), /^Error: Cannot connect to tcp:\/\/127.0.0.1:\d+: a network data listener wants a client's credentials/);
  });

  test("closed, the listener leaves no server or socket handle open, its accepted connections closed too", async () => {
    const handles = (): string[] => process.getActiveResourcesInfo().filter((name) => name.startsWith("TCP"));
    const baseline = handles();
    const other = await listenNetwork({ scheme: "tcp", host: "127.0.0.1", port: 0 }, { secretOf: async () => SECRET, onConnection: () => {}, onRejected: () => {} });
    const connection = await Connection.connectTo(other.address, { credentials: { clientId: CLIENT, secret: SECRET } });
    const closed = new Promise((resolve) => connection.once("close", resolve));
    assert.ok(handles().length >= baseline.length + 3, `server, and both ends of the connection: ${handles()}`);
    await other.close();
    await closed;
    await waitUntil(() => handles().length === baseline.length);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
