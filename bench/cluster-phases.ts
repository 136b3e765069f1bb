// Where the wall time of a small graph's get goes on LocalCluster(2 workers × 1 thread), run by
// run rather than as a median (issue 24: tsdask's rounds differ far more than its median moves).
// Each timed get is marked on the scheduler's clock, in ms after get was called: the first task's
// start on a worker (from the task stream; the first tasks leave within the submission), the
// graph submitted (the scheduler's graph-submitted event, after that first send), the last task's
// stop on a worker, and get resolved. Beside them: this process's CPU and each worker's during the
// get, and the garbage collections of this process that fell in it (kind and milliseconds).
// Run: npm run bench -- cluster-phases   [rounds] [shapes, e.g. 400x5,2000x5]

import { PerformanceObserver, constants } from "node:perf_hooks";
import { Client, LocalCluster, get } from "../src";
import { nowMs } from "../src/kernel/clock";
import { independent } from "./graphs";
import { median, printTable } from "./harness";

/** The performance timeline's garbage-collection kinds, by name. */
const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak callbacks",
};

interface Collection {
  readonly kind: string;
  /** Epoch ms. */
  readonly start: number;
  readonly ms: number;
}

/** Milliseconds of CPU (user + system) each worker process has used since it started. */
async function workerCpu(client: Client): Promise<Record<string, number>> {
  return (await client.run(() => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  })) as Record<string, number>;
}

function parseShapes(text: string | undefined): [width: number, depth: number][] {
  return (text ?? "400x5,2000x5").split(",").map((shape) => {
    const match = /^(\d+)x(\d+)$/.exec(shape);
    if (match === null) throw new TypeError(`A shape is WIDTHxDEPTH (such as 400x5), got ${JSON.stringify(shape)}`);
    return [Number(match[1]), Number(match[2])];
  });
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 7);
  const shapes = parseShapes(process.argv[3]);
  const collections: Collection[] = [];
  const timelineToEpoch = nowMs() - performance.now();
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      collections.push({ kind: GC_KINDS[kind] ?? String(kind), start: entry.startTime + timelineToEpoch, ms: entry.duration });
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "bench", dashboardAddress: null });
  const client = await Client.connect(cluster);
  const scheduler = cluster.scheduler;
  const rows: (string | number)[][] = [];
  const perTask = new Map<string, number[]>();
  try {
    let run = 0;
    for (let round = 0; round <= rounds; round++) {
      for (const [width, depth] of shapes) {
        const { graph, keys, tasks } = independent(width, depth, run++);
        let submitted = NaN;
        scheduler.once("graph-submitted", () => (submitted = nowMs()));
        const streamFrom = scheduler.taskStream.index;
        const workersBefore = await workerCpu(client);
        collections.length = 0;
        const cpuBefore = process.cpuUsage();
        const start = nowMs();
        await get(graph, keys, { scheduler: client });
        const end = nowMs();
        const cpu = process.cpuUsage(cpuBefore);
        const workersAfter = await workerCpu(client);
        if (round === 0) continue; // warm-up
        let firstStart = Infinity;
        let lastStop = -Infinity;
        for (const record of scheduler.getTaskStream({ startIndex: streamFrom })) {
          for (const { start: begun, stop } of record.startstops) {
            firstStart = Math.min(firstStart, begun * 1000);
            lastStop = Math.max(lastStop, stop * 1000);
          }
        }
        const shape = `${width}×${depth}`;
        const micros = ((end - start) * 1000) / tasks;
        perTask.set(shape, [...(perTask.get(shape) ?? []), micros]);
        const collected = collections.filter((gc) => gc.start >= start && gc.start <= end);
        rows.push([
          `${shape} r${round}`,
          micros,
          firstStart - start,
          submitted - start,
          lastStop - start,
          end - start,
          (cpu.user + cpu.system) / 1000,
          Object.keys(workersAfter)
            .map((worker) => (workersAfter[worker] - workersBefore[worker]).toFixed(0))
            .join(" + "),
          collected.map((gc) => `${gc.kind} ${gc.ms.toFixed(0)}`).join(", ") || "-",
        ]);
      }
    }
    printTable(["get", "µs/task", "1st start ms", "submitted ms", "last stop ms", "resolved ms", "CPU here ms", "workers' CPU ms", "GC here (ms)"], rows);
    for (const [shape, values] of perTask) console.log(`${shape}: median ${median(values).toFixed(1)} µs/task, ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`);
  } finally {
    observer.disconnect();
    await client.close();
    await cluster.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
