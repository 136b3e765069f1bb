// A Redis cluster through the Client against a bare BullMQ floor measured in the same run, on a
// redis-server of its own, and against LocalCluster: per-task latency (a chain, each task waiting
// for the one before) and throughput (independent tasks) with 1, 2 and 4 worker processes of one
// thread each (target: within 1.5× of the floor); a 100 000-task graph whose client memory must
// not grow with the tasks that finished; the seeds' QR example.
// Run: npm run bench -- redis   (or node --expose-gc build/bench/redis.js [chain] [tasks] after compiling)

import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { Queue, QueueEvents } from "bullmq";
import { Client, LocalCluster, get } from "../src";
import * as da from "../src/kernel/collections/array";
import { redisOptions, parseRedisUrl } from "../src/kernel/distributed/redis/connection";
import { inc } from "../test/fixtures/tasks";
import { killOnExit } from "../test/helpers/children";
import { type RedisServer, startRedisServer } from "../test/helpers/redis-server";
import { type WorkerProcess, startWorker } from "../test/helpers/redis-workers";
import { printTable } from "./harness";

const WORKER_COUNTS = [1, 2, 4] as const;
/** Threads per tsdask worker, and BullMQ concurrency per floor worker. */
const CONCURRENCY = 1;
const FLOOR_WORKER = join(__dirname, "../test/helpers/bullmq-floor-worker.js");

// ---- The floor: BullMQ alone ---------------------------------------------------------------

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

/** Seconds per job, adding each job when the previous one completed. */
async function floorLatency(url: string, jobs: number, workerCount: number): Promise<number> {
  const name = `floor-latency-${workerCount}`;
  const workers = await startFloorWorkers(url, name, workerCount);
  const queue = new Queue(name, { connection: redisOptions(parseRedisUrl(url)) });
  const events = new QueueEvents(name, { connection: redisOptions(parseRedisUrl(url)) });
  await events.waitUntilReady();
  try {
    const run = async (count: number): Promise<number> => {
      const start = performance.now();
      let x = 0;
      for (let i = 0; i < count; i++) {
        // Completed jobs are kept a while: waitUntilFinished looks the job up after it finished.
        const job = await queue.add("inc", { x }, { removeOnComplete: { count: 100 } });
        x = (await job.waitUntilFinished(events)) as number;
      }
      if (x !== count) throw new Error(`floor chain ended at ${x}, expected ${count}`);
      return (performance.now() - start) / 1000 / count;
    };
    await run(50);
    return await run(jobs);
  } finally {
    await events.close();
    await queue.obliterate({ force: true });
    await queue.close();
    await stopAll(workers);
  }
}

/** Jobs per second: all added at once, until the last completed. */
async function floorThroughput(url: string, workerCount: number, jobs: number): Promise<number> {
  const name = `floor-throughput-${workerCount}`;
  const workers = await startFloorWorkers(url, name, workerCount);
  const queue = new Queue(name, { connection: redisOptions(parseRedisUrl(url)) });
  try {
    const run = async (count: number): Promise<number> => {
      const before = await queue.getCompletedCount();
      const start = performance.now();
      await queue.addBulk(Array.from({ length: count }, (_, x) => ({ name: "inc", data: { x } })));
      while ((await queue.getCompletedCount()) < before + count) await new Promise((resolve) => setTimeout(resolve, 2));
      return count / ((performance.now() - start) / 1000);
    };
    await run(200);
    return await run(jobs);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
    await stopAll(workers);
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

/** Seconds per task of a chain (after a warm-up chain), on whatever scheduler `get` uses now. */
async function latency(length: number): Promise<number> {
  const warm = chain(50);
  await get(warm.graph, warm.last);
  const { graph, last } = chain(length);
  const start = performance.now();
  const result = await get(graph, last);
  if (result !== length) throw new Error(`chain ended at ${result}, expected ${length}`);
  return (performance.now() - start) / 1000 / length;
}

/** Tasks per second, all submitted at once and every result gathered. */
async function throughput(tasks: number): Promise<number> {
  const warm = independent(200);
  await get(warm.graph, warm.keys);
  const { graph, keys } = independent(tasks);
  const start = performance.now();
  const results = (await get(graph, keys)) as number[];
  const seconds = (performance.now() - start) / 1000;
  if (results[tasks - 1] !== tasks) throw new Error(`last result ${results[tasks - 1]}, expected ${tasks}`);
  return tasks / seconds;
}

/** Connects a Client to Redis with `count` one-thread workers serving it, for `body`. */
async function onRedis<T>(server: RedisServer, count: number, body: (client: Client) => Promise<T>, options: { readonly taskStreamLength?: number } = {}): Promise<T> {
  const workers: WorkerProcess[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await startWorker(server.url, { name: `bench-${count}-${i}`, nthreads: 1 }));
    const client = await Client.connect(server.url, { name: "bench", ...options });
    try {
      return await body(client);
    } finally {
      await client.close();
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

async function onLocalCluster<T>(count: number, body: (client: Client) => Promise<T>): Promise<T> {
  const cluster = await LocalCluster.start({ nWorkers: count, threadsPerWorker: 1, name: "bench-redis", dashboardAddress: null });
  try {
    const client = await Client.connect(cluster);
    try {
      return await body(client);
    } finally {
      await client.close();
    }
  } finally {
    await cluster.close();
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

async function main(): Promise<void> {
  const chainLength = Number(process.argv[2] ?? 1000);
  const taskCount = Number(process.argv[3] ?? 5000);
  if ((globalThis as { gc?: unknown }).gc === undefined) console.log("(run with --expose-gc for live-heap samples)");
  const server = await startRedisServer();
  try {
    console.log(`Redis ${server.url}; every worker process has 1 thread, every BullMQ floor worker concurrency 1`);
    const rows: { workers: number; floorLatency: number; redisLatency: number; localLatency: number; floor: number; redis: number; local: number }[] = [];
    for (const workers of WORKER_COUNTS) {
      const floorLatencySeconds = await floorLatency(server.url, chainLength, workers);
      const floorRate = await floorThroughput(server.url, workers, taskCount);
      const [redisLatency, redisRate] = await onRedis(server, workers, async () => [await latency(chainLength), await throughput(taskCount)]);
      const [localLatency, localRate] = await onLocalCluster(workers, async () => [await latency(chainLength), await throughput(taskCount)]);
      rows.push({ workers, floorLatency: floorLatencySeconds, redisLatency, localLatency, floor: floorRate, redis: redisRate, local: localRate });
    }
    console.log(`\nlatency: a chain of ${chainLength} tasks, each waiting for the previous (ms per task)`);
    printTable(
      ["worker processes", "BullMQ floor", "tsdask on Redis", "× floor", "LocalCluster", "Redis ÷ LocalCluster"],
      rows.map((row) => [String(row.workers), row.floorLatency * 1e3, row.redisLatency * 1e3, row.redisLatency / row.floorLatency, row.localLatency * 1e3, row.redisLatency / row.localLatency]),
    );
    console.log(`\nthroughput: ${taskCount} independent tasks submitted at once, every result gathered (tasks per second)`);
    printTable(
      ["worker processes", "BullMQ floor /s", "tsdask on Redis /s", "floor ÷ Redis", "LocalCluster /s", "LocalCluster ÷ Redis"],
      rows.map((row) => [String(row.workers), row.floor, row.redis, row.floor / row.redis, row.local, row.local / row.redis]),
    );

    const qr = {
      threads: await (async () => {
        await qrSeconds();
        return Math.min(await qrSeconds(), await qrSeconds());
      })(),
      redis: await onRedis(server, 2, async () => {
        await qrSeconds();
        return Math.min(await qrSeconds(), await qrSeconds());
      }),
      local: await onLocalCluster(2, async () => {
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

    const ratios = rows.flatMap((row) => [row.redisLatency / row.floorLatency, row.floor / row.redis]);
    const worst = Math.max(...ratios);
    console.log(`worst ratio to the floor ${worst.toFixed(2)} (target ≤ 1.5): ${worst <= 1.5 ? "met" : "NOT met"}`);
    console.log(JSON.stringify({ bench: "redis", chain: chainLength, tasks: taskCount, rows, qr, big: { tasks: big.tasks, seconds: big.seconds, heapGrowthBytesPerTask: growth, samples: big.samples } }));
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
