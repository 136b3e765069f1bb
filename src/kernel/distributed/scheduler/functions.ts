// The cluster's table of task functions: each distinct way a function travels (pool/ship.ts's
// FnSpec) gets one id, defined once per worker by a define-functions message.

import type { FnSpec } from "../../scheduler/pool/wire";

export class FunctionTable {
  private readonly specs: FnSpec[] = [];
  private readonly idsBySpec = new Map<string, number>();

  /** The id of `spec`; equal specs (the same source from a re-run cell, say) share one. */
  idOf(spec: FnSpec): number {
    const text = JSON.stringify(spec);
    let id = this.idsBySpec.get(text);
    if (id === undefined) {
      id = this.specs.push(spec) - 1;
      this.idsBySpec.set(text, id);
    }
    return id;
  }

  spec(id: number): FnSpec {
    const spec = this.specs[id];
    if (spec === undefined) throw new Error(`Internal: no function with id ${id}`);
    return spec;
  }
}
