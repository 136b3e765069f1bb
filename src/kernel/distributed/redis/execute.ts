// Running one task on a worker's threads: its functions are checked against what this worker
// may run (module files it has, built-ins, shipped source only with --allow-source), its
// inputs are put in place of its references, and the thread pool of the local "threads"
// scheduler runs it. Kept apart from the Redis plumbing so the cluster worker's task threads can
// take its place.

import { type Key, formatKey } from "../../graph/keys";
import type { TaskJob, TaskOutcome } from "../../scheduler/executor";
import type { PoolClient, WorkerPool } from "../../scheduler/pool/pool";
import { CALL, type FnSpec, LIST, LITERAL, type WireExpr } from "../../scheduler/pool/wire";
import type { WireTask } from "../messages";

/** A task needs something this worker does not have or does not allow; names the function, task and worker. */
export class WorkerCannotRunError extends Error {
  override name = "WorkerCannotRunError";
}

export interface WorkerIdentity {
  readonly name: string;
  readonly host: string;
  /** Whether self-contained source shipped by clients may run here (--allow-source). */
  readonly allowSource: boolean;
}

function describeFunction(spec: FnSpec): string {
  switch (spec.kind) {
    case "module":
      return spec.name === "" ? `the export of ${spec.path}` : `"${spec.name}"`;
    case "global":
      return spec.path.join(".");
    case "source": {
      const head = spec.source.replace(/\s+/g, " ").slice(0, 40);
      return `\`${head}${spec.source.length > 40 ? "…" : ""}\``;
    }
  }
}

/** One task handed to the pool: submitted alone, with nothing to learn from its duration. */
const SINGLE_TASKS: PoolClient = { batchSize: 1, quickTasks: false, recordDuration: () => {} };

export class TaskRunner {
  /** Module paths already found to resolve here. */
  private readonly modulesFound = new Set<string>();

  constructor(
    private readonly pool: WorkerPool,
    private readonly worker: WorkerIdentity,
  ) {}

  /** Why this worker cannot run these functions for task `name`, or undefined if it can. */
  refusal(functions: readonly (readonly [number, FnSpec])[], name: string): WorkerCannotRunError | undefined {
    const where = `worker ${this.worker.name} (host ${this.worker.host})`;
    for (const [, spec] of functions) {
      if (spec.kind === "module" && !this.modulesFound.has(spec.path)) {
        try {
          require.resolve(spec.path);
          this.modulesFound.add(spec.path);
        } catch {
          return new WorkerCannotRunError(
            `Function ${describeFunction(spec)} of task ${name} is exported by module ${spec.path}, which does not exist on ${where}: ` +
              `install the same code at the same path on every worker`,
          );
        }
      }
      if (spec.kind === "source" && !this.worker.allowSource) {
        return new WorkerCannotRunError(
          `Function ${describeFunction(spec)} of task ${name} travels as source text, and ${where} does not run shipped source: ` +
            `export it from a module file the workers have, or start the worker with --allow-source ` +
            `(then anyone who can write to this Redis can run code on that machine)`,
        );
      }
    }
    return undefined;
  }

  /** Runs `task` with `inputs` (keyId → value) on a pool thread. */
  run(key: Key, task: WireTask, functions: readonly (readonly [number, FnSpec])[], inputs: ReadonlyMap<string, unknown>): Promise<TaskOutcome> {
    const poolIds = new Map<number, number>();
    for (const [id, spec] of functions) poolIds.set(id, this.pool.specId(spec));
    const wire = toPoolWire(task, inputs, poolIds, key);
    const job: TaskJob = { node: 0, key, expr: { kind: "literal", value: undefined }, values: [] };
    return new Promise((resolve) => this.pool.enqueue(SINGLE_TASKS, job, wire, [...poolIds.values()], resolve));
  }
}

/** The pool's form of a task: references replaced by their values, client function ids by the pool's. */
function toPoolWire(task: WireTask, inputs: ReadonlyMap<string, unknown>, poolIds: ReadonlyMap<number, number>, key: Key): WireExpr {
  switch (task[0]) {
    case "lit":
      return Array.isArray(task[1]) ? [LITERAL, task[1]] : task[1];
    case "ref": {
      if (!inputs.has(task[1])) throw new Error(`tsdask: task ${formatKey(key)} refers to ${JSON.stringify(task[1])}, which is not among its inputs`);
      const value = inputs.get(task[1]);
      return Array.isArray(value) ? [LITERAL, value] : value;
    }
    case "call": {
      const id = poolIds.get(task[1]);
      if (id === undefined) throw new Error(`tsdask: task ${formatKey(key)} calls function ${task[1]}, which its job does not define`);
      const wire: unknown[] = [CALL, id];
      for (let i = 2; i < task.length; i++) wire.push(toPoolWire(task[i] as WireTask, inputs, poolIds, key));
      return wire;
    }
    case "list": {
      const wire: unknown[] = [LIST];
      for (let i = 1; i < task.length; i++) wire.push(toPoolWire(task[i] as WireTask, inputs, poolIds, key));
      return wire;
    }
  }
}
