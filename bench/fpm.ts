// What fine performance metrics cost per task:
// 1. the FinePerformanceMetrics callback on the sync scheduler (which then measures every task),
//    on bench/diagnostics.ts's graph (2000 independent groups of 5 no-op tasks, every key
//    requested): µs per task with the callback minus without, in one run. Target ≤ 2 µs.
// 2. the same callback on the pool schedulers (bench/executors.ts's graphs): what it adds on the
//    calling thread. (The pools measure every task whether or not anyone collects: that cost is in
//    bench/executors.ts's figures.)
// Dask has no fine performance metrics on its local schedulers, so there is no Dask column here.
// Run: npm run bench -- fpm   (or node build/bench/fpm.js [rounds] [gets])

import { FinePerformanceMetrics, type SchedulerName, get, withCallbacks } from "../src";
import { threadCpuSeconds } from "../src/kernel/diagnostics/sampler";
import { type BenchGraph, STANDARD_GRAPHS, independent } from "./graphs";
import { printTable } from "./harness";

interface Best {
  wall: number;
  cpu: number;
}

/** Best wall and main-thread CPU seconds of `gets` computations, with and without the callback, interleaved over rounds. */
async function measure(graph: BenchGraph, scheduler: SchedulerName, rounds: number, gets: number): Promise<Record<"none" | "fpm", Best>> {
  const best = { none: { wall: Infinity, cpu: Infinity }, fpm: { wall: Infinity, cpu: Infinity } };
  for (let round = 0; round < rounds; round++) {
    for (const config of ["none", "fpm"] as const) {
      const callbacks = config === "fpm" ? [new FinePerformanceMetrics()] : [];
      await withCallbacks(callbacks, async () => {
        await get(graph.graph, graph.keys, { scheduler }); // warm-up (and the pool's start)
        for (let i = 0; i < gets; i++) {
          const [wall, cpu] = [performance.now(), threadCpuSeconds()];
          await get(graph.graph, graph.keys, { scheduler });
          best[config].cpu = Math.min(best[config].cpu, threadCpuSeconds() - cpu);
          best[config].wall = Math.min(best[config].wall, (performance.now() - wall) / 1000);
        }
      });
    }
  }
  return best;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const gets = Number(process.argv[3] ?? 3);
  const perTask = (seconds: number, tasks: number): number => (seconds / tasks) * 1e6;
  const results: Record<string, unknown> = {};

  const sync = independent(2000, 5);
  const syncKeys = [...(sync.graph as Map<unknown, unknown>).keys()];
  const syncBest = await measure({ ...sync, keys: syncKeys as never }, "sync", rounds, gets);
  const added = { cpu: perTask(syncBest.fpm.cpu - syncBest.none.cpu, sync.tasks), wall: perTask(syncBest.fpm.wall - syncBest.none.wall, sync.tasks) };
  console.log(`sync scheduler, ${sync.tasks} tasks (2000×5, all keys requested), best of ${rounds}×${gets} gets`);
  printTable(
    ["µs per task", "without", "with FinePerformanceMetrics", "added"],
    [
      ["main-thread cpu", perTask(syncBest.none.cpu, sync.tasks), perTask(syncBest.fpm.cpu, sync.tasks), added.cpu],
      ["wall", perTask(syncBest.none.wall, sync.tasks), perTask(syncBest.fpm.wall, sync.tasks), added.wall],
    ],
  );
  console.log(`added on sync: ${added.cpu.toFixed(2)} µs/task of CPU (target ≤ 2): ${added.cpu <= 2 ? "met" : "NOT met"}`);
  results.sync = { tasks: sync.tasks, none: syncBest.none, fpm: syncBest.fpm, addedPerTaskUs: added };

  const rows: (string | number)[][] = [];
  for (const scheduler of ["threads", "processes"] as const) {
    for (const graph of STANDARD_GRAPHS()) {
      const best = await measure(graph, scheduler, Math.max(2, Math.floor(rounds / 2)), gets);
      const none = perTask(best.none.wall, graph.tasks);
      const fpm = perTask(best.fpm.wall, graph.tasks);
      rows.push([scheduler, graph.name, none, fpm, fpm - none]);
      results[`${scheduler}: ${graph.name}`] = { none, fpm };
    }
  }
  console.log("\npool schedulers, per-task wall time (µs): the callback's cost on the calling thread");
  printTable(["scheduler", "graph", "without", "with FinePerformanceMetrics", "added"], rows);
  console.log(JSON.stringify({ bench: "fpm", rounds, gets, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
