// Per-task overhead of the local diagnostics (ProgressBar, Profiler, ResourceProfiler,
// CacheProfiler, each and all four) on the three standard graphs (a 10 000-task chain, 2000
// independent groups of 5, a tree reduction over 10 000 leaves; every requested key), sync
// scheduler — beside Dask's diagnostics (bench/dask_diagnostics.py) in the same run.
// Measured as a user runs them: fresh diagnostics in a block around each computation
// (`withCallbacks([...], () => get(...))`, Dask's `with` block), so a block's start and end count.
// Target: all four together add ≤ 2.5 µs per task on each graph.
// Figures: main-thread CPU time and wall time, µs per task, as the difference from the same graph
// without diagnostics in the same run (best of the rounds; the machine may be shared).
// Run: npm run bench -- diagnostics  (or node build/bench/diagnostics.js [rounds])

import { availableParallelism, loadavg } from "node:os";
import { CacheProfiler, type Callback, Profiler, ProgressBar, ResourceProfiler, get, withCallbacks } from "../src";
import { threadCpuSeconds } from "../src/kernel/diagnostics/sampler";
import { STANDARD_GRAPHS } from "./graphs";
import { printTable, runPython } from "./harness";

/** µs per task: without diagnostics, and added by each configuration (main-thread CPU and wall). */
interface Figures {
  base: { cpu: number; wall: number };
  overhead: Record<string, { cpu: number; wall: number }>;
}

interface DaskResult {
  dask: string;
  graphs: Record<string, Figures & { tasks: number }>;
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
const TARGET_US = 2.5;

/** Best of wall time and of this thread's CPU time (the machine is shared: CPU time is the steadier figure). */
interface Best {
  wall: number;
  cpu: number;
}

async function measure(graph: Parameters<typeof get>[0], keys: Parameters<typeof get>[1], tasks: number, rounds: number): Promise<Figures> {
  // Rounds interleave the configurations so that a noisy stretch of the machine hits them all.
  // Round 0 warms up (JIT, the sampler thread) and is not counted.
  const best: Record<string, Best> = {};
  for (let round = 0; round <= rounds; round++) {
    for (const [name, make] of Object.entries(CONFIGS)) {
      const callbacks = make();
      const [wall, cpu] = [performance.now(), threadCpuSeconds()];
      await withCallbacks(callbacks, () => get(graph, keys));
      if (round === 0) continue;
      const mine = (best[name] ??= { wall: Infinity, cpu: Infinity });
      mine.cpu = Math.min(mine.cpu, threadCpuSeconds() - cpu);
      mine.wall = Math.min(mine.wall, (performance.now() - wall) / 1000);
    }
  }
  const perTask = (seconds: number): number => (seconds / tasks) * 1e6;
  const figures: Figures = { base: { cpu: perTask(best.none.cpu), wall: perTask(best.none.wall) }, overhead: {} };
  for (const name of Object.keys(CONFIGS)) {
    if (name === "none") continue;
    figures.overhead[name] = { cpu: perTask(best[name].cpu - best.none.cpu), wall: perTask(best[name].wall - best.none.wall) };
  }
  return figures;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 20);
  const dask = runPython<DaskResult>("dask_diagnostics.py", [String(rounds)]);
  // Wall time suffers first when other work shares the cores: say how busy the machine was.
  const load = loadavg().map((value) => value.toFixed(1)).join(" ");
  console.log(`sync scheduler; a block per computation; best of ${rounds} rounds; dask ${dask.dask}; load average ${load} on ${availableParallelism()} cores`);
  const summary: Record<string, Figures> = {};
  for (const { name, graph, keys, tasks } of STANDARD_GRAPHS()) {
    const figures = await measure(graph, keys, tasks, rounds);
    summary[name] = figures;
    const theirs = dask.graphs[name];
    console.log(
      `\n${name} (${tasks} tasks); no diagnostics, µs/task: tsdask ${figures.base.cpu.toFixed(2)} cpu / ${figures.base.wall.toFixed(2)} wall; ` +
        `dask ${theirs.base.cpu.toFixed(2)} cpu / ${theirs.base.wall.toFixed(2)} wall`,
    );
    printTable(
      ["added per task (µs)", "tsdask cpu", "tsdask wall", "dask cpu", "dask wall"],
      Object.keys(figures.overhead).map((config) => [
        config,
        figures.overhead[config].cpu,
        figures.overhead[config].wall,
        theirs.overhead[config].cpu,
        theirs.overhead[config].wall,
      ]),
    );
  }
  console.log(`\nall four together, µs/task added (target ≤ ${TARGET_US} on each graph):`);
  for (const [name, figures] of Object.entries(summary)) {
    const { cpu, wall } = figures.overhead["all four"];
    const theirs = dask.graphs[name].overhead["all four"];
    const verdict = cpu > TARGET_US ? "OVER TARGET" : wall > TARGET_US ? "over target in wall time only (see the load average)" : "ok";
    console.log(`  ${name.padEnd(26)} tsdask ${cpu.toFixed(2)} cpu / ${wall.toFixed(2)} wall   dask ${theirs.cpu.toFixed(2)} cpu / ${theirs.wall.toFixed(2)} wall   ${verdict}`);
  }
  console.log(JSON.stringify({ bench: "diagnostics", tsdask: summary, dask }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
