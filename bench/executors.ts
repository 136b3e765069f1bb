// Per-task overhead of the "threads" and "processes" schedulers beside Dask's threaded and
// multiprocessing schedulers, on the same graphs in the same run. Target: ratio ≤ 0.5.
// Run: npm run bench -- executors   (or node build/bench/executors.js [repeats] after compiling)

import { type SchedulerName, get } from "../src";
import { STANDARD_GRAPHS } from "./graphs";
import { bestOf, printTable, runPython } from "./harness";

interface DaskResult {
  dask: string;
  graphs: Record<string, { tasks: number; threads_us: number; processes_us: number; processes_reused_pool_us: number }>;
}

const SCHEDULERS = ["threads", "processes"] as const;
const DASK_COLUMN = { threads: "threads_us", processes: "processes_us" } as const;

async function main(): Promise<void> {
  const repeats = Number(process.argv[2] ?? 3);
  const dask = runPython<DaskResult>("dask_executors.py", [String(repeats)]);
  const results: Record<string, Record<string, { tsdask: number; dask: number; ratio: number }>> = {};
  const rows: (string | number)[][] = [];
  for (const scheduler of SCHEDULERS) {
    results[scheduler] = {};
    for (const { name, graph, keys, tasks } of STANDARD_GRAPHS()) {
      const theirs = dask.graphs[name];
      if (theirs.tasks !== tasks) throw new Error(`${name}: ${tasks} tasks here, ${theirs.tasks} on the Dask side`);
      // bestOf's warm-up run also starts the pool, outside the timings.
      const seconds = await bestOf(repeats, () => get(graph, keys, { scheduler: scheduler as SchedulerName }));
      const tsdask = (seconds / tasks) * 1e6;
      const daskUs = theirs[DASK_COLUMN[scheduler]];
      results[scheduler][name] = { tsdask, dask: daskUs, ratio: tsdask / daskUs };
      const reused = scheduler === "processes" ? theirs.processes_reused_pool_us : "";
      rows.push([scheduler, name, tasks, tsdask, daskUs, tsdask / daskUs, reused]);
    }
  }
  console.log(`pool schedulers, per-task wall time (µs), best of ${repeats}; dask ${dask.dask}`);
  printTable(["scheduler", "graph", "tasks", "tsdask µs", "dask µs", "ratio", "dask, pool kept µs"], rows);
  const worst = Math.max(...SCHEDULERS.flatMap((s) => Object.values(results[s]).map((r) => r.ratio)));
  console.log(`worst ratio ${worst.toFixed(3)} (target ≤ 0.5): ${worst <= 0.5 ? "met" : "NOT met"}`);
  console.log(JSON.stringify({ bench: "executors", repeats, dask: dask.dask, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
