// The Redis cluster against a bare BullMQ floor measured in the same run, on a redis-server of
// its own: per-task latency (a chain, each task waiting for the one before) and throughput
// (independent tasks) with 1, 2 and 4 worker processes (target: within 1.5× of the floor); and
// a 100 000-task graph whose client memory must not grow with the tasks that finished.
// Run: npm run bench -- redis   (or node --expose-gc build/bench/redis.js [chain] [tasks] after compiling)

import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { Queue, QueueEvents } from "bullmq";
import { redisOptions, parseRedisUrl } from "../src/kernel/distributed/redis/connection";
import { RedisTransport } from "../src/kernel/distributed/redis/transport";
import { inc } from "../test/fixtures/tasks";
import { killOnExit } from "../test/helpers/children";
import { planRunner } from "../test/helpers/redis-plan";
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
async function floorLatency(url: string, jobs: number): Promise<number> {
  const name = "floor-latency";
  const workers = await startFloorWorkers(url, name, 1);
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

// ---- tsdask on Redis -----------------------------------------------------------------------

async function withWorkers<T>(server: RedisServer, count: number, body: () => Promise<T>): Promise<T> {
  const workers: WorkerProcess[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await startWorker(server.url, { name: `bench-${count}-${i}`, nthreads: CONCURRENCY }));
    return await body();
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

function chain(length: number): Record<string, unknown> {
  const graph: Record<string, unknown> = { "x-0": 0 };
  for (let i = 1; i <= length; i++) graph[`x-${i}`] = [inc, `x-${i - 1}`];
  return graph;
}

function independent(count: number): { graph: Record<string, unknown>; keys: string[] } {
  const graph: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) graph[`t-${i}`] = [inc, i];
  return { graph, keys: Object.keys(graph) };
}

async function tsdaskLatency(server: RedisServer, length: number): Promise<number> {
  return withWorkers(server, 1, async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport, { keepRecords: false });
      await runner.compute(chain(50), "x-50");
      const start = performance.now();
      const result = await runner.compute(chain(length), `x-${length}`);
      if (result !== length) throw new Error(`chain ended at ${result}, expected ${length}`);
      return (performance.now() - start) / 1000 / length;
    } finally {
      await transport.close();
    }
  });
}

async function tsdaskThroughput(server: RedisServer, workerCount: number, tasks: number): Promise<number> {
  return withWorkers(server, workerCount, async () => {
    const transport = await RedisTransport.connect(server.url);
    try {
      const runner = await planRunner(transport, { keepRecords: false });
      const warm = independent(200);
      await runner.compute(warm.graph, warm.keys);
      const { graph, keys } = independent(tasks);
      const start = performance.now();
      const results = (await runner.compute(graph, keys)) as number[];
      const seconds = (performance.now() - start) / 1000;
      if (results[tasks - 1] !== tasks) throw new Error(`last result ${results[tasks - 1]}, expected ${tasks}`);
      return tasks / seconds;
    } finally {
      await transport.close();
    }
  });
}

interface MemorySample {
  readonly finished: number;
  readonly heapMB: number;
}

/** A tree reduction of ~100 000 tasks; the client's live heap sampled as tasks finish. */
async function bigGraph(server: RedisServer, leaves: number): Promise<{ tasks: number; seconds: number; samples: MemorySample[] }> {
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
  return withWorkers(server, 2, async () => {
    const transport = await RedisTransport.connect(server.url);
    const samples: MemorySample[] = [];
    const gc = (globalThis as { gc?: () => void }).gc;
    const sample = (): void => {
      gc?.();
      samples.push({ finished: runner.record.finishedCount, heapMB: process.memoryUsage().heapUsed / 2 ** 20 });
    };
    const runner = await planRunner(transport, { keepRecords: false });
    const sampler = setInterval(sample, 2000);
    try {
      const start = performance.now();
      const result = await runner.compute(graph, level[0]);
      const seconds = (performance.now() - start) / 1000;
      if (result !== leaves) throw new Error(`the reduction gave ${result}, expected ${leaves}`);
      sample();
      return { tasks, seconds, samples };
    } finally {
      clearInterval(sampler);
      await transport.close();
    }
  });
}

async function main(): Promise<void> {
  const chainLength = Number(process.argv[2] ?? 1000);
  const taskCount = Number(process.argv[3] ?? 5000);
  if ((globalThis as { gc?: unknown }).gc === undefined) console.log("(run with --expose-gc for live-heap samples)");
  const server = await startRedisServer();
  try {
    const floorSecondsPerTask = await floorLatency(server.url, chainLength);
    const tsdaskSecondsPerTask = await tsdaskLatency(server, chainLength);
    console.log(`Redis ${server.url}, one worker process, ${CONCURRENCY} thread(s) / BullMQ concurrency per process`);
    console.log(`\nlatency: a chain of ${chainLength} tasks, each waiting for the previous (ms per task)`);
    printTable(
      ["", "ms/task", "× floor"],
      [
        ["BullMQ add → completed (floor)", floorSecondsPerTask * 1e3, 1],
        ["tsdask task on Redis", tsdaskSecondsPerTask * 1e3, tsdaskSecondsPerTask / floorSecondsPerTask],
      ],
    );
    const throughput: { workers: number; floor: number; tsdask: number }[] = [];
    for (const workers of WORKER_COUNTS) {
      const floor = await floorThroughput(server.url, workers, taskCount);
      const tsdask = await tsdaskThroughput(server, workers, taskCount);
      throughput.push({ workers, floor, tsdask });
    }
    console.log(`\nthroughput: ${taskCount} independent tasks added at once (tasks per second; tsdask also gathers every result)`);
    printTable(
      ["worker processes", "BullMQ floor /s", "tsdask /s", "floor ÷ tsdask"],
      throughput.map(({ workers, floor, tsdask }) => [String(workers), floor, tsdask, floor / tsdask]),
    );
    const big = await bigGraph(server, 99_000);
    console.log(`\n${big.tasks} tasks (a tree reduction, fan-in 100) on 2 worker processes: ${big.seconds.toFixed(1)} s, ${(big.tasks / big.seconds).toFixed(0)} tasks/s`);
    printTable(
      ["tasks finished", "client live heap MB"],
      big.samples.map((sample) => [String(sample.finished), sample.heapMB]),
    );
    // Between 10 % and 95 % of the tasks done: all jobs queued, the end's gathering not started.
    const steady = big.samples.filter((sample) => sample.finished >= 0.1 * big.tasks && sample.finished <= 0.95 * big.tasks);
    const [first, last] = [steady[0], steady[steady.length - 1]];
    const growth = first === undefined || last === first ? 0 : ((last.heapMB - first.heapMB) * 2 ** 20) / Math.max(1, last.finished - first.finished);
    console.log(`live heap growth per finished task (10–95 % done): ${growth.toFixed(1)} bytes`);
    const ratios = [tsdaskSecondsPerTask / floorSecondsPerTask, ...throughput.map(({ floor, tsdask }) => floor / tsdask)];
    const worst = Math.max(...ratios);
    console.log(`worst ratio to the floor ${worst.toFixed(2)} (target ≤ 1.5): ${worst <= 1.5 ? "met" : "NOT met"}`);
    console.log(
      JSON.stringify({
        bench: "redis",
        latency: { chain: chainLength, floorMs: floorSecondsPerTask * 1e3, tsdaskMs: tsdaskSecondsPerTask * 1e3 },
        throughput,
        big: { tasks: big.tasks, seconds: big.seconds, heapGrowthBytesPerTask: growth, samples: big.samples },
      }),
    );
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
