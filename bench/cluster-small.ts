// Graphs of a user's size (about 2000 tasks) on LocalCluster(2 workers × 1 thread) beside Dask
// distributed's LocalCluster(n_workers=2, threads_per_worker=1): microseconds per task of get()
// on W independent chains of D tasks, where the fixed part of a computation (planning, submission,
// first dispatch, gathering) weighs most. Target ≤ 0.05× Dask on each graph. The two sides take
// turns graph by graph (bench/dask_cluster_turns.py keeps Dask's cluster open between requests),
// so the load of a shared machine falls on both alike, and while one side runs the other's
// processes are frozen (SIGSTOP): neither pays for the other's idle timers (Dask's idle cluster
// alone uses ~11 % of a core) or for work the other left running after its get returned (Dask's
// releases and garbage collections): each side's own leftovers run in its own turns. Figures
// are medians of the rounds, every
// run on keys of its own (a cluster keeps results it still refers to) after a warm-up run per
// graph, and every task counted as run on the workers.
// Run: npm run bench -- cluster-small   [rounds]

import { type ChildProcessByStdio, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client, LocalCluster, get } from "../src";
import { readStat } from "../src/kernel/diagnostics/sampler";
import { independent } from "./graphs";
import { DASK_PYTHON, ensureDistributed, median, printTable } from "./harness";

const SHAPES: readonly (readonly [width: number, depth: number])[] = [
  [400, 5],
  [200, 10],
  [2000, 1],
  [2000, 5],
];

/** Dask's cluster in a Python process, timing one get per request. */
class DaskTurns {
  private readonly child: ChildProcessByStdio<Writable, Readable, null>;
  private readonly lines: AsyncIterator<string>;

  constructor() {
    this.child = spawn(DASK_PYTHON, [join(__dirname, "..", "..", "bench", "dask_cluster_turns.py")], {
      cwd: join(__dirname, "..", "..", "bench"),
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }

  async next<T>(): Promise<T> {
    const line = await this.lines.next();
    if (line.done === true) throw new Error("bench/dask_cluster_turns.py ended early (its error is above)");
    return JSON.parse(line.value) as T;
  }

  /** Seconds of one client.get of width × depth on keys of `run`; throws unless every task ran. */
  async run(width: number, depth: number, run: number): Promise<number> {
    this.child.stdin.write(`${JSON.stringify({ width, depth, run })}\n`);
    const { seconds, ran } = await this.next<{ seconds: number; ran: number }>();
    if (ran !== width * depth) throw new Error(`dask ${width}×${depth} run ${run}: ${ran} tasks ran on the workers, the graph has ${width * depth}`);
    return seconds;
  }

  /** The Python process and all its descendants (Dask's scheduler runs in it, its nannies and workers below). */
  processTree(): number[] {
    const parentOf = new Map<number, number>();
    for (const entry of readdirSync("/proc")) {
      const stat = /^\d+$/.test(entry) ? readStat(Number(entry)) : undefined;
      if (stat !== undefined) parentOf.set(Number(entry), stat.ppid);
    }
    const tree = [this.child.pid!];
    for (let i = 0; i < tree.length; i++) for (const [pid, parent] of parentOf) if (parent === tree[i]) tree.push(pid);
    return tree;
  }

  async close(): Promise<void> {
    const exited = new Promise((done) => this.child.once("exit", done));
    this.child.stdin.end("\n");
    await exited;
  }
}

/** Tasks the cluster's workers have run since they started. */
async function executed(client: Client): Promise<number> {
  const counts = (await client.run((worker) => worker.executedCount)) as Record<string, number>;
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}

/** Seconds of one get of width × depth on keys of `run`; throws unless every task ran on the workers. */
async function tsdaskRun(client: Client, width: number, depth: number, run: number): Promise<number> {
  const { graph, keys, tasks } = independent(width, depth, run);
  const before = await executed(client);
  const start = performance.now();
  await get(graph, keys, { scheduler: client });
  const seconds = (performance.now() - start) / 1000;
  const ran = (await executed(client)) - before;
  if (ran !== tasks) throw new Error(`tsdask ${width}×${depth} run ${run}: ${ran} tasks ran on the workers, the graph has ${tasks}`);
  return seconds;
}

/** Processes frozen now: thawed if this process exits meanwhile, so none is left stopped. */
const frozen = new Set<number>();
process.on("exit", () => signalAll([...frozen], "SIGCONT"));

/** Freezes (SIGSTOP) or thaws (SIGCONT) processes. */
function signalAll(pids: readonly number[], signal: "SIGSTOP" | "SIGCONT"): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
      if (signal === "SIGSTOP") frozen.add(pid);
      else frozen.delete(pid);
    } catch {
      // gone already
    }
  }
}

function spread(values: readonly number[]): string {
  return values.map((value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))).join(" / ");
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 7);
  ensureDistributed();
  const dask = new DaskTurns();
  const cluster = await LocalCluster.start({ nWorkers: 2, threadsPerWorker: 1, name: "bench", dashboardAddress: null });
  const client = await Client.connect(cluster);
  try {
    const versions = (await dask.next<{ ready: { dask: string; distributed: string } }>()).ready;
    const daskProcesses = dask.processTree();
    const tsdaskWorkers = cluster.processes.map((worker) => worker.child.pid!);
    const perTask = new Map(SHAPES.map((shape) => [shape, { tsdask: [] as number[], dask: [] as number[] }]));
    let run = 0;
    for (let round = 0; round <= rounds; round++) {
      for (const shape of SHAPES) {
        const [width, depth] = shape;
        const tasks = width * depth;
        // Who goes first alternates, so neither side always follows the other's garbage.
        const sides = round % 2 === 0 ? (["tsdask", "dask"] as const) : (["dask", "tsdask"] as const);
        for (const side of sides) {
          const others = side === "dask" ? tsdaskWorkers : daskProcesses;
          signalAll(others, "SIGSTOP");
          let seconds: number;
          try {
            seconds = side === "dask" ? await dask.run(width, depth, run) : await tsdaskRun(client, width, depth, run);
          } finally {
            signalAll(others, "SIGCONT");
          }
          if (round > 0) perTask.get(shape)![side].push((seconds / tasks) * 1e6);
        }
        run++;
      }
    }
    console.log(
      `LocalCluster(2 workers × 1 thread), get() per task, median of ${rounds} rounds taking turns with Dask after a warm-up (the other side frozen), ` +
        `fresh keys each run, every task counted; dask ${versions.dask}, distributed ${versions.distributed} (client.get)`,
    );
    const rows = SHAPES.map((shape) => {
      const { tsdask, dask: theirs } = perTask.get(shape)!;
      return [`${shape[0]}×${shape[1]} independent`, shape[0] * shape[1], median(tsdask), spread(tsdask), median(theirs), spread(theirs), median(tsdask) / median(theirs)];
    });
    printTable(["graph", "tasks", "tsdask µs", "tsdask runs", "dask µs", "dask runs", "ratio"], rows);
    const worst = Math.max(...rows.map((row) => row[6] as number));
    console.log(`worst ratio ${worst.toFixed(3)} (target ≤ 0.05): ${worst <= 0.05 ? "met" : "NOT met"}`);
    console.log(JSON.stringify({ bench: "cluster-small", rounds, dask: versions, perTask: Object.fromEntries([...perTask].map(([shape, runs]) => [shape.join("x"), runs])) }));
  } finally {
    await client.close();
    await cluster.close();
    await dask.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
