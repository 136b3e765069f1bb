// What users extend to hook into the cluster (Dask's distributed.diagnostics.plugin), both
// registered with `client.registerPlugin(plugin)`: `SchedulerPlugin`, whose hooks run in the
// scheduler's process — the notebook's — so it may close over anything there; and `WorkerPlugin`,
// which travels to every worker by the task-function rules and runs there.

import { type FunctionShipper, type FunctionTable, moduleExportOf } from "../execution/ship";
import type { FnSpec } from "../execution/wire";
import type { Key } from "../graph/keys";
import type { ShippedWorkerPlugin, WorkerAddress } from "./messages";
import type { WorkerView } from "./worker/view";
import type { GraphUpdate, PendingWorkerPlugin, SchedulerPluginHooks, TransitionInfo } from "./scheduler/plugins";
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

/**
 * Dask's WorkerPlugin: extend it and define `setup(worker)`, `teardown(worker)` and
 * `transition(key, start, finish)` as you need; each runs on every worker's main thread, `worker`
 * being the worker's view (as `client.run` gives). The plugin travels as functions do: a class
 * exported from a module file goes by reference (its methods may use imports), with the object's
 * own data; otherwise each hook goes as source text, which may use `this` (the object rebuilt on
 * the worker from its own data) but no outer names. Its own data must survive structured clone.
 */
export abstract class WorkerPlugin {
  /** The name it is registered under (default: its class name and a random suffix). */
  name?: string;
  /** Registering under a taken name keeps the plugin already there (default: replaces it). */
  idempotent?: boolean;
  setup?(worker: WorkerView): void | Promise<void>;
  teardown?(worker: WorkerView): void | Promise<void>;
  /** The worker's task transitions (its states: waiting, ready, executing, memory, error, fetch, flight, released, forgotten…). */
  transition?(key: Key, start: string, finish: string, info: Readonly<Record<string, never>>): void;
}

const WORKER_HOOKS = ["setup", "teardown", "transition"] as const;

/**
 * `plugin` as it travels to workers; throws naming the plugin and the part that cannot travel.
 * Before any worker joined, its methods wait for the first (see PendingWorkerPlugin); its data
 * is checked now all the same.
 */
export function shipWorkerPlugin(plugin: WorkerPlugin, name: string, idempotent: boolean, functions: FunctionTable): ShippedWorkerPlugin | PendingWorkerPlugin {
  const data: Record<string, unknown> = {};
  for (const [property, value] of Object.entries(plugin)) {
    try {
      data[property] = structuredClone(value);
    } catch (error) {
      const hint = typeof value === "function" ? " (a function-valued property: make it a method)" : "";
      throw new TypeError(`Worker plugin "${name}": its property "${property}" cannot travel to a worker${hint}: ${(error as Error).message}`);
    }
  }
  const exportedClass = moduleExportOf(plugin.constructor as (...args: never[]) => unknown);
  if (exportedClass !== undefined) return { name, idempotent, data, build: { kind: "class", class: exportedClass } };
  const shipMethods = (shipper: FunctionShipper): ShippedWorkerPlugin => {
    const methods: Partial<Record<(typeof WORKER_HOOKS)[number], FnSpec>> = {};
    for (const hook of WORKER_HOOKS) {
      const method = plugin[hook] as unknown;
      if (typeof method === "function") methods[hook] = shipper.methodSpec(method as (...args: never[]) => unknown, `worker plugin ${name}`);
    }
    return { name, idempotent, data, build: { kind: "methods", methods } };
  };
  const shipper = functions.shipper;
  return shipper === undefined ? { name, idempotent, ship: shipMethods } : shipMethods(shipper);
}
