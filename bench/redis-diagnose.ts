// The Redis workers' statistical profiler, on (the default) and off (--no-profile), on a Redis
// cluster of 2 workers × 1 thread on a redis-server of its own, interleaved, fresh workers per run;
// beside Dask distributed's profiler on and off (its LocalCluster: Dask has no Redis transport),
// measured in the same run:
//  - the seeds' QR example (10000×1000 in 1000×1000 chunks, q.dot(r)) after a warm-up: wall time
//    and the worker processes' CPU (target ≤ 3 %, as for LocalCluster);
//  - 2000 independent tiny tasks: the workers' CPU per task (the Redis hot path, where every
//    microsecond counts);
//  - client.profile() over Redis once the QR ran: its round trip to every worker.
// Run: npm run bench -- redis-diagnose   (TSDASK_BENCH_ROUNDS changes the rounds, default 4)

import { Client, get } from "../src";
import * as da from "../src/kernel/collections/array";
import { inc } from "../test/fixtures/tasks";
import { startRedisServer } from "../test/helpers/redis-server";
import { type WorkerProcess, startWorker } from "../test/helpers/redis-workers";
import { DASK_PYTHON, cpuSeconds, ensureDistributed, median, printTable, runPython } from "./harness";

const ROUNDS = Number(process.env.TSDASK_BENCH_ROUNDS ?? 4);
const TINY_TASKS = 2000;

interface Run {
  /** QR: seconds, and CPU seconds of the worker processes. */
  wall: number;
  cpu: number;
  /** Tiny tasks: the workers' CPU µs per task. */
  tinyCpu: number;
  /** client.profile(): ms. */
  profileMs: number;
}

const workersCpu = (workers: readonly WorkerProcess[]): number => workers.reduce((sum, worker) => sum + cpuSeconds(worker.pid), 0);

async function run(url: string, profile: boolean, round: number): Promise<Run> {
  const extraArgs = profile ? [] : ["--no-profile"];
  const workers = await Promise.all([0, 1].map((i) => startWorker(url, { name: `bench-${round}-${profile ? "on" : "off"}-${i}`, nthreads: 1, extraArgs })));
  const client = await Client.connect(url, { name: "bench-profile" });
  try {
    const a = da.random.random([10000, 1000], { chunks: [1000, 1000] });
    const [q, r] = da.linalg.qr(a);
    const product = q.dot(r);
    await product.compute();
    let cpu0 = workersCpu(workers);
    const t0 = performance.now();
    await product.compute();
    const wall = (performance.now() - t0) / 1000;
    const cpu = workersCpu(workers) - cpu0;

    const dsk: Record<string, unknown> = {};
    for (let i = 0; i < TINY_TASKS; i++) dsk[`inc-${round}-${i}`] = [inc, i];
    cpu0 = workersCpu(workers);
    await get(dsk, Object.keys(dsk));
    const tinyCpu = ((workersCpu(workers) - cpu0) / TINY_TASKS) * 1e6;

    const p0 = performance.now();
    await client.profile({});
    const profileMs = performance.now() - p0;
    return { wall, cpu, tinyCpu, profileMs };
  } finally {
    await client.close();
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

const percent = (value: number, base: number): string => `${(((value - base) / base) * 100).toFixed(1)} %`;

async function main(): Promise<void> {
  ensureDistributed();
  const server = await startRedisServer();
  const ours: Record<"on" | "off", Run[]> = { on: [], off: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const)) ours[mode].push(await run(server.url, mode === "on", round));
    }
  } finally {
    await server.stop();
  }
  const dask = runPython<{ distributed: string; runs: Record<"on" | "off", { wall: number; cpu: number }[]> }>("dask_cluster_diagnose.py", ["profile", String(ROUNDS)], {}, DASK_PYTHON);
  const med = <R extends object>(runs: Record<"on" | "off", R[]>, mode: "on" | "off", field: keyof R): number => median(runs[mode].map((r) => r[field] as number));
  const paired = <R extends object>(runs: Record<"on" | "off", R[]>, field: keyof R): string =>
    percent(median(runs.on.map((on, i) => (on[field] as number) / (runs.off[i][field] as number))), 1);
  console.log(`\nThe Redis workers' statistical profiler, 2 workers × 1 thread, ${ROUNDS} fresh worker pairs each way, interleaved; medians (a loaded machine sways these)`);
  printTable(
    ["", "tsdask off", "tsdask on", "tsdask overhead", "paired", "dask off", "dask on", "dask overhead", "paired"],
    [
      ["QR wall s", med(ours, "off", "wall"), med(ours, "on", "wall"), percent(med(ours, "on", "wall"), med(ours, "off", "wall")), paired(ours, "wall"),
        med(dask.runs, "off", "wall"), med(dask.runs, "on", "wall"), percent(med(dask.runs, "on", "wall"), med(dask.runs, "off", "wall")), paired(dask.runs, "wall")],
      ["QR workers' CPU s", med(ours, "off", "cpu"), med(ours, "on", "cpu"), percent(med(ours, "on", "cpu"), med(ours, "off", "cpu")), paired(ours, "cpu"),
        med(dask.runs, "off", "cpu"), med(dask.runs, "on", "cpu"), percent(med(dask.runs, "on", "cpu"), med(dask.runs, "off", "cpu")), paired(dask.runs, "cpu")],
      [`${TINY_TASKS} tiny tasks: workers' CPU µs/task`, med(ours, "off", "tinyCpu"), med(ours, "on", "tinyCpu"), percent(med(ours, "on", "tinyCpu"), med(ours, "off", "tinyCpu")), paired(ours, "tinyCpu"), "", "", "", ""],
    ],
  );
  console.log(`client.profile() over Redis, every window of 2 workers: ${median(ours.on.map((r) => r.profileMs)).toFixed(1)} ms (median)`);
  console.log(`(target ≤ 3 % on the QR example; Dask distributed ${dask.distributed} on its LocalCluster, the same example, for reference)`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
