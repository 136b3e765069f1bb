// Redis passwords never shown, against a real redis-server with requirepass and real CLI workers:
// not by a wrong password's error (message, util.inspect, stack, Node's output for an uncaught
// error), not by malformed addresses, not by a worker's command line, log or views, not by a
// client's card, views or notices. Workers read the password from TSDASK_REDIS_PASSWORD or
// --password-file; the Client from TSDASK_REDIS_PASSWORD. And connectTimeout is in seconds.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { inspect } from "node:util";
import { Client, get } from "../../src";
import { clusterFeed } from "../../src/kernel/distributed/dashboard/feed";
import { RedisWorker, parseRedisUrl } from "../../src/kernel/distributed/redis";
import { RedisAddressError, RedisConnectError } from "../../src/kernel/distributed/redis/errors";
import { environmentVariable, inc, passwordVariable, slowly } from "../fixtures/redis-tasks";
import { removeOnExit } from "../helpers/children";
import { type SilentServer, startSilentServer } from "../helpers/net";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { TSDASK_CLI, type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor } from "../helpers/wait";

const PASSWORD = "Tr0ub4dor-SECRET-xyzzy";
const WRONG = "Wr0ng-SECRET-plugh";
const SRC_INDEX = join(__dirname, "../../src/index.js");

/** Everything a value shows of itself: util.inspect to any depth, with its getters' values. */
const everything = (value: unknown): string => inspect(value, { depth: Infinity, getters: true });

const assertHidden = (text: string, what: string, secret = PASSWORD): void => {
  assert.ok(!text.includes(secret), `${what} shows the password:\n${text}`);
  assert.ok(!text.includes("SECRET"), `${what} shows part of the password:\n${text}`);
};

/** What a `node` child prints, and its exit code. */
function runNode(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env: { ...process.env, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, output: stdout + stderr });
    });
  });
}

const commandLineOf = (pid: number): string => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");

describe("Redis passwords are never shown", () => {
  let server: RedisServer;
  /** The server's address without its password. */
  let address: string;
  let folder: string;
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer({ password: PASSWORD });
    address = `redis://127.0.0.1:${server.port}`;
    folder = mkdtempSync(join(tmpdir(), "tsdask-secrets-"));
    removeOnExit(folder);
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  test("a wrong password: the error's message, inspection, stack and cause name the host, not the password", async () => {
    const url = `redis://:${WRONG}@127.0.0.1:${server.port}`;
    const error = await Client.connect(url).then(
      () => assert.fail("connected with a wrong password"),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof RedisConnectError, String(error));
    assert.equal(error.message, `Cannot connect to Redis at ${address}: wrong user name or password`);
    for (const [what, text] of [
      ["the message", error.message],
      ["util.inspect", everything(error)],
      ["the stack", String(error.stack)],
      ["JSON", JSON.stringify(error)],
      ["the cause", everything(error.cause)],
    ] as const) {
      assertHidden(text, what, WRONG);
    }
  });

  test("a wrong password, uncaught in a node process: what Node prints has no password", async () => {
    const { code, output } = await runNode(["-e", `require(${JSON.stringify(SRC_INDEX)}).Client.connect(process.argv[1]);`, `redis://:${WRONG}@127.0.0.1:${server.port}`]);
    assert.equal(code, 1, output);
    assert.match(output, /RedisConnectError: Cannot connect to Redis at redis:\/\/127\.0\.0\.1:\d+: wrong user name or password/);
    assertHidden(output, "Node's output", WRONG);
  });

  test("malformed addresses: errors say what is wrong without the password", async () => {
    const cases: [string, RegExp][] = [
      [`http://:${PASSWORD}@127.0.0.1:${server.port}`, /the scheme must be redis:\/\/ or rediss:\/\//],
      [`redis://:${PASSWORD}@`, /names no host/],
      [`redis://:${PASSWORD}@:6379`, /names no host/],
      [`redis:/:${PASSWORD}@host`, /names no host/],
      [`redis://:${PASSWORD}@host:99999`, /port "99999" is not a number from 1 to 65535/],
      [`redis//:${PASSWORD}@@host`, /does not start with redis:\/\/ or rediss:\/\//],
      [`redis://:${PASSWORD}/x#y@host`, /must be percent-encoded/],
      [`redis://:${PASSWORD}@host/zero`, /"zero" where a database number belongs/],
      [`redis://:${PASSWORD}%zz@host`, /a user name or password with a stray "%" \(write it as %25\)/],
    ];
    for (const [url, reason] of cases) {
      assert.throws(
        () => parseRedisUrl(url),
        (error: Error) => {
          assert.ok(error instanceof RedisAddressError, `${url}: ${error}`);
          assert.match(error.message, reason);
          assertHidden(everything(error), `the error for ${url}`);
          return true;
        },
      );
    }
    await assert.rejects(Client.connect(cases[1][0]), (error: Error) => {
      assert.match(error.message, /^Not a Redis address: "redis:\/\/\*\*\*@" \(it names no host;/);
      assertHidden(everything(error), "Client.connect's error");
      return true;
    });
    const { code, output } = await runNode([TSDASK_CLI, "worker", cases[0][0]]);
    assert.equal(code, 1, output);
    assert.equal(output, `tsdask worker: Not a Redis address: "http://***@127.0.0.1:${server.port}" (the scheme must be redis:// or rediss://)\n`);
  });

  test("a parsed address shows no password: util.inspect, JSON, string", () => {
    const target = parseRedisUrl(`redis://alice:${PASSWORD}@127.0.0.1:${server.port}/3`);
    assert.equal(String(target), `redis://127.0.0.1:${server.port}/3`);
    assert.equal(JSON.stringify({ target }), `{"target":"redis://127.0.0.1:${server.port}/3"}`);
    assertHidden(everything(target), "util.inspect of a target");
  });

  test("workers given the password by TSDASK_REDIS_PASSWORD and by --password-file connect and compute; nothing shows it", async () => {
    const passwordFile = join(folder, "redis-password");
    writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
    workers.push(await startWorker(address, { name: "from-env", env: { TSDASK_REDIS_PASSWORD: PASSWORD } }));
    workers.push(await startWorker(address, { name: "from-file", extraArgs: ["--password-file", passwordFile], env: { TSDASK_REDIS_PASSWORD: "" } }));
    const previous = process.env.TSDASK_REDIS_PASSWORD;
    process.env.TSDASK_REDIS_PASSWORD = PASSWORD;
    let client: Client;
    try {
      client = await Client.connect(address, { name: "secrets" });
    } finally {
      if (previous === undefined) delete process.env.TSDASK_REDIS_PASSWORD;
      else process.env.TSDASK_REDIS_PASSWORD = previous;
    }
    try {
      await waitFor("both workers to join", () => client.workers.size === 2);
      // Tasks long enough that each worker's one thread takes some.
      const results = await client.gather(Array.from({ length: 6 }, (_, i) => client.submit(slowly, 300, i)));
      assert.deepEqual(results, [0, 1, 2, 3, 4, 5]);
      const ran = new Set(client.scheduler.getTaskStream().map((record) => record.worker));
      assert.deepEqual([...ran].sort(), ["from-env", "from-file"], "both workers computed");
      // The worker removed the variable before starting its threads: tasks and client.run see none.
      assert.deepEqual(await client.run(passwordVariable), { "from-env": null, "from-file": null });
      const seen = await client.gather(client.map(environmentVariable, Array(4).fill("TSDASK_REDIS_PASSWORD")));
      assert.deepEqual(seen, [null, null, null, null]);
      for (const worker of workers) {
        assertHidden(commandLineOf(worker.pid), `${worker.name}'s command line`);
        assertHidden(worker.output(), `${worker.name}'s log`);
        assert.match(worker.output(), new RegExp(`serving ${address.replaceAll(".", "\\.")} with 1 thread`));
      }
      const transport = client.scheduler.transport;
      for (const [what, text] of [
        ["the client's repr", String(client)],
        ["util.inspect of the client", inspect(client)],
        ["the client's description", client.description],
        ["the cluster's card", JSON.stringify((client.cluster as { summary(): unknown }).summary())],
        ["the dashboard's sections", JSON.stringify(clusterFeed(client.cluster).sections())],
        ["util.inspect of the transport", everything(transport)],
      ] as const) {
        assertHidden(text, what);
      }
      // They do name the server, by its address without the password.
      assert.match(client.description, new RegExp(address.replaceAll(".", "\\.")));
      assert.match(JSON.stringify(clusterFeed(client.cluster).sections()), new RegExp(address.replaceAll(".", "\\.")));
    } finally {
      await client.close();
    }
  });

  test("the notice that no worker is connected says how to start one, without the password", async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    const only = await startWorker(address, { name: "only", env: { TSDASK_REDIS_PASSWORD: PASSWORD } });
    workers.push(only);
    const client = await Client.connect(server.url, { noWorkersTimeout: 0.5 });
    try {
      const notices: string[] = [];
      client.scheduler.on("notice", (message) => notices.push(message));
      // The first task outlasts the wait for the worker's heartbeat to show it running; the next has nobody to run it.
      const computing = get({ a: [slowly, 3000, 1], b: [inc, "a"] }, "b");
      await waitFor("the worker to run the first task", () => (client.workers.get("only")?.metrics?.taskCounts.executing ?? 0) > 0);
      await only.stop();
      await waitFor("the notice", () => notices.length > 0, 15);
      assert.match(notices[0], new RegExp(`npx tsdask worker ${address.replaceAll(".", "\\.")} \\(with the password in TSDASK_REDIS_PASSWORD or --password-file\\)`));
      workers.push(await startWorker(address, { name: "latecomer", env: { TSDASK_REDIS_PASSWORD: PASSWORD } }));
      assert.equal(await computing, 2);
      assertHidden(notices.join("\n"), "the notices");
    } finally {
      await client.close();
    }
  });

  test("a worker in this process: util.inspect of it and of its options shows no password", async () => {
    const logged: string[] = [];
    const options = { url: server.url, name: "in-process", nthreads: 1, profile: false as const, log: (line: string) => logged.push(line) };
    const worker = await RedisWorker.start(options);
    try {
      assertHidden(everything(worker), "util.inspect of a worker");
      assertHidden(JSON.stringify(worker.target), "JSON of a worker's target");
      assertHidden(logged.join("\n"), "the worker's log");
    } finally {
      await worker.close();
    }
  });

  test("--password-file: a missing or empty file is an error naming it; with a password in the address too, a usage error", async () => {
    const missing = join(folder, "no-such-file");
    let run = await runNode([TSDASK_CLI, "worker", address, "--password-file", missing]);
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, new RegExp(`^tsdask worker: cannot read the password file "${missing.replaceAll("/", "\\/")}": ENOENT`));
    const empty = join(folder, "empty");
    writeFileSync(empty, "\n");
    run = await runNode([TSDASK_CLI, "worker", address, "--password-file", empty]);
    assert.equal(run.code, 1, run.output);
    assert.equal(run.output, `tsdask worker: the password file ${JSON.stringify(empty)} is empty\n`);
    run = await runNode([TSDASK_CLI, "worker", server.url, "--password-file", empty]);
    assert.equal(run.code, 2, run.output);
    assert.match(run.output, /the address has a password and --password-file gives one too/);
    assertHidden(run.output, "the usage error");
  });

  test("a password in the address: once the worker serves, ps shows its command without it", async () => {
    const worker = await startWorker(server.url, { name: "in-argv" });
    try {
      const shown = commandLineOf(worker.pid);
      assert.match(shown, new RegExp(`^tsdask worker ${address.replaceAll(".", "\\.")} --name in-argv`));
      assertHidden(shown, "the worker's command line");
      assertHidden(worker.output(), "the worker's log");
    } finally {
      await worker.stop();
    }
  });
});

describe("connectTimeout is in seconds", () => {
  let silent: SilentServer;
  let silentPort: number;
  before(async () => {
    silent = await startSilentServer();
    silentPort = silent.port;
  });
  after(() => silent.close());

  test("connectTimeout: 2 against a server that never answers fails after about 2 s, saying so", async () => {
    const started = performance.now();
    await assert.rejects(Client.connect(`redis://127.0.0.1:${silentPort}`, { connectTimeout: 2 }), (error: Error) => {
      assert.ok(error instanceof RedisConnectError, String(error));
      assert.match(error.message, new RegExp(`^Cannot connect to Redis at redis://127\\.0\\.0\\.1:${silentPort}: timed out \\(no reply within 2 s\\)$`));
      return true;
    });
    const elapsed = (performance.now() - started) / 1000;
    assert.ok(elapsed >= 1.9 && elapsed < 6, `failed after ${elapsed.toFixed(2)} s`);
  });

  test("bad option values are TypeErrors naming the option and its unit", async () => {
    const url = `redis://127.0.0.1:${silentPort}`;
    for (const value of [-1, Number.NaN, "2", 0]) {
      await assert.rejects(Client.connect(url, { connectTimeout: value as number }), (error: Error) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, /^Client\.connect option connectTimeout must be a positive number of seconds, got /);
        return true;
      });
    }
    await assert.rejects(Client.connect(url, { partSize: "1 MiB" as unknown as number }), /option partSize must be a positive number of bytes, got "1 MiB"/);
    await assert.rejects(Client.connect(url, { peerTimeout: "30 s" as unknown as number }), /option peerTimeout must be a positive number of seconds, got "30 s"/);
    for (const [name, value, unit] of [
      ["lockDuration", "5", "a positive number of seconds"],
      ["stalledInterval", -2, "a positive number of seconds"],
      ["heartbeatInterval", Number.NaN, "a positive number of seconds"],
      ["memoryLimit", "4 GiB", "a positive number of bytes"],
      ["nthreads", 1.5, "a whole number ≥ 1"],
      ["maxStalledCount", -1, "a whole number ≥ 0"],
      ["peerTimeout", 0, "a positive number of seconds"],
      ["handoffTimeout", "20", "a positive number of seconds"],
    ] as const) {
      await assert.rejects(RedisWorker.start({ url, [name]: value }), (error: Error) => {
        assert.ok(error instanceof TypeError, `${name}: ${error}`);
        assert.equal(error.message, `RedisWorker option ${name} must be ${unit}, got ${typeof value === "string" ? JSON.stringify(value) : String(value)}`);
        return true;
      });
    }
  });
});
