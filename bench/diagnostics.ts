// Per-task overhead of the local diagnostics (ProgressBar, Profiler, ResourceProfiler,
// CacheProfiler, each and all four) on 2000 independent groups of 5 no-op tasks, every key
// requested, sync scheduler — beside Dask's diagnostics (bench/dask_diagnostics.py) in the same run.
// Target: all four together add ≤ 5 µs per task.
// Figures: main-thread CPU time (steady on a shared machine) and wall time, µs per task.
// Run: npm run bench -- diagnostics  (or node build/bench/diagnostics.js [rounds] [gets])

import { CacheProfiler, type Callback, Profiler, ProgressBar, ResourceProfiler, get, withCallbacks } from "../src";
import { threadCpuSeconds } from "../src/kernel/diagnostics/sampler";
import { independent } from "./graphs";
import { printTable, runPython } from "./harness";

interface DaskResult {
  dask: string;
  tasks: number;
  /** µs per task without diagnostics, and added by each configuration: main-thread CPU and wall time. */
  base: { cpu: number; wall: number };
  overhead: Record<string, { cpu: number; wall: number }>;
}

/** A terminal that discards the bar, so the bar is drawn as in a terminal but not printed here. */
const nullTerminal = { isTTY: true, write: (): boolean => true };

const CONFIGS: Record<string, () => Callback[]> = {
  none: () => [],
  ProgressBar: () => [new ProgressBar({ out: nullTerminal })],
  Profiler: () => [new Profiler()],
  ResourceProfiler: () => [new ResourceProfiler()],
  CacheProfiler: () => [new CacheProfiler()],
  "all four": () => [new ProgressBar({ out: nullTerminal }), new Profiler(), new ResourceProfiler(), new CacheProfiler()],
};

/** Best of wall time and of this thread's CPU time (the machine is shared: CPU time is the steadier figure). */
interface Best {
  wall: number;
  cpu: number;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const gets = Number(process.argv[3] ?? 3);
  const { graph, tasks } = independent(2000, 5);
  const keys = [...(graph as Map<unknown, unknown>).keys()];
  // Rounds interleave the configurations so that a noisy stretch of the machine hits them all;
  // each configuration's block is entered once per round, its start + end timed apart.
  const best: Record<string, Best> = {};
  const blockMs: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    for (const [name, make] of Object.entries(CONFIGS)) {
      const callbacks = make();
      const mine = (best[name] ??= { wall: Infinity, cpu: Infinity });
      let [entered, left] = [0, 0];
      const t0 = performance.now();
      await withCallbacks(callbacks, async () => {
        entered = performance.now();
        await get(graph, keys as never); // warm-up
        for (let i = 0; i < gets; i++) {
          const [wall, cpu] = [performance.now(), threadCpuSeconds()];
          await get(graph, keys as never);
          mine.cpu = Math.min(mine.cpu, threadCpuSeconds() - cpu);
          mine.wall = Math.min(mine.wall, (performance.now() - wall) / 1000);
        }
        left = performance.now();
      });
      blockMs[name] = Math.min(blockMs[name] ?? Infinity, entered - t0 + (performance.now() - left));
    }
  }
  const perTask = (seconds: number): number => (seconds / tasks) * 1e6;
  const overhead: Record<string, Best> = {};
  for (const name of Object.keys(CONFIGS)) {
    if (name === "none") continue;
    overhead[name] = { cpu: perTask(best[name].cpu - best.none.cpu), wall: perTask(best[name].wall - best.none.wall) };
  }

  const dask = runPython<DaskResult>("dask_diagnostics.py", [String(rounds), String(gets)]);
  console.log(`${tasks} tasks (2000×5, all keys requested), sync scheduler; best of ${rounds}×${gets} gets; dask ${dask.dask}`);
  console.log(
    `no diagnostics, µs/task: tsdask ${perTask(best.none.cpu).toFixed(2)} cpu / ${perTask(best.none.wall).toFixed(2)} wall; ` +
      `dask ${dask.base.cpu.toFixed(2)} cpu / ${dask.base.wall.toFixed(2)} wall`,
  );
  printTable(
    ["added per task (µs)", "tsdask cpu", "tsdask wall", "dask cpu", "dask wall"],
    Object.keys(overhead).map((name) => [name, overhead[name].cpu, overhead[name].wall, dask.overhead[name].cpu, dask.overhead[name].wall]),
  );
  console.log(`all four together: ${overhead["all four"].cpu.toFixed(2)} µs/task of CPU (target ≤ 5)`);
  console.log(
    "block start + end, ms (once per block, not per task): " +
      Object.entries(blockMs)
        .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
        .join(", "),
  );
  console.log(JSON.stringify({ bench: "diagnostics", tasks, tsdask: { base: best.none, overheadPerTaskUs: overhead, blockMs }, dask }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
