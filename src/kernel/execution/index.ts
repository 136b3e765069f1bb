// The execution engine under both halves: the wire format, function shipping, and the pools of
// worker threads or child processes (one reusable pool per kind and size) that run tasks.
import { availableParallelism } from "node:os";
import { type PoolKind, WorkerPool } from "./pool";

const pools = new Map<string, WorkerPool>();

/** The shared pool of `kind` with `size` workers, started on first use. */
export function getPool(kind: PoolKind, size: number = availableParallelism()): WorkerPool {
  const name = `${kind}:${size}`;
  let pool = pools.get(name);
  if (pool === undefined || pool.closed) {
    pool = new WorkerPool(kind, size);
    pools.set(name, pool);
  }
  return pool;
}

/** Stops every pool's workers now. Not needed before exiting: idle pools never keep a process alive. */
export function closePools(): void {
  for (const pool of pools.values()) pool.close();
  pools.clear();
}

export { WorkerPool, WorkerDiedError, type PoolKind } from "./pool";
export { TaskTransferError } from "./transfer";
export { UnshippableFunctionError } from "./ship";
