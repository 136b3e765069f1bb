// What callbacks receive as a cluster task's result: the result stays on its worker (results
// never pass through the client during a computation), so posttask gets this stand-in, which
// `nbytes` (and so CacheProfiler({ metric: nbytes })) measures as the real result's size.

import { inspect } from "node:util";
import { formatBytes } from "../../../protocol/format";
import { NBYTES } from "../../metrics/nbytes";

export class ClusterResult {
  constructor(
    /** Dask's repr of the key. */
    readonly key: string,
    /** The result's size as the worker measured it. */
    readonly nbytes: number,
    /** The result's type name. */
    readonly type: string,
    /** The worker holding it. */
    readonly worker: string,
  ) {}

  get [NBYTES](): number {
    return this.nbytes;
  }

  toString(): string {
    return `<result of ${this.key} on ${this.worker}: ${this.type}, ${formatBytes(this.nbytes)}>`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
