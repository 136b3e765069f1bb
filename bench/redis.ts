// A Redis cluster through the Client against a bare BullMQ floor measured in the same run, on a
// redis-server of its own, and against LocalCluster: per-task latency (a chain, each task waiting
// for the one before) and throughput (independent tasks) with 1, 2 and 4 worker processes of one
// thread each (target: within 1.5× of the floor, as the median over rounds in which the floor and
// tsdask take turns); a 100 000-task graph whose client memory must not grow with the tasks that
// finished; the seeds' QR example.
// Run: npm run bench -- redis   (or node --expose-gc build/bench/redis.js [chain] [tasks] [--rounds=5] [--workers=1,2,4]
// [--ratios-only] after compiling; --workers= measures only those worker counts, --ratios-only stops
// after the latency and throughput tables)

import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { Queue, QueueEvents } from "bullmq";
import { Client, get } from "../src";
import * as da from "../src/kernel/collections/array";
import { parseRedisUrl } from "../src/kernel/distributed/redis/address";
import { redisOptions } from "../src/kernel/distributed/redis/connection";
import { inc } from "../test/fixtures/tasks";
import { killOnExit } from "../test/helpers/children";
import { type RedisServer, startRedisServer } from "../test/helpers/redis-server";
import { type WorkerProcess, startWorker } from "../test/helpers/redis-workers";
import { cpuSeconds, median, onLocalCluster, printTable } from "./harness";

const WORKER_COUNTS: readonly number[] = [1, 2, 4];
/** Threads per tsdask worker, and BullMQ concurrency per floor worker. */
const CONCURRENCY = 1;
const FLOOR_WORKER = join(__dirname, "../test/helpers/bullmq-floor-worker.js");

// ---- The floor: BullMQ alone ---------------------------------------------------------------

/** A floor job not finished after this long fails its round: the bench never hangs on the floor. */
const FLOOR_JOB_TIMEOUT_MS = 10_000;

async function startFloorWorkers(url: string, queue: string, count: number): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const child = spawn(process.execPath, [FLOOR_WORKER, url, queue, String(CONCURRENCY)], { stdio: ["ignore", "pipe", "inherit"] });
      killOnExit(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve());
        child.once("exit", (code) => reject(new Error(`floor worker exited with code ${code}`)));
      });
      return child;
    }),
  );
}

async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(children.map((child) => new Promise((resolve) => (child.once("exit", resolve), child.kill("SIGTERM")))));
}

/**
 * Bare BullMQ worker processes completing `inc` jobs of one queue, and this process adding
 * them: the same kind of latency as tsdask's chain (a job added, its result back through
 * BullMQ's own completion event, the next added), and of throughput (all added at once).
 */
class Floor {
  private constructor(
    readonly workers: readonly ChildProcess[],
    private readonly queue: Queue,
    private readonly events: QueueEvents,
  ) {}

  static async start(url: string, workerCount: number): Promise<Floor> {
    const name = `floor-${workerCount}`;
    const workers = await startFloorWorkers(url, name, workerCount);
    const queue = new Queue(name, { connection: redisOptions(parseRedisUrl(url)) });
    // From the stream's start, not from "$": QueueEvents issues its first read some time after it
    // is ready, and a job completed before that read would never be heard of (the floor's own
    // waitUntilFinished hung on the first job of a run that way, on a loaded machine).
    const events = new QueueEvents(name, { connection: redisOptions(parseRedisUrl(url)), lastEventId: "0-0" });
    await events.waitUntilReady();
    return new Floor(workers, queue, events);
  }

  /** Seconds per job, adding each job when the previous one completed. */
  async latency(jobs: number): Promise<number> {
    const start = performance.now();
    let x = 0;
    for (let i = 0; i < jobs; i++) {
      // Completed jobs are kept a while: waitUntilFinished looks the job up after it finished.
      const job = await this.queue.add("inc", { x }, { removeOnComplete: { count: 100 } });
      x = (await job.waitUntilFinished(this.events, FLOOR_JOB_TIMEOUT_MS)) as number;
    }
    if (x !== jobs) throw new Error(`floor chain ended at ${x}, expected ${jobs}`);
    return (performance.now() - start) / 1000 / jobs;
  }

  /** Jobs per second: all added at once, until the last completed. */
  async throughput(jobs: number): Promise<number> {
    const before = await this.queue.getCompletedCount();
    const start = performance.now();
    await this.queue.addBulk(Array.from({ length: jobs }, (_, x) => ({ name: "inc", data: { x } })));
    while ((await this.queue.getCompletedCount()) < before + jobs) {
      if (performance.now() - start > FLOOR_JOB_TIMEOUT_MS + jobs) throw new Error(`the floor's ${jobs} jobs did not all complete within ${((FLOOR_JOB_TIMEOUT_MS + jobs) / 1000).toFixed(0)} s`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return jobs / ((performance.now() - start) / 1000);
  }

  async close(): Promise<void> {
    await this.events.close();
    await this.queue.obliterate({ force: true });
    await this.queue.close();
    await stopAll(this.workers);
  }
}

// ---- tsdask ---------------------------------------------------------------------------------

let run = 0;

/** A chain of `length` tasks on keys no earlier run used: x-0 (data), x-1 = inc(x-0), … */
function chain(length: number): { graph: Record<string, unknown>; last: string } {
  const prefix = `c${run++}x`;
  const graph: Record<string, unknown> = { [`${prefix}-0`]: 0 };
  for (let i = 1; i <= length; i++) graph[`${prefix}-${i}`] = [inc, `${prefix}-${i - 1}`];
  return { graph, last: `${prefix}-${length}` };
}

function independent(count: number): { graph: Record<string, unknown>; keys: string[] } {
  const prefix = `t${run++}x`;
  const graph: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) graph[`${prefix}-${i}`] = [inc, i];
  return { graph, keys: Object.keys(graph) };
}

/** Seconds per task of a chain, on whatever scheduler `get` uses now. */
async function latency(length: number): Promise<number> {
  const { graph, last } = chain(length);
  const start = performance.now();
  const result = await get(graph, last);
  if (result !== length) throw new Error(`chain ended at ${result}, expected ${length}`);
  return (performance.now() - start) / 1000 / length;
}

/** Tasks per second, all submitted at once and every result gathered. */
async function throughput(tasks: number): Promise<number> {
  const { graph, keys } = independent(tasks);
  const start = performance.now();
  const results = (await get(graph, keys)) as number[];
  const seconds = (performance.now() - start) / 1000;
  if (results[tasks - 1] !== tasks) throw new Error(`last result ${results[tasks - 1]}, expected ${tasks}`);
  return tasks / seconds;
}

/**
 * Tasks run before anything is timed, the same on both sides, per worker process: V8 keeps
 * optimising a worker's hot paths for its first few thousand tasks (--trace-opt on a tsdask worker:
 * 226, 102, 38, then 8 optimisations over four 1 000-task chains); BullMQ's own small worker
 * settles sooner, so a short warm-up measured tsdask's compiler as much as its per-task cost. The
 * tasks of a chain spread over the workers, so more workers need a longer warm-up for each to see
 * as many (with 4 workers and the 1-worker warm-up, each tsdask worker spent twice the CPU per
 * task it spends once warm).
 */
const WARM_UP_CHAIN = 3000;
const WARM_UP_TASKS = 5000;

async function warmUp(workerCount: number): Promise<void> {
  await latency(WARM_UP_CHAIN * workerCount);
  await throughput(WARM_UP_TASKS * workerCount);
}

/** Connects a Client to Redis with `count` one-thread workers serving it, for `body`. */
async function onRedis<T>(
  server: RedisServer,
  count: number,
  body: (client: Client, workers: readonly WorkerProcess[]) => Promise<T>,
  options: { readonly taskStreamLength?: number } = {},
): Promise<T> {
  const workers: WorkerProcess[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await startWorker(server.url, { name: `bench-${count}-${i}`, nthreads: 1 }));
    const client = await Client.connect(server.url, { name: "bench", ...options });
    try {
      return await body(client, workers);
    } finally {
      await client.close();
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

interface MemorySample {
  readonly finished: number;
  readonly heapMB: number;
}

/** A tree reduction of ~100 000 tasks; the client's live heap sampled as tasks finish. */
async function bigGraph(server: RedisServer, leaves: number, taskStreamLength: number | undefined): Promise<{ tasks: number; seconds: number; samples: MemorySample[] }> {
  const graph: Record<string, unknown> = {};
  let level = Array.from({ length: leaves }, (_, i) => {
    graph[`leaf-${i}`] = [inc, i];
    return `leaf-${i}`;
  });
  for (let depth = 0; level.length > 1; depth++) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 100) {
      const key = `max-${depth}-${i / 100}`;
      graph[key] = [Math.max, ...level.slice(i, i + 100)];
      next.push(key);
    }
    level = next;
  }
  const tasks = Object.keys(graph).length;
  return onRedis(
    server,
    2,
    async (client) => {
      const samples: MemorySample[] = [];
      const gc = (globalThis as { gc?: () => void }).gc;
      const sample = (): void => {
        gc?.();
        samples.push({ finished: client.scheduler.taskStream.index, heapMB: process.memoryUsage().heapUsed / 2 ** 20 });
      };
      const sampler = setInterval(sample, 2000);
      try {
        const start = performance.now();
        const result = await get(graph, level[0]);
        const seconds = (performance.now() - start) / 1000;
        if (result !== leaves) throw new Error(`the reduction gave ${result}, expected ${leaves}`);
        sample();
        return { tasks, seconds, samples };
      } finally {
        clearInterval(sampler);
      }
    },
    { taskStreamLength },
  );
}

/** Live heap growth per finished task between 10 % and 95 % of the tasks done (all queued, the end's gathering not started). */
function heapGrowth(samples: readonly MemorySample[], tasks: number): number {
  const steady = samples.filter((sample) => sample.finished >= 0.1 * tasks && sample.finished <= 0.95 * tasks);
  const [first, last] = [steady[0], steady[steady.length - 1]];
  return first === undefined || last === first ? 0 : ((last.heapMB - first.heapMB) * 2 ** 20) / Math.max(1, last.finished - first.finished);
}

/** The seeds' QR example: qr of a 10000×1000 random array in 1000×1000 chunks, then q·r. */
async function qrSeconds(): Promise<number> {
  const a = da.random.random([10000, 1000], { chunks: [1000, 1000], seed: run++ });
  const [q, r] = da.linalg.qr(a);
  const start = performance.now();
  await q.dot(r).compute();
  return (performance.now() - start) / 1000;
}

/** A figure and the CPU every process involved used for it (this one, the workers, redis-server). */
interface Measured {
  readonly value: number;
  readonly cpuMsPerTask: number;
}

async function measured(pids: readonly number[], tasks: number, body: () => Promise<number>): Promise<Measured> {
  const cpu = (): number => {
    const own = process.cpuUsage();
    return (own.user + own.system) / 1e6 + pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  };
  const before = cpu();
  const value = await body();
  return { value, cpuMsPerTask: ((cpu() - before) * 1000) / tasks };
}

/** One round: the floor's and tsdask's latency and throughput, back to back. */
interface Round {
  readonly floorLatency: Measured;
  readonly redisLatency: Measured;
  readonly floorRate: Measured;
  readonly redisRate: Measured;
}

interface Row {
  readonly workers: number;
  readonly rounds: readonly Round[];
  readonly localLatency: number;
  readonly localRate: number;
}

/**
 * `rounds` rounds with `workerCount` worker processes each side, the floor's BullMQ workers and
 * tsdask's serving the same redis-server, idle while the other side runs. The side that goes first
 * alternates, so a load that drifts sways both alike. A round that fails (a floor job timed out)
 * is dropped and said so.
 */
async function measureRounds(server: RedisServer, workerCount: number, rounds: number, chainLength: number, taskCount: number): Promise<Round[]> {
  return onRedis(server, workerCount, async (_client, workers) => {
    const floor = await Floor.start(server.url, workerCount);
    try {
      const floorPids = [...floor.workers.map((child) => child.pid!), server.pid];
      const redisPids = [...workers.map((worker) => worker.pid), server.pid];
      await floor.latency(WARM_UP_CHAIN * workerCount);
      await floor.throughput(WARM_UP_TASKS * workerCount);
      await warmUp(workerCount);
      const done: Round[] = [];
      for (let round = 0; round < rounds; round++) {
        try {
          const floorLatency = (): Promise<Measured> => measured(floorPids, chainLength, () => floor.latency(chainLength));
          const redisLatency = (): Promise<Measured> => measured(redisPids, chainLength, () => latency(chainLength));
          const floorRate = (): Promise<Measured> => measured(floorPids, taskCount, () => floor.throughput(taskCount));
          const redisRate = (): Promise<Measured> => measured(redisPids, taskCount, () => throughput(taskCount));
          if (round % 2 === 0) {
            const [fl, rl, fr, rr] = [await floorLatency(), await redisLatency(), await floorRate(), await redisRate()];
            done.push({ floorLatency: fl, redisLatency: rl, floorRate: fr, redisRate: rr });
          } else {
            const [rl, fl, rr, fr] = [await redisLatency(), await floorLatency(), await redisRate(), await floorRate()];
            done.push({ floorLatency: fl, redisLatency: rl, floorRate: fr, redisRate: rr });
          }
        } catch (error) {
          console.log(`${workerCount} worker(s), round ${round + 1} dropped: ${(error as Error).message}`);
        }
      }
      if (done.length === 0) throw new Error(`every round with ${workerCount} worker(s) failed`);
      return done;
    } finally {
      await floor.close();
    }
  });
}

/** The median of tsdask's figure over the floor's, each round's pair taken back to back; and the range. */
function pairedRatio(rounds: readonly Round[], ratio: (round: Round) => number): { median: number; low: number; high: number } {
  const ratios = rounds.map(ratio);
  return { median: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios) };
}

const TARGET = 1.5;

async function main(): Promise<void> {
  const [chainArg, tasksArg] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
  const chainLength = Number(chainArg ?? 1000);
  const taskCount = Number(tasksArg ?? 5000);
  const roundsArg = process.argv.find((arg) => arg.startsWith("--rounds="));
  const rounds = roundsArg === undefined ? 5 : Number(roundsArg.slice("--rounds=".length));
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error(`--rounds= takes a whole number ≥ 1, got ${roundsArg}`);
  const workersArg = process.argv.find((arg) => arg.startsWith("--workers="));
  const workerCounts = workersArg === undefined ? WORKER_COUNTS : workersArg.slice("--workers=".length).split(",").map(Number);
  if (!workerCounts.every((count) => Number.isInteger(count) && count >= 1)) throw new Error(`--workers= takes worker counts such as 1,2,4, got ${workersArg}`);
  if ((globalThis as { gc?: unknown }).gc === undefined) console.log("(run with --expose-gc for live-heap samples)");
  const server = await startRedisServer();
  try {
    console.log(`Redis ${server.url}; every worker process has 1 thread, every BullMQ floor worker concurrency 1`);
    console.log(`${rounds} rounds per worker count, the floor and tsdask interleaved (the side going first alternates); figures are medians over the rounds`);
    const rows: Row[] = [];
    for (const workers of workerCounts) {
      const done = await measureRounds(server, workers, rounds, chainLength, taskCount);
      const [localLatency, localRate] = await onLocalCluster(workers, "bench-redis", async () => {
        await warmUp(workers);
        return [await latency(chainLength), await throughput(taskCount)];
      });
      rows.push({ workers, rounds: done, localLatency, localRate });
    }
    const verdict = (ratio: number): string => (ratio <= TARGET ? "met" : "NOT met");
    const med = (row: Row, pick: (round: Round) => number): number => median(row.rounds.map(pick));
    const latencyRatios = rows.map((row) => pairedRatio(row.rounds, (round) => round.redisLatency.value / round.floorLatency.value));
    const rateRatios = rows.map((row) => pairedRatio(row.rounds, (round) => round.floorRate.value / round.redisRate.value));

    console.log(`\nlatency: a chain of ${chainLength} tasks, each waiting for the previous (ms per task; the floor: a BullMQ job added when the previous one's completion event arrived)`);
    printTable(
      ["worker processes", "BullMQ floor", "tsdask on Redis", "× floor", "× floor, rounds' range", `≤ ${TARGET}× floor`, "LocalCluster", "Redis ÷ LocalCluster"],
      rows.map((row, i) => [
        String(row.workers),
        med(row, (round) => round.floorLatency.value) * 1e3,
        med(row, (round) => round.redisLatency.value) * 1e3,
        latencyRatios[i].median,
        `${latencyRatios[i].low.toFixed(2)}–${latencyRatios[i].high.toFixed(2)}`,
        verdict(latencyRatios[i].median),
        row.localLatency * 1e3,
        med(row, (round) => round.redisLatency.value) / row.localLatency,
      ]),
    );
    console.log(`\nthroughput: ${taskCount} independent tasks submitted at once, every result gathered (tasks per second)`);
    printTable(
      ["worker processes", "BullMQ floor /s", "tsdask on Redis /s", "floor ÷ Redis", "floor ÷ Redis, rounds' range", `≤ ${TARGET}×`, "LocalCluster /s", "LocalCluster ÷ Redis"],
      rows.map((row, i) => [
        String(row.workers),
        med(row, (round) => round.floorRate.value),
        med(row, (round) => round.redisRate.value),
        rateRatios[i].median,
        `${rateRatios[i].low.toFixed(2)}–${rateRatios[i].high.toFixed(2)}`,
        verdict(rateRatios[i].median),
        row.localRate,
        row.localRate / med(row, (round) => round.redisRate.value),
      ]),
    );
    console.log("\nCPU per task, ms: this process + the worker processes (all their threads) + redis-server, from /proc; less swayed by a loaded machine than wall times");
    printTable(
      ["worker processes", "floor chain", "tsdask chain", "floor independent", "tsdask independent"],
      rows.map((row) => [
        String(row.workers),
        med(row, (round) => round.floorLatency.cpuMsPerTask),
        med(row, (round) => round.redisLatency.cpuMsPerTask),
        med(row, (round) => round.floorRate.cpuMsPerTask),
        med(row, (round) => round.redisRate.cpuMsPerTask),
      ]),
    );

    const worst = Math.max(...latencyRatios.map((ratio) => ratio.median), ...rateRatios.map((ratio) => ratio.median));
    console.log(`\nworst median ratio to the floor ${worst.toFixed(2)} (target ≤ ${TARGET}): ${verdict(worst)}`);
    if (process.argv.includes("--ratios-only")) return;

    const qr = {
      threads: await (async () => {
        await qrSeconds();
        return Math.min(await qrSeconds(), await qrSeconds());
      })(),
      redis: await onRedis(server, 2, async () => {
        await qrSeconds();
        return Math.min(await qrSeconds(), await qrSeconds());
      }),
      local: await onLocalCluster(2, "bench-redis", async () => {
        await qrSeconds();
        return Math.min(await qrSeconds(), await qrSeconds());
      }),
    };
    console.log("\nthe seeds' QR example (qr of 10000×1000 in 1000×1000 chunks, then q·r), best of 2 after a warm-up");
    printTable(
      ["", "seconds", "× threads"],
      [
        ["threads scheduler (this process)", qr.threads, 1],
        ["LocalCluster, 2 workers × 1 thread", qr.local, qr.local / qr.threads],
        ["Redis, 2 workers × 1 thread", qr.redis, qr.redis / qr.threads],
      ],
    );

    const big = await bigGraph(server, 99_000, undefined);
    const growth = heapGrowth(big.samples, big.tasks);
    console.log(`\n${big.tasks} tasks (a tree reduction, fan-in 100) on 2 worker processes: ${big.seconds.toFixed(1)} s, ${(big.tasks / big.seconds).toFixed(0)} tasks/s`);
    printTable(
      ["tasks finished", "client live heap MB"],
      big.samples.map((sample) => [String(sample.finished), sample.heapMB]),
    );
    console.log(`live heap growth per finished task (10–95 % done): ${growth.toFixed(1)} bytes (the task stream keeps the last 100 000 records, as Dask's)`);

    console.log(JSON.stringify({ bench: "redis", chain: chainLength, tasks: taskCount, rows, qr, big: { tasks: big.tasks, seconds: big.seconds, heapGrowthBytesPerTask: growth, samples: big.samples } }));
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
