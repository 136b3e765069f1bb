// Per-task overhead of get() with the sync scheduler beside dask.local.get_sync, on the same
// graphs in the same run; then a 1 000 000-task chain whose memory must not grow as tasks finish.
// Run: npm run bench -- sync

import { Callback, get } from "../src";
import { STANDARD_GRAPHS, noop } from "./graphs";
import { bestOf, printTable, runPython } from "./harness";

interface DaskResult {
  dask: string;
  graphs: Record<string, { tasks: number; us_per_task: number }>;
}

async function overhead(): Promise<Record<string, { tsdask: number; dask: number; ratio: number }>> {
  const dask = runPython<DaskResult>("dask_sync.py", ["5"]);
  const results: Record<string, { tsdask: number; dask: number; ratio: number }> = {};
  const rows: (string | number)[][] = [];
  for (const { name, graph, keys, tasks } of STANDARD_GRAPHS()) {
    const seconds = await bestOf(5, () => get(graph, keys));
    const tsdask = (seconds / tasks) * 1e6;
    const daskUs = dask.graphs[name].us_per_task;
    results[name] = { tsdask, dask: daskUs, ratio: tsdask / daskUs };
    rows.push([name, tasks, tsdask, daskUs, tsdask / daskUs]);
  }
  console.log(`sync scheduler, per-task overhead (µs), best of 5; dask ${dask.dask}`);
  printTable(["graph", "tasks", "tsdask µs", "dask µs", "ratio"], rows);
  return results;
}

/** Heap in use at several points of a 1M-task chain; each task returns a fresh 1 KB array. */
async function millionChain(): Promise<{ tasks: number; heapMB: number[]; seconds: number }> {
  const n = 1_000_000;
  const graph: Record<string, unknown> = { "x-0": [noop] };
  const step = (_previous: unknown): Float64Array => new Float64Array(128);
  for (let i = 1; i < n; i++) graph[`x-${i}`] = [step, `x-${i - 1}`];
  const heapMB: number[] = [];
  let done = 0;
  const sampler = new Callback({
    posttask: () => {
      if (++done % 200_000 !== 0) return;
      // A full collection first (node --expose-gc, as npm run bench runs it), so the figure is live data only.
      (globalThis as { gc?: () => void }).gc?.();
      heapMB.push(process.memoryUsage().heapUsed / 1e6);
    },
  });
  const t0 = performance.now();
  await get(graph, `x-${n - 1}`, { callbacks: [sampler] });
  return { tasks: n, heapMB, seconds: (performance.now() - t0) / 1000 };
}

async function main(): Promise<void> {
  const results = await overhead();
  const million = await millionChain();
  console.log(
    `1 000 000-task chain: ${million.seconds.toFixed(2)} s; heap used (MB) after 200k/400k/600k/800k/1M tasks: ` +
      million.heapMB.map((mb) => mb.toFixed(0)).join(" / "),
  );
  console.log(JSON.stringify({ bench: "sync", overhead: results, millionChain: million }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
