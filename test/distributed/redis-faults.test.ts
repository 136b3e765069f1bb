// Faults of a Redis cluster through the Client, with real processes and real signals: a worker
// killed (SIGKILL) or frozen (SIGSTOP) mid-task, every worker gone, the connection to Redis cut,
// Redis frozen, stopped, or restarted empty, a wrong password or no server at all, a worker of
// another protocol version. Each ends in the right result counted once, or in a clear error
// within a bounded time; nothing is left running or stored.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import { Worker as BullWorker } from "bullmq";
import { Redis } from "ioredis";
import { Client, get } from "../../src";
import { parseRedisUrl } from "../../src/kernel/distributed/redis/address";
import { redisOptions } from "../../src/kernel/distributed/redis/connection";
import { RedisConnectError, RedisConnectionLostError, RedisDataLostError, RedisProtocolError } from "../../src/kernel/distributed/redis/errors";
import { TASK_QUEUE, registry } from "../../src/kernel/distributed/redis/keys";
import { REDIS_PROTOCOL } from "../../src/kernel/distributed/redis/registry";
import type { RedisTransport } from "../../src/kernel/distributed/redis/transport";
import { killOwnProcess } from "../fixtures/cluster-client-tasks";
import { inc, pair, sleep, slowly, stamp } from "../fixtures/redis-tasks";
import { killOnExit } from "../helpers/children";
import { freePort } from "../helpers/net";
import { type RedisServer, startRedisServer } from "../helpers/redis-server";
import { TSDASK_CLI, type WorkerProcess, startWorker } from "../helpers/redis-workers";
import { waitFor, within } from "../helpers/wait";

/** Tasks `name` said it was running in its last heartbeat. */
const executing = (client: Client, name: string): number => client.workers.get(name)?.metrics?.taskCounts.executing ?? 0;

/** The stream's entries-added, read synchronously by redis-cli (this thread stays busy meanwhile). */
function addedNow(server: RedisServer, stream: string): number {
  const cli = join(dirname(process.env.TSDASK_REDIS_SERVER ?? "/usr/bin/redis-server"), "redis-cli");
  const info = execFileSync(cli, ["-p", String(server.port), "--raw", "XINFO", "STREAM", stream], { encoding: "utf8" }).split("\n");
  const added = Number(info[info.indexOf("entries-added") + 1]);
  assert.ok(Number.isInteger(added), `redis-cli XINFO STREAM ${stream} gave no entries-added:\n${info.join("\n")}`);
  return added;
}

/** Blocks this thread, as a long synchronous cell would, until `condition` holds (checked every 250 ms); throws naming `what` after `seconds`. */
function busyUntil(what: string, condition: () => boolean, seconds: number): void {
  const end = performance.now() + seconds * 1000;
  const idle = new Int32Array(new SharedArrayBuffer(4));
  while (!condition()) {
    assert.ok(performance.now() < end, `a client busy for ${seconds} s waited in vain for ${what}`);
    Atomics.wait(idle, 0, 0, 250);
  }
}

/** How many task-stream records name `key` (a task run twice, or reported twice, would show twice). */
const recordsOf = (client: Client, key: string): number => client.scheduler.getTaskStream().filter((record) => record.key === key).length;

describe("Redis faults: workers", () => {
  let server: RedisServer;
  let redis: Redis;
  let client: Client;
  const notices: string[] = [];
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    client = await Client.connect(server.url, { noWorkersTimeout: 1 });
    client.scheduler.on("notice", (message) => notices.push(message));
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });
  after(async () => {
    await client.close();
    await waitFor("Redis to be empty", async () => (await redis.dbsize()) === 0, 10);
    redis.disconnect();
    await server.stop();
  });

  test("a worker killed with SIGKILL mid-task: another takes the job over in seconds; the result is right and counts once", async () => {
    const doomed = await startWorker(server.url, { name: "doomed" });
    workers.push(doomed);
    // Long enough to be running when the worker's heartbeat shows it busy (up to ~2 s, more on a loaded machine).
    const computing = get({ x: 1, slow: [slowly, 4000, "done"], both: [pair, "slow", "x"] }, "both");
    await waitFor("the doomed worker to run the slow task", () => executing(client, "doomed") > 0);
    // Killed before the rescuer starts: a worker's start takes seconds on a loaded machine, and
    // the doomed one would otherwise finish the task meanwhile.
    await doomed.kill();
    workers.push(await startWorker(server.url, { name: "rescuer" }));
    const rescuerUp = performance.now();
    assert.deepEqual(await computing, ["done", 1]);
    const recovery = (performance.now() - rescuerUp) / 1000;
    // What is left of the lock's 5 s + stalled checks every 2 s + the 4 s task again: about 10 s; BullMQ's defaults would take 30 s or more.
    assert.ok(recovery < 25, `took ${recovery.toFixed(1)} s to recover`);
    const slow = client.scheduler.getTaskStream().filter((record) => record.key === "slow");
    assert.deepEqual(slow.map((record) => record.worker), ["rescuer"], "the rescuer's result, counted once");
    await waitFor("the dead worker to be reported gone", () => !client.workers.has("doomed"), 15);
  });

  test("a frozen worker that comes back after its job was taken over: its late result changes nothing", async () => {
    const frozen = await startWorker(server.url, { name: "frozen", extraArgs: ["--part-size", "4 KiB"] });
    workers.push(frozen);
    const made = client.submit(stamp, 4000, 100_000);
    await waitFor("the worker to run the task", () => executing(client, "frozen") > 0);
    process.kill(frozen.pid, "SIGSTOP");
    let rescuer: WorkerProcess;
    try {
      rescuer = await startWorker(server.url, { name: "rescuer2", extraArgs: ["--part-size", "4 KiB"] });
      workers.push(rescuer);
      const result = await made.result();
      assert.ok(result.every((value) => value === rescuer.pid), "the rescuer's result, whole");
    } finally {
      process.kill(frozen.pid, "SIGCONT");
    }
    // The thawed worker finishes its task and finds the result published: it writes nothing.
    await waitFor("the thawed worker to find its job gone", () => /Missing key for job/.test(frozen.output()), 15);
    const stored = await made.result();
    assert.ok(stored.every((value) => value === rescuer.pid), "the stored value is still the rescuer's, not a mix");
    assert.equal(recordsOf(client, String(made.key)), 1, "counted once");
    made.release();
  });

  test("a task that kills every worker it runs on is given up once its workers died more than --allowed-failures times", async () => {
    const first = await startWorker(server.url, { name: "victim", extraArgs: ["--allowed-failures", "0"] });
    workers.push(first);
    const poisoned = get({ poison: [killOwnProcess] }, "poison");
    assert.equal(await first.exited, null, "the victim was killed");
    // Its job stalls once, one more than allowed: the next worker fails it without running it.
    const second = await startWorker(server.url, { name: "judge", extraArgs: ["--allowed-failures", "0"] });
    workers.push(second);
    await assert.rejects(poisoned, /^Error: Task 'poison' was running on workers that died or stopped answering, more times than they allow \(tsdask worker --allowed-failures\): it is given up/);
    assert.equal(await get({ y: [inc, 1] }, "y"), 2, "the judge is alive and the cluster usable");
    await waitFor("the victim to be reported gone", () => !client.workers.has("victim"), 15);
  });

  test("a client busy for seconds while a worker finishes thousands of its tasks loses none of their outcomes", async () => {
    // BullMQ trims a queue's event stream to about 10 000 entries as jobs complete; the outcomes
    // go on the client's own outcome stream, which only the client trims, behind what it read:
    // more events than BullMQ keeps come while it is busy, and no outcome is lost. Without
    // scheduler-side queuing every ready task is a job at once, as many as the events can outrun.
    const busy = await Client.connect(server.url, { name: "busy", workerSaturation: Infinity });
    try {
      const fast = await startWorker(server.url, { name: "fast" });
      workers.push(fast);
      await waitFor("the client to see the worker", () => busy.workers.has("fast"), 10);
      const events = `tsdask:${(busy.scheduler.transport as RedisTransport).clientId}:tasks:events`;
      const added = async (): Promise<number> => {
        const info = (await redis.xinfo("STREAM", events).catch(() => [])) as (string | number)[];
        return Number(info[info.indexOf("entries-added") + 1] ?? 0);
      };
      const count = 20_000;
      const graph: Record<string, unknown> = {};
      const keys = Array.from({ length: count }, (_, i) => {
        graph[`many-${i}`] = [inc, i];
        return `many-${i}`;
      });
      // Frozen, the worker takes no job: every job waits in the queue ("added" and "waiting" events).
      process.kill(fast.pid, "SIGSTOP");
      let computing: Promise<unknown>;
      let eventsBefore: number;
      try {
        computing = get(graph, keys, { scheduler: busy });
        // Should a wait below fail, closing the client rejects this too: that must not hide the failure.
        computing.catch(() => {});
        // 20 000 jobs take BullMQ seconds to add, and a loaded machine several times as long.
        await waitFor("the jobs to be added", async () => (await added()) >= 2 * count, 120);
        eventsBefore = await added();
      } finally {
        process.kill(fast.pid, "SIGCONT");
      }
      // A long synchronous cell (waiting, not computing, to leave the CPUs to the worker and
      // Redis): the worker runs the tasks while nothing is read here. It lasts until the worker
      // has added more events than BullMQ's trim keeps, however long a loaded machine takes
      // (up to 120 s), checked by redis-cli, which blocks this thread as the cell would.
      busyUntil("more than 10 500 events", () => addedNow(server, events) - eventsBefore > 10_500, 120);
      const eventsWhileBusy = (await added()) - eventsBefore;
      const guard = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("outcomes were lost: the computation never finished")), 120_000).unref());
      const results = (await Promise.race([computing, guard])) as number[];
      assert.equal(results.length, count);
      assert.deepEqual(results.slice(0, 3), [1, 2, 3]);
      assert.ok(eventsWhileBusy > 10_500, `more events came while the client was busy (${eventsWhileBusy}) than BullMQ's default trim keeps`);
    } finally {
      await busy.close();
    }
  });

  test("a job completed by a program that is not a tsdask worker fails its task, saying so", async () => {
    // The scheduler queues tasks for the workers it knows: one, frozen, leaves the job to the other program.
    const frozen = await startWorker(server.url, { name: "bystander" });
    workers.push(frozen);
    await waitFor("the client to see the worker", () => client.workers.has("bystander"), 10);
    process.kill(frozen.pid, "SIGSTOP");
    const { namespace } = client.scheduler.transport as RedisTransport;
    // Another BullMQ program pointed at the client's task queue.
    const foreign = new BullWorker(TASK_QUEUE, async () => 42, { connection: redisOptions(parseRedisUrl(server.url)), prefix: namespace.queuePrefix });
    try {
      await assert.rejects(get({ stranger: [inc, 1] }, "stranger"), /^Error: Task 'stranger' was completed with a report this client cannot read: tsdask: unreadable task outcome in Redis \("42"…\)/);
    } finally {
      process.kill(frozen.pid, "SIGCONT");
      await foreign.close();
    }
  });

  test("a client killed without closing: the workers remove its data", async () => {
    const sweeper = await startWorker(server.url, { name: "sweeper", env: { TSDASK_DEAD_CLIENT_GRACE: "1" } });
    workers.push(sweeper);
    const abandoned = spawn(process.execPath, [join(__dirname, "../helpers/abandoned-client.js"), server.url], { stdio: ["ignore", "pipe", "inherit"] });
    killOnExit(abandoned);
    const clientId = await new Promise<string>((resolve) => abandoned.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString().trim())));
    assert.ok((await redis.keys(`tsdask:${clientId}:v:*`)).length > 0, "the client holds a result in Redis");
    abandoned.kill("SIGKILL");
    await waitFor("the dead client's namespace to be swept", async () => (await redis.keys(`tsdask:${clientId}*`)).length === 0 && (await redis.sismember("tsdask:clients", clientId)) === 0, 30);
    assert.match(sweeper.output(), new RegExp(`client ${clientId} is gone without closing; removing its data`));
  });

  test("every worker gone: the computation waits, says so, and resumes when a worker joins", async () => {
    const only = await startWorker(server.url, { name: "only" });
    workers.push(only);
    const before = notices.length;
    // The first task outlasts the wait for the worker's heartbeat to show it running (up to 2 s).
    const computing = get({ a: [slowly, 3000, 1], b: [inc, "a"], c: [inc, "b"] }, "c");
    await waitFor("the worker to run the first task", () => executing(client, "only") > 0);
    // SIGTERM: it finishes the running task, then leaves; the next tasks have nobody to run them.
    await only.stop();
    await waitFor("a notice that no worker is there", () => notices.length > before, 15);
    const port = server.port;
    assert.match(notices[before], new RegExp(`No tsdask worker is connected to redis://127\\.0\\.0\\.1:${port}: 1 task\\(s\\) wait in its queue\\. Start one .*npx tsdask worker redis://127\\.0\\.0\\.1:${port}`));
    assert.equal(client.workers.size, 0);
    workers.push(await startWorker(server.url, { name: "latecomer" }));
    assert.equal(await computing, 3);
    await waitFor("a notice that work resumed", () => notices.slice(before).some((text) => /A worker joined/.test(text)), 5);
  });

  test("no worker at all when tasks are submitted: they wait in the queue and run when one joins", async () => {
    await waitFor("no worker to be connected", () => client.workers.size === 0, 5);
    const waiting = client.submit(inc, 41);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(waiting.status, "pending");
    workers.push(await startWorker(server.url, { name: "late" }));
    assert.equal(await waiting.result(), 42);
    waiting.release();
  });
});

describe("Redis faults: the connection and the server", () => {
  let server: RedisServer;
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer({ password: "pw" });
    workers.push(await startWorker(server.url, { name: "steady", nthreads: 2 }));
  });
  after(async () => {
    try {
      await Promise.all(workers.map((worker) => worker.stop()));
    } finally {
      // Even when a worker failed to stop: a server left running keeps this file's process alive.
      await server.stop();
    }
  });

  test("connections cut mid-computation: everything reconnects and the result is right", async () => {
    const client = await Client.connect(server.url);
    try {
      const graph: Record<string, unknown> = { x0: 0 };
      for (let i = 1; i <= 40; i++) graph[`x${i}`] = [slowly, 25, [inc, `x${i - 1}`]];
      const computing = get(graph, "x40");
      await new Promise((resolve) => setTimeout(resolve, 300));
      const admin = new Redis(server.url);
      const killed = await admin.call("CLIENT", "KILL", "TYPE", "normal");
      admin.disconnect();
      assert.ok(Number(killed) >= 3, `killed ${killed} connections`);
      // Bounded, and saying where the chain stopped: this wait once outlived the test file's 10 minutes.
      const result = await within(computing, 60_000);
      if (result === "timed out") {
        const done = client.scheduler.getTaskStream().map((record) => String(record.key));
        assert.fail(`the chain did not finish within 60 s of the cut; finished: ${done.join(" ")}\nworker steady:\n${workers[0].output().slice(-4000)}`);
      }
      assert.equal(result, 40);
      for (let i = 1; i <= 40; i++) assert.equal(recordsOf(client, `x${i}`), 1, `x${i} counted once`);
    } finally {
      await client.close();
    }
  });

  test("a wrong password, or no Redis there: a clear error at connect, from the client and from a worker", async () => {
    const wrong = server.url.replace(":pw@", ":nope@");
    await assert.rejects(Client.connect(wrong), (error: Error) => {
      assert.ok(error instanceof RedisConnectError);
      assert.match(error.message, new RegExp(`^Cannot connect to Redis at redis://127\\.0\\.0\\.1:${server.port}: wrong user name or password$`));
      return true;
    });
    const nobody = await freePort();
    await assert.rejects(Client.connect(`redis://127.0.0.1:${nobody}`), (error: Error) => {
      assert.ok(error instanceof RedisConnectError);
      assert.match(error.message, new RegExp(`^Cannot connect to Redis at redis://127\\.0\\.0\\.1:${nobody}: connection refused`));
      return true;
    });
    await assert.rejects(Client.connect("http://127.0.0.1:6379"), /the scheme must be redis:\/\/ or rediss:\/\//);
    await assert.rejects(Client.connect(server.url, { colour: "blue" } as never), /Unknown option "colour" for a Redis cluster/);
    const run = (): string => {
      try {
        execFileSync(process.execPath, [TSDASK_CLI, "worker", wrong, "--name", "intruder"], { stdio: "pipe", timeout: 20_000 });
      } catch (error) {
        const failure = error as { status: number; stderr: Buffer };
        assert.equal(failure.status, 1);
        return failure.stderr.toString();
      }
      assert.fail("the worker started with a wrong password");
    };
    assert.equal(run(), `tsdask worker: Cannot connect to Redis at redis://127.0.0.1:${server.port}: wrong user name or password\n`);
  });

  test("Redis frozen: the computation fails with an error naming the server, within the bound; so do the client's Futures", async () => {
    const client = await Client.connect(server.url, { connectionLostTimeout: 2 });
    try {
      const computing = get({ a: [sleep, 3000] }, "a");
      const future = client.submit(sleep, 3001);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const frozenAt = performance.now();
      server.freeze(true);
      try {
        await assert.rejects(computing, (error: Error) => {
          assert.ok(error instanceof RedisConnectionLostError);
          assert.match(error.message, new RegExp(`Redis at redis://127\\.0\\.0\\.1:${server.port} has not answered for 2 s`));
          return true;
        });
        const elapsed = (performance.now() - frozenAt) / 1000;
        assert.ok(elapsed >= 1.5 && elapsed < 8, `failed after ${elapsed.toFixed(1)} s`);
        await assert.rejects(future.result(), RedisConnectionLostError);
        assert.equal(client.status, "closed", "the client closed with its cluster");
      } finally {
        server.freeze(false);
      }
    } finally {
      await client.close();
    }
  });

  test("Redis restarted empty: a clear error naming the lost keys", async () => {
    const client = await Client.connect(server.url);
    try {
      const computing = get({ input: 41, slow: [slowly, 5000, "input"], last: [inc, "slow"] }, "last");
      // Its job active in this client's queue (the worker may still be busy with an earlier test's task).
      const prefix = `tsdask:${(client.scheduler.transport as RedisTransport).clientId}`;
      const check = new Redis(server.url);
      try {
        await waitFor("the slow task to run", async () => {
          const active = await check.lrange(`${prefix}:tasks:active`, 0, -1);
          const names = await Promise.all(active.map((id) => check.hget(`${prefix}:tasks:${id}`, "name")));
          return names.includes("slow");
        });
      } finally {
        check.disconnect();
      }
      await server.restartEmpty();
      await assert.rejects(computing, (error: Error) => {
        assert.ok(error instanceof RedisDataLostError, String(error));
        assert.match(error.message, new RegExp(`^Redis at redis://127\\.0\\.0\\.1:${server.port} lost this client's data \\(it restarted empty, or was flushed\\): lost `));
        assert.deepEqual([...error.lost].sort(), ["'input'", "'slow'"]);
        return true;
      });
      // The worker reconnects and registers again by itself.
      await waitFor("the worker to register again", async () => {
        const check = new Redis(server.url);
        const names = await check.smembers("tsdask:workers");
        check.disconnect();
        return names.includes("steady");
      });
    } finally {
      await client.close();
    }
  });

  test("a worker with --death-timeout rides out a short outage, and leaves with exit code 1 after a long one, naming Redis", async () => {
    const own = await startRedisServer();
    try {
      const mortal = await startWorker(own.url, { name: "mortal", extraArgs: ["--death-timeout", "3"] });
      // Back within the timeout: the deadline is called off and the worker serves on.
      await own.restartEmpty();
      const check = new Redis(own.url);
      try {
        await waitFor("the worker to register again", async () => (await check.sismember("tsdask:workers", "mortal")) === 1, 20);
      } finally {
        check.disconnect();
      }
      await new Promise((resolve) => setTimeout(resolve, 4000));
      assert.equal(mortal.output().includes("has not answered"), false, mortal.output());
      assert.equal(await within(mortal.exited, 0), "timed out", "still running");
      const stoppedAt = performance.now();
      await own.stop();
      const code = await within(mortal.exited, 30_000);
      const seconds = (performance.now() - stoppedAt) / 1000;
      assert.equal(code, 1, mortal.output());
      assert.ok(seconds >= 2.5, `left after ${seconds.toFixed(1)} s, before its death timeout`);
      assert.match(mortal.output(), new RegExp(`Redis at redis://127\\.0\\.0\\.1:${own.port} has not answered for 3 s \\(--death-timeout; last error: .*ECONNREFUSED.*\\): leaving`));
    } finally {
      await own.stop();
    }
  });

  test("a worker sent SIGTERM while it reconnects to a restarted Redis finishes its task and exits", async () => {
    // BullMQ's close waited forever for its blocking connection's end when it caught that
    // connection reconnecting (see queue-close.ts): the worker never left.
    const own = await startRedisServer();
    try {
      const leaving = await startWorker(own.url, { name: "leaving" });
      workers.push(leaving); // stopped by after() should this test fail before it stops it
      const client = await Client.connect(own.url, { connectionLostTimeout: 2 });
      try {
        const computing = get({ a: [sleep, 5000] }, "a");
        computing.catch(() => {}); // awaited below, once Redis is stopped
        await new Promise((resolve) => setTimeout(resolve, 300));
        await own.stop();
        await assert.rejects(computing, RedisConnectionLostError);
      } finally {
        await client.close();
      }
      await own.restartEmpty();
      const stopping = leaving.stop();
      stopping.catch(() => {}); // awaited below; a failure past the bound is reported there
      assert.notEqual(await within(stopping, 45_000), "timed out", `the worker did not leave:\n${leaving.output()}`);
      assert.equal(await leaving.exited, 0, leaving.output());
    } finally {
      await own.stop();
    }
  });

  test("Redis gone for good: the computation fails within the bound, naming the server", async () => {
    const client = await Client.connect(server.url, { connectionLostTimeout: 2 });
    try {
      const computing = get({ a: [sleep, 5000] }, "a");
      await new Promise((resolve) => setTimeout(resolve, 300));
      const stoppedAt = performance.now();
      await server.stop();
      await assert.rejects(computing, (error: Error) => {
        assert.ok(error instanceof RedisConnectionLostError);
        assert.match(error.message, new RegExp(`Redis at redis://127\\.0\\.0\\.1:${server.port} has not answered for 2 s \\(.*ECONNREFUSED`));
        return true;
      });
      const elapsed = (performance.now() - stoppedAt) / 1000;
      assert.ok(elapsed < 8, `failed after ${elapsed.toFixed(1)} s`);
    } finally {
      await client.close();
      await server.restartEmpty(); // for the workers' clean exit in after()
    }
  });
});

// Every transport's connections are gone after close (checked by the Redis server's own list).
describe("Redis: a closed client leaves no connection open", () => {
  test("CLIENT LIST has none of the client's connections after close()", async () => {
    const server = await startRedisServer();
    const admin = new Redis(server.url);
    try {
      const client = await Client.connect(server.url);
      const id = (client.scheduler.transport as RedisTransport).clientId;
      const mine = async (): Promise<number> => ((await admin.client("LIST")) as string).split("\n").filter((line) => line.includes(`name=tsdask-client-${id}`)).length;
      assert.ok((await mine()) >= 2);
      await client.close();
      await waitFor("the client's connections to close", async () => (await mine()) === 0, 5);
    } finally {
      admin.disconnect();
      await server.stop();
    }
  });
});

// A worker of another tsdask release would never send outcomes this client reads: it is refused, naming both versions.
describe("Redis: a worker of another protocol version", () => {
  /** Registers a fake worker "elder" of protocol `version` (undefined: none, as workers before version 2), its request channel listened to as a live worker's is. */
  const register = async (url: string, version: number | undefined): Promise<Redis> => {
    const listening = new Redis(url);
    await listening.subscribe(registry.requests("elder"));
    const admin = new Redis(url);
    const info = { name: "elder", host: "far", pid: 4242, nthreads: 1, memoryLimit: 1e9, globals: [], allowSource: false, started: 1, ...(version === undefined ? {} : { protocol: version }) };
    await admin.multi().hset(registry.worker("elder"), "info", JSON.stringify(info)).sadd(registry.workers, "elder").exec();
    admin.disconnect();
    return listening;
  };
  const refusal = (port: number, version: number | undefined) => (error: Error) => {
    assert.ok(error instanceof RedisProtocolError, String(error));
    const theirs = version === undefined ? "1 \\(it registered no version: a tsdask older than version 2 of the protocol\\)" : String(version);
    assert.match(error.message, new RegExp(`^Worker "elder" \\(host far, pid 4242\\) at redis://127\\.0\\.0\\.1:${port} speaks version ${theirs} of tsdask's Redis protocol, this client version ${REDIS_PROTOCOL}: `));
    return true;
  };

  test("an old worker (no version registered) already there: connecting fails, naming it and both versions", async () => {
    const server = await startRedisServer();
    const listening = await register(server.url, undefined);
    try {
      await assert.rejects(Client.connect(server.url), refusal(server.port, undefined));
    } finally {
      listening.disconnect();
      await server.stop();
    }
  });

  test("a newer worker joining a connected client: its computations fail, naming it and both versions, rather than waiting", async () => {
    const server = await startRedisServer();
    const client = await Client.connect(server.url, { pollInterval: 0.2 });
    const future = client.submit(inc, 1);
    const listening = await register(server.url, REDIS_PROTOCOL + 1);
    try {
      await assert.rejects(future.result(), refusal(server.port, REDIS_PROTOCOL + 1));
      assert.equal(client.status, "closed", "the client closed with its cluster");
    } finally {
      await client.close();
      listening.disconnect();
      await server.stop();
    }
  });
});
