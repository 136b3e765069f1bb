// Peer transfer of 8 MB float64 blocks between two cluster workers (real processes, real
// sockets), beside Dask's LocalCluster(2x1) and a memcpy floor measured in the same run.
// The workers are driven by the tests' stand-in scheduler, so this measures the worker-to-worker
// path alone; bench/cluster.ts can call measurePeerTransfer() for its tables.
// Run: npm run bench -- worker-transfer   (Dask's side needs python3-distributed: TSDASK_DISTRIBUTED_PYTHON, default /usr/bin/python3)

import type { TransferLogEntry } from "../src/protocol/records";
import { FakeScheduler, moduleFunction } from "../test/helpers/worker-driver";
import { printTable, runPython } from "./harness";

export interface TransferFigures {
  /** Bytes per second of each transfer, from the receiving worker's incoming log (bytes / fetch duration). */
  readonly bandwidths: number[];
  /** Seconds from sending the dependent task to its task-finished (fetch + compute + messages). */
  readonly walls: number[];
  readonly blockBytes: number;
}

const VALUES_PER_BLOCK = 1_000_000;

/**
 * Moves `blocks` blocks of `valuesPerBlock` float64 values (shared memory, as tsdask/array
 * blocks are) one at a time from one worker to another, each fetched for a task that sums it.
 */
export async function measurePeerTransfer(blocks = 20, valuesPerBlock = VALUES_PER_BLOCK): Promise<TransferFigures> {
  const scheduler = await FakeScheduler.start();
  try {
    const [a, b] = await Promise.all([scheduler.spawn({ name: "a" }), scheduler.spawn({ name: "b" })]);
    for (const worker of [a, b]) worker.send({ op: "define-functions", functions: [[0, moduleFunction("ramp")], [1, moduleFunction("total")]] });
    const keys = Array.from({ length: blocks }, (_, i) => `block-${i}`);
    a.send(
      ...keys.map((key, i) => ({
        op: "compute-task" as const,
        key,
        name: `'${key}'`,
        prefix: "block",
        task: ["call", 0, ["lit", valuesPerBlock], ["lit", i], ["lit", true]] as const,
        dependencies: [],
        priority: i,
        spanId: "bench",
      })),
    );
    await Promise.all(keys.map((key) => a.next("task-finished", (m) => m.key === key, 60_000)));
    const walls: number[] = [];
    for (const [i, key] of keys.entries()) {
      const start = performance.now();
      b.send({
        op: "compute-task",
        key: `use-${i}`,
        name: `'use-${i}'`,
        prefix: "use",
        task: ["call", 1, ["ref", key]],
        dependencies: [{ key, nbytes: 8 * valuesPerBlock, whoHas: [a.address] }],
        priority: i,
        spanId: "bench",
      });
      await b.next("task-finished", (m) => m.key === `use-${i}`, 60_000);
      walls.push((performance.now() - start) / 1000);
    }
    const log = await b.run<TransferLogEntry[]>("(worker) => worker.incomingTransferLog");
    return { bandwidths: log.map((entry) => entry.bandwidth), walls, blockBytes: 8 * valuesPerBlock };
  } finally {
    await scheduler.close();
  }
}

/**
 * Bytes per second of copying one block into fresh memory in this process (median of `repeats`):
 * the floor no transfer beats, since a received block lands in memory of its own. (Copying into
 * the same, cache-warm block again is several times faster and says nothing about a transfer.)
 */
export function memcpyFloor(valuesPerBlock = VALUES_PER_BLOCK, repeats = 30): number {
  const source = new Float64Array(valuesPerBlock).map((_, i) => i);
  // Every target stays referenced until the end, so none reuses the pages of an earlier one; and
  // the median, not the best: the allocator sometimes hands out pages already mapped (glibc
  // raises its mmap threshold as big blocks are freed), and such a copy runs at the speed of
  // memory in use (one run in five of the best of 30 read ~3 GiB/s against ~1.2 otherwise).
  const targets: Float64Array[] = [];
  const seconds: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    const target = new Float64Array(new SharedArrayBuffer(source.byteLength));
    target.set(source);
    seconds.push((performance.now() - start) / 1000);
    targets.push(target);
  }
  return source.byteLength / median(seconds);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

interface DaskTransfer {
  distributed: string;
  bandwidths: number[];
  walls: number[];
}

async function main(): Promise<void> {
  const blocks = Number(process.argv[2] ?? 20);
  const floor = memcpyFloor();
  const ours = await measurePeerTransfer(blocks);
  const dask = runPython<DaskTransfer>("dask_transfer.py", [String(blocks), String(VALUES_PER_BLOCK)], {}, process.env.TSDASK_DISTRIBUTED_PYTHON ?? "/usr/bin/python3");
  const MBps = (bytesPerSecond: number): number => bytesPerSecond / 1e6;
  const ms = (seconds: number): number => seconds * 1000;
  console.log(`peer transfer of ${blocks} blocks of 8 MB (float64), one at a time; dask distributed ${dask.distributed}`);
  printTable(
    ["measure", "tsdask", "dask", "tsdask / dask", "memcpy floor", "tsdask / floor"],
    [
      ["median MB/s (transfer log)", MBps(median(ours.bandwidths)), MBps(median(dask.bandwidths)), median(ours.bandwidths) / median(dask.bandwidths), MBps(floor), median(ours.bandwidths) / floor],
      ["best MB/s (transfer log)", MBps(Math.max(...ours.bandwidths)), MBps(Math.max(...dask.bandwidths)), Math.max(...ours.bandwidths) / Math.max(...dask.bandwidths), MBps(floor), Math.max(...ours.bandwidths) / floor],
      ["median ms per dependent task", ms(median(ours.walls)), ms(median(dask.walls)), median(ours.walls) / median(dask.walls), "", ""],
    ],
  );
  console.log("(tsdask's tasks come from a stand-in scheduler in this process; Dask's from its own scheduler, so the task times include its scheduling)");
  console.log(JSON.stringify({ bench: "worker-transfer", blocks, floor, tsdask: ours, dask }));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
