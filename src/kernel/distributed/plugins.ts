// What users extend to hook into the cluster (Dask's distributed.diagnostics.plugin):
// `SchedulerPlugin`, registered with `client.registerPlugin(plugin)`. Its hooks run in the
// scheduler's process — the notebook's — so a plugin may close over anything there.

import type { Key } from "../graph/keys";
import type { WorkerAddress } from "./messages";
import type { GraphUpdate, SchedulerPluginHooks, TransitionInfo } from "./scheduler/plugins";
import type { Scheduler } from "./scheduler/scheduler";
import type { TaskStateName } from "./scheduler/state";

export type { GraphUpdate, TransitionInfo } from "./scheduler/plugins";

/**
 * Dask's SchedulerPlugin: extend it and define the hooks you need. Each runs in the scheduler's
 * process; one that throws (or rejects) is reported on stderr and the scheduler carries on.
 *
 * ```ts
 * class Counter extends SchedulerPlugin {
 *   count = 0;
 *   transition(key: Key, start: string, finish: string) {
 *     if (start === "processing" && finish === "memory") this.count++;
 *   }
 * }
 * await client.registerPlugin(new Counter());
 * ```
 */
export abstract class SchedulerPlugin implements SchedulerPluginHooks<Scheduler> {
  /** The name it is registered under (default: its class name and a random suffix). */
  name?: string;
  /** Registering under a taken name keeps the plugin already there (default: replaces it). */
  idempotent?: boolean;
  start?(scheduler: Scheduler): void | Promise<void>;
  beforeClose?(): void | Promise<void>;
  close?(): void | Promise<void>;
  updateGraph?(scheduler: Scheduler, update: GraphUpdate): void;
  transition?(key: Key, start: TaskStateName, finish: TaskStateName, info: TransitionInfo): void;
  addWorker?(scheduler: Scheduler, worker: WorkerAddress): void | Promise<void>;
  removeWorker?(scheduler: Scheduler, worker: WorkerAddress, info: { readonly reason: string }): void | Promise<void>;
  addClient?(scheduler: Scheduler, client: string): void;
  removeClient?(scheduler: Scheduler, client: string): void;
}
