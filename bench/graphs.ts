// The graphs every scheduler benchmark uses, built the same way on the Dask side (bench/dask_*.py).

import type { Key } from "../src";
import type { WorkerView } from "../src/kernel/distributed/worker/view";
import type { TransferLogEntry } from "../src/protocol/records";

export interface BenchGraph {
  readonly name: string;
  readonly graph: Map<Key, unknown> | Record<string, unknown>;
  readonly keys: Key[];
  readonly tasks: number;
}

/** Does nothing; returns null so no result is kept alive by accident. */
export function noop(..._args: unknown[]): null {
  return null;
}

/**
 * A key name: `base`, or `base-<run>` when the graph is built for one run of several. A cluster
 * keeps results while anything refers to them, so runs on one cluster need keys of their own to
 * compute anything (the prefix, Dask's key_split, stays `base`).
 */
function named(base: string, run: number | undefined): string {
  return run === undefined ? base : `${base}-${run}`;
}

/** x0 ← x1 ← … ← x(n-1): each task depends on the one before. `run`: see `named`. */
export function chain(n: number, run?: number): BenchGraph {
  const x = named("x", run);
  const graph: Record<string, unknown> = { [`${x}-0`]: [noop] };
  for (let i = 1; i < n; i++) graph[`${x}-${i}`] = [noop, `${x}-${i - 1}`];
  return { name: `chain of ${n}`, graph, keys: [`${x}-${n - 1}`], tasks: n };
}

/** `width` independent chains of `depth` tasks, tuple keys ("x", level, i); all last levels requested. */
export function independent(width: number, depth: number, run?: number): BenchGraph {
  const x = named("x", run);
  const graph = new Map<Key, unknown>();
  const keys: Key[] = [];
  for (let i = 0; i < width; i++) {
    graph.set([x, 0, i], [noop]);
    for (let level = 1; level < depth; level++) graph.set([x, level, i], [noop, [x, level - 1, i]]);
    keys.push([x, depth - 1, i]);
  }
  return { name: `${width}×${depth} independent`, graph, keys, tasks: width * depth };
}

/** A binary tree reduction over `leaves` leaf tasks. */
export function treeReduction(leaves: number, run?: number): BenchGraph {
  const [leaf, sum] = [named("leaf", run), named("sum", run)];
  const graph: Record<string, unknown> = {};
  let level: string[] = [];
  for (let i = 0; i < leaves; i++) {
    graph[`${leaf}-${i}`] = [noop];
    level.push(`${leaf}-${i}`);
  }
  for (let depth = 0; level.length > 1; depth++) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const key = `${sum}-${depth}-${i / 2}`;
      graph[key] = i + 1 < level.length ? [noop, level[i], level[i + 1]] : [noop, level[i]];
      next.push(key);
    }
    level = next;
  }
  return { name: `tree reduction over ${leaves}`, graph, keys: level, tasks: Object.keys(graph).length };
}

/** Builders of the three graphs every scheduler benchmark measures; `run` gives a graph keys of its own (see `named`). */
export const STANDARD_BUILDERS: readonly ((run?: number) => BenchGraph)[] = [
  (run) => chain(10_000, run),
  (run) => independent(2000, 5, run),
  (run) => treeReduction(10_000, run),
];

export const STANDARD_GRAPHS = (): BenchGraph[] => STANDARD_BUILDERS.map((build) => build());

/** A block of `bytes` (a Float64Array), every element `seed`, made on the worker that runs it (bench/redis-data.ts). */
export function block(bytes: number, seed: number): Float64Array {
  return new Float64Array(bytes / 8).fill(seed);
}

/** `block` in shared memory, as tsdask/array keeps its blocks: a worker's threads share it rather than copy it. */
export function sharedBlock(bytes: number, seed: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(bytes)).fill(seed);
}

/** The sum of each block's first element: a small result from large inputs, so only the inputs move. */
export function firstElements(...blocks: Float64Array[]): number {
  let sum = 0;
  for (const values of blocks) sum += values[0];
  return sum;
}

/** A worker's incoming transfer log, for client.run (a module export: Redis workers run no shipped source). */
export function incomingTransfers(worker: WorkerView): readonly TransferLogEntry[] {
  return worker.incomingTransferLog;
}
