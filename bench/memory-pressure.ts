// A worker under memory pressure, beside Dask's in the same run: one LocalCluster worker with one
// thread and a memory limit, and results that together pass it (16 × 64 MB under 512 MiB, 5 ×
// 32 MB under 256 MiB), held by futures until all are done. Each result is random bytes (which
// Dask's lz4 spill compression cannot shrink) made at memory speed, so the figures are the memory
// handling's rather than a loop's in either language. The worker must spill, pause and
// resume rather than be restarted by its nanny. Figures per case: seconds to all done, restarts,
// the worker's peak resident memory, results on disk at the end, and whether every result
// (spilled ones read back) is right; the medians of a few rounds in which tsdask and Dask take turns.
// Run: npm run bench -- memory-pressure   (Dask's side needs python3-distributed: TSDASK_DISTRIBUTED_PYTHON,
// default /usr/bin/python3; TSDASK_BENCH_ROUNDS sets the rounds, default 3)

import { Client, LocalCluster } from "../src";
import { noise } from "../test/fixtures/cluster-tasks";
import { DASK_PYTHON, ensureDistributed, median, printTable, runPython } from "./harness";

interface PressureCase {
  /** Dask's spelling; tsdask reads the same. */
  readonly limit: string;
  readonly count: number;
  readonly megabytes: number;
}

interface PressureRun {
  readonly seconds: number;
  readonly restarts: number;
  readonly peakRss: number;
  readonly onDisk: number;
  readonly right: boolean;
}

const CASES: readonly PressureCase[] = [
  { limit: "512MiB", count: 16, megabytes: 64 },
  { limit: "256MiB", count: 5, megabytes: 32 },
];

/** How often the worker's resident memory is read (Dask's side samples at the same pace). */
const SAMPLE_MS = 10;

async function runTsdask({ limit, count, megabytes }: PressureCase): Promise<PressureRun> {
  const cluster = await LocalCluster.start({ nWorkers: 1, threadsPerWorker: 1, memoryLimit: limit, dashboardAddress: null, name: "memory-pressure" });
  try {
    const client = await Client.connect(cluster);
    const pids = new Set([cluster.processes[0].pid]);
    let peakRss = 0;
    const sampler = setInterval(() => {
      for (const worker of cluster.processes) {
        pids.add(worker.pid);
        peakRss = Math.max(peakRss, worker.residentBytes() ?? 0);
      }
    }, SAMPLE_MS);
    const values = (megabytes * 1e6) / 8;
    const start = performance.now();
    const futures = Array.from({ length: count }, (_, i) => client.submit(noise, values, i));
    const errors = await Promise.all(futures.map((future) => future.exception()));
    const seconds = (performance.now() - start) / 1000;
    clearInterval(sampler);
    const layouts = Object.values(await client.run((worker) => worker.data.onDisk.length));
    // A failed task (KilledWorkerError after repeated restarts, say) makes the round wrong.
    let right = errors.every((error) => error === undefined);
    for (const [i, future] of futures.entries()) {
      if (!right) break;
      const value = await future.result();
      right &&= value.length === values && value[0] === i && value[values - 1] === i;
    }
    return { seconds, restarts: pids.size - 1, peakRss, onDisk: layouts.reduce((a, b) => a + b, 0), right };
  } finally {
    await cluster.close();
  }
}

function runDask({ limit, count, megabytes }: PressureCase): PressureRun {
  return runPython<PressureRun>("dask_memory_pressure.py", [limit, String(count), String(megabytes)], {}, DASK_PYTHON);
}

function summary(runs: readonly PressureRun[]): (string | number)[] {
  return [
    median(runs.map((run) => run.seconds)),
    runs.map((run) => run.restarts).join("/"),
    Math.max(...runs.map((run) => run.peakRss)) / 2 ** 20,
    median(runs.map((run) => run.onDisk)),
    runs.every((run) => run.right) ? "yes" : "NO",
  ];
}

async function main(): Promise<void> {
  ensureDistributed();
  const rounds = Number(process.env.TSDASK_BENCH_ROUNDS ?? 3);
  const rows: (string | number)[][] = [];
  for (const pressure of CASES) {
    const ours: PressureRun[] = [];
    const dask: PressureRun[] = [];
    for (let round = 0; round < rounds; round++) {
      ours.push(await runTsdask(pressure));
      dask.push(runDask(pressure));
    }
    const name = `${pressure.count} × ${pressure.megabytes} MB, ${pressure.limit}`;
    const ratio = median(ours.map((run) => run.seconds)) / median(dask.map((run) => run.seconds));
    rows.push([`${name}: tsdask`, ...summary(ours), ratio], [`${name}: Dask`, ...summary(dask), 1]);
  }
  console.log(`One worker, one thread; median of ${rounds} rounds (restarts: each round's)`);
  printTable(["case", "seconds", "restarts", "peak RSS MiB", "on disk", "all right", "time ÷ Dask"], rows);
}

void main();
