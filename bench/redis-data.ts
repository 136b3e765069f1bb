// The Redis data plane beside LocalCluster, in one run (issue 27's targets):
// - the seeds' QR example (10000×1000 in 1000×1000 chunks, then q·r) on 2 Redis workers against
//   LocalCluster(2 workers × 1 thread), both up at once and taking turns: target ≤ 1.25×; and
//   redis-server's memory above idle while it runs (INFO used_memory, sampled every 20 ms):
//   target ≤ 64 MiB;
// - an all-to-all exchange: 16 producers each make 16 blocks of 4 MiB (1 GiB in all), then 16
//   consumers each take one block from every producer, so about half the bytes cross between
//   the two workers; peer bandwidth (bytes the workers' incoming transfer logs moved ÷ the time
//   at least one transfer was under way) against this machine's memcpy floor (one 4 MiB block
//   copied into fresh memory, as bench/worker-transfer and bench/cluster measure it): target
//   ≥ 0.5; beside it the consumers' end-to-end figure (the same bytes ÷ the consumers' wall
//   time, which also pays for handing inputs to task threads), for blocks in plain
//   memory and in shared memory (as tsdask/array's), and the ceiling under both: raw Node sockets
//   between two processes sending each other as much at once (./loopback).
// Run: npm run bench -- redis-data; `npm run bench -- redis-data exchange` runs the all-to-all
// exchange alone (the QR part takes minutes).

import { Redis } from "ioredis";
import { Client, type Future } from "../src";
import * as da from "../src/kernel/collections/array";
import type { TransferLogEntry } from "../src/protocol/records";
import { type RedisServer, startRedisServer } from "../test/helpers/redis-server";
import { type WorkerProcess, startWorker } from "../test/helpers/redis-workers";
import { block, firstElements, incomingTransfers, sharedBlock } from "./graphs";
import { median, onLocalCluster, printTable } from "./harness";
import { bestLoopback } from "./loopback";
import { memcpyFloor } from "./worker-transfer";

const WORKERS = 2;
const PRODUCERS = 16;
const BLOCK_BYTES = 4 * 2 ** 20;
const MiB = 2 ** 20;

/** Seconds of the seeds' QR example on `scheduler`. */
async function qrSeconds(seed: number, scheduler: Client): Promise<number> {
  const a = da.random.random([10000, 1000], { chunks: [1000, 1000], seed });
  const [q, r] = da.linalg.qr(a);
  const start = performance.now();
  await q.dot(r).compute({ scheduler });
  return (performance.now() - start) / 1000;
}

/** Each worker's incoming transfer log. */
async function incomingLogs(client: Client): Promise<Record<string, readonly TransferLogEntry[]>> {
  return (await client.run(incomingTransfers)) as Record<string, readonly TransferLogEntry[]>;
}

/** The entries each worker logged after `before` (the logs then). */
function loggedSince(before: Record<string, readonly TransferLogEntry[]>, after: Record<string, readonly TransferLogEntry[]>): TransferLogEntry[] {
  return Object.entries(after).flatMap(([worker, log]) => log.slice(before[worker]?.length ?? 0));
}

interface Exchange {
  /** The consumers' wall time, from submitting them to having their results. */
  readonly seconds: number;
  /** Seconds during which at least one of the consumers' input transfers was under way (any worker). */
  readonly transferSeconds: number;
  /** Bytes the consumers' inputs moved between processes (the workers' incoming transfer logs). */
  readonly bytesMoved: number;
  /** Who sent them: peer worker names/addresses, or "redis". */
  readonly senders: readonly string[];
}

/** The union of the entries' [start, stop] intervals, in seconds. */
function busySeconds(entries: readonly TransferLogEntry[]): number {
  const sorted = [...entries].sort((a, b) => a.start - b.start);
  let busy = 0;
  let current: { start: number; stop: number } | undefined;
  for (const { start, stop } of sorted) {
    if (current !== undefined && start <= current.stop) {
      current.stop = Math.max(current.stop, stop);
      continue;
    }
    if (current !== undefined) busy += current.stop - current.start;
    current = { start, stop };
  }
  return current === undefined ? busy : busy + current.stop - current.start;
}

/** A sender as the table shows it: a LocalCluster worker's socket file without its folder. */
function senderName(who: string): string {
  return who.startsWith("unix://") ? who.slice(who.lastIndexOf("/") + 1) : who;
}

const BLOCK_KINDS = { plain: block, shared: sharedBlock } as const;
type BlockKind = keyof typeof BLOCK_KINDS;

/** The all-to-all exchange of `kind` blocks: producers made and held first, then the consumers timed. */
async function allToAll(client: Client, kind: BlockKind): Promise<Exchange> {
  const parts: Future<Float64Array>[][] = [];
  for (let p = 0; p < PRODUCERS; p++) {
    const keys = Array.from({ length: PRODUCERS }, (_, j) => `${kind}-block-${p}-${j}`);
    parts.push(client.map(BLOCK_KINDS[kind], Array(PRODUCERS).fill(BLOCK_BYTES), Array(PRODUCERS).fill(p), { key: keys }));
  }
  // Settled, nothing fetched: the blocks stay on the workers that made them.
  await Promise.all(parts.flat().map((future) => future.exception()));
  const before = await incomingLogs(client);
  const start = performance.now();
  const sums = await client.gather(Array.from({ length: PRODUCERS }, (_, j) => client.submit(firstElements, ...parts.map((row) => row[j]))));
  const seconds = (performance.now() - start) / 1000;
  const expected = (PRODUCERS * (PRODUCERS - 1)) / 2;
  if (!sums.every((sum) => sum === expected)) throw new Error(`a consumer got wrong inputs: ${JSON.stringify(sums)}`);
  const moved = loggedSince(before, await incomingLogs(client));
  for (const row of parts) for (const future of row) future.release();
  return { seconds, transferSeconds: busySeconds(moved), bytesMoved: moved.reduce((sum, entry) => sum + entry.total, 0), senders: [...new Set(moved.map((entry) => entry.who))] };
}

/** redis-server's used_memory, sampled every 20 ms while `body` runs: its idle figure before, and the peak. */
async function redisMemoryDuring<T>(url: string, body: () => Promise<T>): Promise<{ result: T; idle: number; peak: number }> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  const used = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
  try {
    const idle = await used();
    let peak = idle;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await used());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      const result = await body();
      return { result, idle, peak };
    } finally {
      sampling = false;
      await sampler;
    }
  } finally {
    redis.disconnect();
  }
}

async function onRedis<T>(server: RedisServer, body: (client: Client) => Promise<T>): Promise<T> {
  const workers: WorkerProcess[] = [];
  try {
    for (let i = 0; i < WORKERS; i++) workers.push(await startWorker(server.url, { name: `data-${i}`, nthreads: 1 }));
    const client = await Client.connect(server.url, { name: "bench-data" });
    try {
      return await body(client);
    } finally {
      await client.close();
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

/** Both block kinds' exchanges on one cluster. */
async function exchanges(client: Client): Promise<Record<BlockKind, Exchange>> {
  return { plain: await allToAll(client, "plain"), shared: await allToAll(client, "shared") };
}

/**
 * Timed runs of the QR example on each cluster. One run of ~5–10 s on a shared 2-core machine
 * swings by a third either way, so both clusters stay up and take turns (after a warm-up run
 * each), and the medians are compared: whatever else the machine does then falls on both.
 */
const QR_ROUNDS = 3;

/** The QR example on both clusters, with its table. */
async function qr(server: RedisServer): Promise<{ local: number[]; redis: number[]; redisAboveIdle: number }> {
  const { local, redis, redisAboveIdle } = await onLocalCluster(WORKERS, "bench-data", (localClient) =>
    onRedis(server, async (redisClient) => {
      await qrSeconds(1, localClient);
      await qrSeconds(1, redisClient);
      const runs = { local: [] as number[], redis: [] as number[], redisAboveIdle: 0 };
      for (let round = 0; round < QR_ROUNDS; round++) {
        runs.local.push(await qrSeconds(2 + round, localClient));
        const memory = await redisMemoryDuring(server.url, () => qrSeconds(2 + round, redisClient));
        runs.redis.push(memory.result);
        runs.redisAboveIdle = Math.max(runs.redisAboveIdle, memory.peak - memory.idle);
      }
      return runs;
    }),
  );
  console.log(`\nthe seeds' QR example (qr of 10000×1000 in 1000×1000 chunks, then q·r): median of ${QR_ROUNDS} runs taking turns, after a warm-up run`);
  const qrRatio = median(redis) / median(local);
  const redisAbove = redisAboveIdle / MiB;
  const runsText = (runs: number[]): string => runs.map((seconds) => seconds.toFixed(2)).join(" / ");
  printTable(
    ["cluster", "seconds", "runs", "× LocalCluster", "redis-server above idle, MiB (highest)"],
    [
      ["LocalCluster", median(local), runsText(local), 1, "-"],
      ["Redis", median(redis), runsText(redis), qrRatio, redisAbove],
    ],
  );
  console.log(`QR ≤ 1.25× LocalCluster: ${qrRatio <= 1.25 ? "met" : "NOT met"}; Redis memory ≤ 64 MiB above idle: ${redisAbove <= 64 ? "met" : "NOT met"}`);
  return { local, redis, redisAboveIdle };
}

async function main(): Promise<void> {
  const part = process.argv[2];
  if (part !== undefined && part !== "exchange") throw new TypeError(`bench redis-data: unknown part ${JSON.stringify(part)} (give none for everything, or "exchange")`);
  const floor = memcpyFloor(BLOCK_BYTES / Float64Array.BYTES_PER_ELEMENT);
  const loopback = { tcp: await bestLoopback("tcp", true), unix: await bestLoopback("unix", true) };
  const server = await startRedisServer();
  try {
    console.log(`2 workers × 1 thread each; memcpy floor ${(floor / MiB).toFixed(0)} MiB/s`);
    const qrFigures = part === "exchange" ? undefined : await qr(server);
    const localExchange = await onLocalCluster(WORKERS, "bench-data", exchanges);
    const redisExchange = await onRedis(server, (client) => redisMemoryDuring(server.url, () => exchanges(client)));

    console.log(`\nall-to-all: ${PRODUCERS} producers × ${PRODUCERS} blocks of ${BLOCK_BYTES / MiB} MiB, ${PRODUCERS} consumers each taking one block of every producer`);
    console.log(`raw Node sockets between two processes, both ways at once (./loopback): tcp ${(loopback.tcp / MiB).toFixed(0)} MiB/s, unix ${(loopback.unix / MiB).toFixed(0)} MiB/s`);
    const rows: [string, BlockKind, Exchange, number, { idle: number; peak: number } | undefined][] = [];
    for (const kind of ["plain", "shared"] as const) {
      rows.push(["LocalCluster", kind, localExchange[kind], loopback.unix, undefined]);
      rows.push(["Redis", kind, redisExchange.result[kind], loopback.tcp, redisExchange]);
    }
    printTable(
      ["cluster", "blocks", "MiB moved", "peer MiB/s", "÷ memcpy floor", "÷ raw sockets", "consumers' s", "consumers' MiB/s", "sent by", "redis-server above idle, MiB"],
      rows.map(([name, kind, exchange, raw, memory]) => [
        name,
        kind,
        exchange.bytesMoved / MiB,
        exchange.bytesMoved / MiB / exchange.transferSeconds,
        exchange.bytesMoved / exchange.transferSeconds / floor,
        exchange.bytesMoved / exchange.transferSeconds / raw,
        exchange.seconds,
        exchange.bytesMoved / MiB / exchange.seconds,
        exchange.senders.length > 2 ? `${exchange.senders.length} peers` : exchange.senders.map(senderName).join(", "),
        memory === undefined ? "-" : (memory.peak - memory.idle) / MiB,
      ]),
    );
    const redisShare = redisExchange.result.plain.bytesMoved / redisExchange.result.plain.transferSeconds / floor;
    console.log(`peer bandwidth ≥ 0.5 of the memcpy floor on Redis workers: ${redisShare >= 0.5 ? "met" : "NOT met"} (${redisShare.toFixed(2)}; raw TCP both ways: ${(loopback.tcp / floor).toFixed(2)})`);
    console.log(
      JSON.stringify({
        bench: "redis-data",
        floor,
        loopback,
        local: { qr: qrFigures?.local, exchange: localExchange },
        redis: { qr: qrFigures?.redis, redisAboveIdleQr: qrFigures?.redisAboveIdle, exchange: redisExchange.result, redisPeakExchange: redisExchange.peak },
      }),
    );
  } finally {
    await server.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
