// Deep graphs on a LocalCluster (2 workers × 1 thread): a chain of n tasks (default 1 000 000)
// computed to the end, then a fresh one aborted as soon as it runs. Prints the chain's time, how
// long the abort takes to reject (the scheduler's walk over the chain), and how long the next
// small computation takes (what the workers were left to drop). Target: the abort rejects with
// AbortError and the next computation finishes within a second.
// Run: npm run bench -- cluster-abort   (or node build/bench/cluster-abort.js <n> after a build)

import { Client, LocalCluster, get } from "../src";
import { AbortError } from "../src/kernel/scheduler/loop";
import { chain } from "./graphs";

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, dashboardAddress: null });
  await Client.connect(cluster);
  try {
    const whole = chain(n, 0);
    let start = performance.now();
    await get(whole.graph, whole.keys);
    const computeSeconds = (performance.now() - start) / 1000;

    const aborted = chain(n, 1);
    const controller = new AbortController();
    start = performance.now();
    const running = get(aborted.graph, aborted.keys, { signal: controller.signal });
    await until(() => (cluster.scheduler.state.stateCounts().processing ?? 0) > 0);
    const submitSeconds = (performance.now() - start) / 1000;
    start = performance.now();
    controller.abort(new Error("bench"));
    const outcome = await running.then(
      () => "resolved",
      (error: unknown) => (error instanceof AbortError ? "AbortError" : String(error)),
    );
    const rejectSeconds = (performance.now() - start) / 1000;
    start = performance.now();
    await get({ next: [Math.max, 1, 2] }, "next");
    const nextSeconds = (performance.now() - start) / 1000;

    console.log(`chain of ${n}: computed in ${computeSeconds.toFixed(2)} s (${((computeSeconds / n) * 1e6).toFixed(1)} µs/task)`);
    console.log(`abort: submitted and running after ${submitSeconds.toFixed(2)} s; ${outcome} after ${rejectSeconds.toFixed(2)} s`);
    console.log(`next computation: ${nextSeconds.toFixed(3)} s (target < 1 s)`);
  } finally {
    await cluster.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
