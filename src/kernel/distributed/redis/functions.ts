// What a Redis worker agrees to run. Anyone who can write to the Redis can put a job in a
// queue, so a worker runs exports of module files it has and built-ins, and self-contained
// source text only when started with --allow-source.

import type { FnSpec } from "../../scheduler/pool/wire";

/** A task needs a function this worker does not have or does not allow; names the function, task and worker. */
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

/** Checks the functions of tasks against what this worker has and allows. */
export class FunctionGate {
  /** Module paths already found to resolve here. */
  private readonly modulesFound = new Set<string>();

  constructor(private readonly worker: WorkerIdentity) {}

  /** Why this worker cannot run these functions for `user` ("task 'x'", "client.run"), or undefined if it can. */
  refusal(functions: readonly (readonly [number, FnSpec])[], user: string): WorkerCannotRunError | undefined {
    const where = `worker ${this.worker.name} (host ${this.worker.host})`;
    for (const [, spec] of functions) {
      if (spec.kind === "module" && !this.modulesFound.has(spec.path)) {
        try {
          require.resolve(spec.path);
          this.modulesFound.add(spec.path);
        } catch {
          return new WorkerCannotRunError(
            `Function ${describeFunction(spec)} of ${user} is exported by module ${spec.path}, which does not exist on ${where}: ` +
              `install the same code at the same path on every worker`,
          );
        }
      }
      if (spec.kind === "source" && !this.worker.allowSource) {
        return new WorkerCannotRunError(
          `Function ${describeFunction(spec)} of ${user} travels as source text, and ${where} does not run shipped source: ` +
            `export it from a module file the workers have, or start the worker with --allow-source ` +
            `(then anyone who can write to this Redis can run code on that machine)`,
        );
      }
    }
    return undefined;
  }
}
