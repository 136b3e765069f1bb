// LocalCluster(2 workers × 1 thread) beside Dask distributed's LocalCluster(n_workers=2,
// threads_per_worker=1), measured in the same run:
// 1. per-task overhead of get() on the chain / 2000×5 / tree graphs of bench/graphs.ts
//    (Dask: client.get); target ≤ 0.05× Dask on each. Every run (warm-up included) has keys of its
//    own on both sides — a cluster keeps results it still refers to, so a re-run of the same keys
//    could find them computed — and the tasks the workers ran are counted against the graph's;
// 2. peer transfer of 8 MB float64 blocks between the two workers of a real cluster, one block
//    at a time (the receiving worker's transfer log), beside Dask's (bench/dask_transfer.py) and
//    a memcpy floor;
// 3. the seeds' QR example (10000×1000 in 1000×1000 chunks, q.dot(r)) on the cluster; target
//    ≤ 2× Dask's time, with the 1000×1000 matmul kernel beside NumPy's single-threaded BLAS.
// Dask's side runs in Debian's python3 with python3-distributed (installed with apt when missing).
// Run: npm run bench -- cluster   [repeats]

import { Client, LocalCluster, get } from "../src";
import * as da from "../src/kernel/collections/array";
import { matmul } from "../src/kernel/collections/array/matmul";
import type { TransferLogEntry } from "../src/protocol/records";
import { ramp, total } from "../test/fixtures/cluster-tasks";
import { type BenchGraph, STANDARD_BUILDERS } from "./graphs";
import { DASK_PYTHON, bestOf, ensureDistributed, printTable, runPython } from "./harness";
import { memcpyFloor } from "./worker-transfer";

const VALUES_PER_BLOCK = 1_000_000;

interface DaskCluster {
  dask: string;
  distributed: string;
  numpy: string;
  graphs: Record<string, { tasks: number; us_per_task: number; runs_us_per_task: number[] }>;
  qr_example: number;
  matmul_1000: number;
}

interface DaskTransfer {
  distributed: string;
  bandwidths: number[];
  walls: number[];
}

/** All runs' figures, for the noise: "12.1 / 13.0 / 15.2". */
function spread(values: readonly number[]): string {
  return values.map((value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))).join(" / ");
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Tasks the cluster's workers have run since they started. */
async function executed(client: Client): Promise<number> {
  const counts = (await client.run((worker) => worker.executedCount)) as Record<string, number>;
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}

/**
 * Seconds of each of `repeats` runs of `get` on `build(run)` (fresh keys each time), after a
 * warm-up run on fresh keys too; throws unless every run ran exactly the graph's tasks.
 */
async function timedRuns(client: Client, build: (run: number) => BenchGraph, repeats: number): Promise<number[]> {
  const seconds: number[] = [];
  for (let run = 0; run <= repeats; run++) {
    const { graph, keys, tasks } = build(run);
    const before = await executed(client);
    const start = performance.now();
    await get(graph, keys, { scheduler: client });
    const elapsed = (performance.now() - start) / 1000;
    const ran = (await executed(client)) - before;
    if (ran !== tasks) throw new Error(`run ${run}: ${ran} tasks ran on the workers, the graph has ${tasks}`);
    if (run > 0) seconds.push(elapsed);
  }
  return seconds;
}

/**
 * Moves `blocks` blocks of 8 MB one at a time between the cluster's two workers: each block's
 * dependent task also needs a bigger "anchor" held by the other worker, so it runs there and
 * fetches the block. Bandwidths from the receiving workers' incoming transfer logs.
 */
async function clusterTransfer(client: Client, cluster: LocalCluster, blocks: number): Promise<{ bandwidths: number[]; walls: number[] }> {
  const state = cluster.scheduler.state;
  const holderOf = (key: string): string => state.whoHas(state.slotOf(key)!)[0].address;
  const anchors = [client.submit(ramp, 2 * VALUES_PER_BLOCK, -1, true), client.submit(ramp, 2 * VALUES_PER_BLOCK, -2, true)];
  await client.gather(anchors);
  const anchorOn = new Map(anchors.map((anchor) => [holderOf(String(anchor.key)), anchor]));
  if (anchorOn.size !== 2) throw new Error("bench: the two anchors landed on the same worker");
  const inputs = Array.from({ length: blocks }, (_, i) => client.submit(ramp, VALUES_PER_BLOCK, i, true));
  await client.gather(inputs);
  const before = (await client.run((worker) => worker.incomingTransferLog.length)) as Record<string, number>;
  const walls: number[] = [];
  for (const input of inputs) {
    const source = holderOf(String(input.key));
    const destination = [...anchorOn.keys()].find((address) => address !== source)!;
    const start = performance.now();
    const used = client.submit(total, input, anchorOn.get(destination)!);
    await used.result();
    walls.push((performance.now() - start) / 1000);
    used.release();
  }
  const logs = (await client.run((worker) => worker.incomingTransferLog)) as Record<string, TransferLogEntry[]>;
  const bandwidths = Object.entries(logs).flatMap(([address, log]) =>
    log.slice(before[address]).filter((entry) => entry.total === 8 * VALUES_PER_BLOCK).map((entry) => entry.bandwidth),
  );
  for (const future of [...anchors, ...inputs]) future.release();
  return { bandwidths, walls };
}

async function main(): Promise<void> {
  const repeats = Number(process.argv[2] ?? 3);
  const blocks = 20;
  ensureDistributed();
  const dask = runPython<DaskCluster>("dask_cluster.py", [String(repeats)], {}, DASK_PYTHON);
  const daskTransfer = runPython<DaskTransfer>("dask_transfer.py", [String(blocks), String(VALUES_PER_BLOCK)], {}, DASK_PYTHON);

  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "bench", dashboardAddress: null });
  const client = await Client.connect(cluster);
  try {
    // 1. Per-task overhead.
    const rows: (string | number)[][] = [];
    const overhead: Record<string, { tsdask: number; dask: number; ratio: number; tsdaskRuns: number[]; daskRuns: number[] }> = {};
    for (const build of STANDARD_BUILDERS) {
      const { name, tasks } = build();
      const theirs = dask.graphs[name];
      if (theirs.tasks !== tasks) throw new Error(`${name}: ${tasks} tasks here, ${theirs.tasks} on the Dask side`);
      const runs = (await timedRuns(client, build, repeats)).map((seconds) => (seconds / tasks) * 1e6);
      const ours = Math.min(...runs);
      overhead[name] = { tsdask: ours, dask: theirs.us_per_task, ratio: ours / theirs.us_per_task, tsdaskRuns: runs, daskRuns: theirs.runs_us_per_task };
      rows.push([name, tasks, ours, spread(runs), theirs.us_per_task, spread(theirs.runs_us_per_task), ours / theirs.us_per_task]);
    }
    console.log(
      `LocalCluster(2 workers × 1 thread), get() per task, best of ${repeats} runs on fresh keys after a warm-up, every task counted; ` +
        `dask ${dask.dask}, distributed ${dask.distributed} (client.get)`,
    );
    printTable(["graph", "tasks", "tsdask µs", "tsdask runs", "dask µs", "dask runs", "ratio"], rows);
    const worst = Math.max(...Object.values(overhead).map((r) => r.ratio));
    console.log(`worst ratio ${worst.toFixed(3)} (target ≤ 0.05): ${worst <= 0.05 ? "met" : "NOT met"}\n`);

    // 2. Peer transfer.
    const floor = memcpyFloor(VALUES_PER_BLOCK);
    const transfer = await clusterTransfer(client, cluster, blocks);
    const MBps = (bytesPerSecond: number): number => bytesPerSecond / 1e6;
    console.log(`peer transfer of ${blocks} blocks of 8 MB (float64), one at a time, between the two workers`);
    printTable(
      ["measure", "tsdask", "dask", "tsdask / dask", "memcpy floor", "tsdask / floor"],
      [
        ["median MB/s", MBps(median(transfer.bandwidths)), MBps(median(daskTransfer.bandwidths)), median(transfer.bandwidths) / median(daskTransfer.bandwidths), MBps(floor), median(transfer.bandwidths) / floor],
        ["best MB/s", MBps(Math.max(...transfer.bandwidths)), MBps(Math.max(...daskTransfer.bandwidths)), Math.max(...transfer.bandwidths) / Math.max(...daskTransfer.bandwidths), MBps(floor), Math.max(...transfer.bandwidths) / floor],
        ["median ms per task (submit → result)", median(transfer.walls) * 1000, median(daskTransfer.walls) * 1000, median(transfer.walls) / median(daskTransfer.walls), "", ""],
      ],
    );
    console.log("");

    // 3. The seeds' QR example, and the kernel it spends its time in.
    const x = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(x);
    const product = q.dot(r);
    const qrSeconds = await bestOf(Math.max(1, repeats - 1), () => product.compute());
    const a = { shape: [1000, 1000], data: new Float64Array(1_000_000).map(Math.random) };
    const b = { shape: [1000, 1000], data: new Float64Array(1_000_000).map(Math.random) };
    const matmulSeconds = await bestOf(repeats, async () => matmul(a, b));
    console.log("the seeds' QR example: random 10000×1000 in 1000×1000 chunks; q, r = qr(a); q.dot(r).compute()");
    printTable(
      ["measure", "tsdask s", "dask s", "ratio", "target"],
      [
        ["QR example on LocalCluster(2×1)", qrSeconds, dask.qr_example, qrSeconds / dask.qr_example, "≤ 2"],
        ["1000×1000 matmul kernel (one thread)", matmulSeconds, dask.matmul_1000, matmulSeconds / dask.matmul_1000, `numpy ${dask.numpy} BLAS`],
      ],
    );
    console.log(
      JSON.stringify({
        bench: "cluster",
        repeats,
        dask: dask.dask,
        overhead,
        transfer: { tsdask: transfer, dask: daskTransfer, floor },
        qr: { tsdask: qrSeconds, dask: dask.qr_example },
        matmul: { tsdask: matmulSeconds, numpy: dask.matmul_1000 },
      }),
    );
  } finally {
    await client.close();
    await cluster.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
