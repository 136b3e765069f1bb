// Benchmark: tsdask's "threads" and "processes" schedulers against Dask's threaded and
// multiprocessing schedulers on the same three graphs, in one run.
// Usage: node build/bench/executors.js [repeats]   (after `npx tsc -p tsconfig.test.json`)
// Prints per-task overhead in µs, the ratios tsdask/Dask (target ≤ 0.5) and a final JSON line.

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type SchedulerName, get } from "../src";
import { type BenchGraph, chain, independent, treeReduction } from "./graphs";

const ROOT = join(__dirname, "..", "..");
const repeats = Number(process.argv[2] ?? 3);

const GRAPHS: Record<string, () => BenchGraph> = {
  chain: () => chain(10_000),
  independent: () => independent(2000, 5),
  tree: () => treeReduction(10_000, 4),
};
const SCHEDULERS = ["threads", "processes"] as const;

interface DaskTimes {
  threads: Record<string, number>;
  processes: Record<string, number>;
  processes_reused_pool: Record<string, number>;
  tasks: Record<string, number>;
}

function runDask(): DaskTimes {
  const python = process.env.TSDASK_PYTHON ?? join(ROOT, ".venv", "bin", "python");
  if (!existsSync(python)) throw new Error(`No Python with dask at ${python}: run \`node scripts/setup/python.mjs\` first`);
  const out = execFileSync(python, [join(ROOT, "bench", "dask_executors.py"), String(repeats)], { encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").pop()!) as DaskTimes;
}

async function bestTime(scheduler: SchedulerName, build: () => BenchGraph): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < repeats; i++) {
    const { graph, keys } = build();
    const start = performance.now();
    await get(graph, keys, { scheduler });
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return best;
}

async function main(): Promise<void> {
  process.stdout.write("Running Dask…\n");
  const dask = runDask();
  const results: Record<string, Record<string, { tsdask: number; dask: number; ratio: number; tasks: number }>> = {};
  for (const scheduler of SCHEDULERS) {
    await get({ warm: [(x: number) => x, 1] }, "warm", { scheduler }); // start the pool outside the timings
    results[scheduler] = {};
    for (const [name, build] of Object.entries(GRAPHS)) {
      const tasks = build().tasks;
      if (tasks !== dask.tasks[name]) throw new Error(`Graph ${name}: ${tasks} tasks here, ${dask.tasks[name]} in Dask's`);
      const seconds = await bestTime(scheduler, build);
      const daskSeconds = dask[scheduler][name];
      results[scheduler][name] = { tsdask: seconds, dask: daskSeconds, ratio: seconds / daskSeconds, tasks };
    }
  }
  const us = (seconds: number, tasks: number): string => ((seconds / tasks) * 1e6).toFixed(1).padStart(8);
  console.log(`\nper-task wall time, µs (best of ${repeats}; 2000×5 independent, 10 000 chain, tree over 10 000 leaves)`);
  console.log("scheduler  graph        tsdask     Dask   ratio   Dask(reused process pool)");
  for (const scheduler of SCHEDULERS) {
    for (const [name, r] of Object.entries(results[scheduler])) {
      const reused = scheduler === "processes" ? us(dask.processes_reused_pool[name], r.tasks) : "";
      console.log(
        `${scheduler.padEnd(10)} ${name.padEnd(11)} ${us(r.tsdask, r.tasks)} ${us(r.dask, r.tasks)}  ${r.ratio.toFixed(3).padStart(6)}   ${reused}`,
      );
    }
  }
  const worst = Math.max(...SCHEDULERS.flatMap((s) => Object.values(results[s]).map((r) => r.ratio)));
  console.log(`worst ratio ${worst.toFixed(3)} (target ≤ 0.5): ${worst <= 0.5 ? "met" : "NOT met"}`);
  console.log(JSON.stringify({ bench: "executors", repeats, results, daskReusedPool: dask.processes_reused_pool }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
