// The cluster's table of task functions: each distinct way a function travels (pool/ship.ts's
// FnSpec: module export, built-in, self-contained source) gets one id, defined once per worker
// by a define-functions message. Functions are checked on the client, before anything runs,
// against the globals the workers reported, with the processes scheduler's rules and errors.

import type { Key } from "../../graph/keys";
import { FunctionShipper } from "../../scheduler/pool/ship";
import type { FnSpec } from "../../scheduler/pool/wire";

type AnyFunction = (...args: never[]) => unknown;

export class FunctionTable {
  private readonly specs: FnSpec[] = [];
  private readonly idsBySpec = new Map<string, number>();
  private readonly idsByFunction = new WeakMap<AnyFunction, number>();
  private shipper: FunctionShipper | undefined;

  /** The names a worker's globalThis has; shipped sources may use only those. Set once, by the first worker. */
  setWorkerGlobals(globals: readonly string[]): void {
    this.shipper ??= new FunctionShipper(globals);
  }

  /** How `fn` travels; throws UnshippableFunctionError naming `key` if it cannot. */
  specFor(fn: AnyFunction, key: Key): FnSpec {
    if (this.shipper === undefined) throw new Error("No worker has registered yet: cannot tell which functions can reach workers");
    return this.shipper.spec(fn, key);
  }

  /** The id under which `fn` travels (checked on first sight). */
  idFor(fn: AnyFunction, key: Key): number {
    let id = this.idsByFunction.get(fn);
    if (id === undefined) {
      id = this.idOf(this.specFor(fn, key));
      this.idsByFunction.set(fn, id);
    }
    return id;
  }

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
