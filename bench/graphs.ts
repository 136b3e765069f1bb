// Graph builders shared by the benchmarks; bench/dask_*.py builds the same graphs for Dask.
// The task functions are exported so the pool schedulers ship them by reference.

import type { Key } from "../src";

export interface BenchGraph {
  readonly graph: Map<Key, unknown>;
  /** What to request: one key, or a nested list of keys. */
  readonly keys: Key | readonly unknown[];
  readonly tasks: number;
}

export function inc(x: number): number {
  return x + 1;
}

export function noop(..._args: unknown[]): null {
  return null;
}

export function total(...args: number[]): number {
  let sum = 0;
  for (const x of args) sum += x;
  return sum;
}

/** n tasks, each needing the previous one: pure scheduler latency. */
export function chain(n: number): BenchGraph {
  const graph = new Map<Key, unknown>([["chain-0", [inc, 0]]]);
  for (let i = 1; i < n; i++) graph.set(`chain-${i}`, [inc, `chain-${i - 1}`]);
  return { graph, keys: `chain-${n - 1}`, tasks: n };
}

/** `groups` × `width` tasks with no dependencies, all requested (as a groups × width nested list). */
export function independent(groups: number, width: number): BenchGraph {
  const graph = new Map<Key, unknown>();
  const keys: Key[][] = [];
  for (let g = 0; g < groups; g++) {
    const row: Key[] = [];
    for (let j = 0; j < width; j++) {
      const key: Key = [`indep-${g}`, j];
      graph.set(key, [noop, g, j]);
      row.push(key);
    }
    keys.push(row);
  }
  return { graph, keys, tasks: groups * width };
}

/** `leaves` independent tasks summed `fanIn` at a time, level by level, down to one key. */
export function treeReduction(leaves: number, fanIn: number): BenchGraph {
  const graph = new Map<Key, unknown>();
  let level: string[] = [];
  for (let i = 0; i < leaves; i++) {
    graph.set(`leaf-${i}`, [inc, i]);
    level.push(`leaf-${i}`);
  }
  for (let depth = 1; level.length > 1; depth++) {
    const next: string[] = [];
    for (let start = 0; start < level.length; start += fanIn) {
      const key = `sum-${depth}-${start / fanIn}`;
      graph.set(key, [total, ...level.slice(start, start + fanIn)]);
      next.push(key);
    }
    level = next;
  }
  return { graph, keys: level[0], tasks: graph.size };
}
