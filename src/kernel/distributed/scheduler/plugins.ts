// Scheduler plugins (Dask's SchedulerPlugin): user code told about the scheduler's events — a
// graph added, every task transition, workers and clients coming and going, start and close. They
// run in the scheduler's process (the notebook's), so a plugin may close over anything. A plugin
// that throws is reported and dropped from that one call only: the scheduler carries on, as
// Dask's does (it logs the exception). Transitions reach plugins after the event that caused
// them (the state machine never calls user code mid-transition), in the order they happened.

import type { StartStop } from "../../../protocol/records";
import { type Key, keyFromId } from "../../graph/keys";
import { unpackError } from "../../execution/wire";
import type { FunctionShipper } from "../../execution/ship";
import type { ShippedWorkerPlugin, TaskErredMessage, TaskFinishedMessage, WorkerAddress } from "../messages";
import type { ClusterState, TaskStateName } from "./state";
import type { WorkerState } from "./workers";

/**
 * A worker plugin registered before any worker joined: its methods are shipped when the first one
 * does, as only a worker can say which globals shipped code may use (Dask registers a plugin on
 * a cluster with no workers and sets it up on each that joins).
 */
export interface PendingWorkerPlugin {
  readonly name: string;
  readonly idempotent: boolean;
  ship(shipper: FunctionShipper): ShippedWorkerPlugin;
}

/** What Dask passes as a transition's keyword arguments, where a worker's report caused it. */
export interface TransitionInfo {
  /** The worker that reported the task finished or erred. */
  readonly worker?: WorkerAddress;
  /** processing → memory: the result's size and type. */
  readonly nbytes?: number;
  readonly type?: string;
  /** The task thread's id within the worker. */
  readonly thread?: number;
  /** The task's phases (compute, transfer…), on the scheduler's clock. */
  readonly startstops?: readonly StartStop[];
  /** processing → erred: what the task threw (an Error, rebuilt from the worker's report, or the value thrown). */
  readonly exception?: unknown;
  /** "OK" or "error", Dask's task status. */
  readonly status?: "OK" | "error";
}

/** What `updateGraph` hears (Dask's keyword arguments of the same names). */
export interface GraphUpdate {
  /** The client that submitted the graph. */
  readonly client: string;
  /** The keys the client wants (its Futures or computation results). */
  readonly keys: ReadonlySet<Key>;
  /** Every key of the submission, in submission order. */
  readonly tasks: readonly Key[];
  /** Each task's priority: [submission, static order] (lower runs first). */
  readonly priority: ReadonlyMap<Key, readonly [number, number]>;
}

/** The hooks a scheduler plugin may have; `S` is the scheduler the hooks are given. */
export interface SchedulerPluginHooks<S> {
  /** The name it is registered under (default: its class name and a random suffix, as Dask's). */
  readonly name?: string;
  /** Registering a plugin under a taken name leaves the first in place (default: replaces it). */
  readonly idempotent?: boolean;
  /** When it is registered (awaited; a plugin whose start throws is not registered). */
  start?(scheduler: S): void | Promise<void>;
  /** Before the scheduler shuts anything down. */
  beforeClose?(): void | Promise<void>;
  /** While the scheduler closes (after its computations are told, before the workers stop). */
  close?(): void | Promise<void>;
  updateGraph?(scheduler: S, update: GraphUpdate): void;
  /** Every task state change: start and finish are Dask's state names. */
  transition?(key: Key, start: TaskStateName, finish: TaskStateName, info: TransitionInfo): void;
  addWorker?(scheduler: S, worker: WorkerAddress): void | Promise<void>;
  removeWorker?(scheduler: S, worker: WorkerAddress, info: { readonly reason: string }): void | Promise<void>;
  addClient?(scheduler: S, client: string): void;
  removeClient?(scheduler: S, client: string): void;
}

/** The plugins registered on one scheduler, by name, in registration order. */
export class SchedulerPlugins<S> {
  private readonly byName = new Map<string, SchedulerPluginHooks<S>>();
  /** Plugins that watch transitions: while there are none, the state machine queues no transition notices. */
  private watching = 0;

  constructor(
    private readonly scheduler: S,
    private readonly state: ClusterState,
    /** Where a plugin's error goes (the scheduler carries on without that call). */
    private readonly failed: (who: string, error: unknown) => void,
  ) {}

  get names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): SchedulerPluginHooks<S> | undefined {
    return this.byName.get(name);
  }

  /**
   * Registers `plugin` under `name` (Dask's register_scheduler_plugin): runs its `start` first,
   * and registers it only if that succeeds (its error is thrown). An idempotent registration under
   * a taken name does nothing; otherwise the plugin there is replaced, with a warning.
   */
  async register(plugin: SchedulerPluginHooks<S>, name: string, idempotent: boolean): Promise<void> {
    if (this.byName.has(name) && idempotent) return;
    await plugin.start?.(this.scheduler);
    if (this.byName.has(name)) {
      if (idempotent) return;
      process.emitWarning(`Scheduler already contains a plugin with name ${name}; overwriting.`);
      this.remove(name);
    }
    this.byName.set(name, plugin);
    if (plugin.transition !== undefined && ++this.watching === 1) this.state.observeTransitions(this);
  }

  /** Dask's remove_plugin: an unknown name is an error naming it. */
  remove(name: string): void {
    const plugin = this.byName.get(name);
    if (plugin === undefined) throw new Error(`Could not find plugin ${JSON.stringify(name)} among the current scheduler plugins (${this.describeNames()})`);
    this.byName.delete(name);
    if (plugin.transition !== undefined && --this.watching === 0) this.state.observeTransitions(undefined);
  }

  /** Called by the state machine (through its listeners) for each transition, once the event is handled. */
  transition(keyId: string, start: string, finish: string, worker: WorkerState | undefined, report: TaskFinishedMessage | TaskErredMessage | undefined): void {
    const key = keyFromId(keyId);
    const info = transitionInfo(worker, report);
    this.each("transition", (plugin) => plugin.transition?.(key, start as TaskStateName, finish as TaskStateName, info));
  }

  updateGraph(update: GraphUpdate): void {
    this.each("updateGraph", (plugin) => plugin.updateGraph?.(this.scheduler, update));
  }

  addWorker(worker: WorkerAddress): void {
    this.each("addWorker", (plugin) => plugin.addWorker?.(this.scheduler, worker));
  }

  removeWorker(worker: WorkerAddress, reason: string): void {
    this.each("removeWorker", (plugin) => plugin.removeWorker?.(this.scheduler, worker, { reason }));
  }

  addClient(client: string): void {
    this.each("addClient", (plugin) => plugin.addClient?.(this.scheduler, client));
  }

  removeClient(client: string): void {
    this.each("removeClient", (plugin) => plugin.removeClient?.(this.scheduler, client));
  }

  /** Runs every plugin's beforeClose, then every close; errors are reported, never thrown. */
  async close(): Promise<void> {
    const plugins = [...this.byName];
    for (const hook of ["beforeClose", "close"] as const) {
      await Promise.all(
        plugins.map(async ([name, plugin]) => {
          try {
            await plugin[hook]?.();
          } catch (error) {
            this.failed(`Plugin "${name}" (${hook})`, error);
          }
        }),
      );
    }
  }

  /**
   * Calls `hook` on every plugin (a snapshot: one may remove another). A sync error is reported at
   * once; an async hook's rejection when it settles, as Dask logs both.
   */
  private each(hook: string, call: (plugin: SchedulerPluginHooks<S>) => unknown): void {
    for (const [name, plugin] of [...this.byName]) {
      try {
        const result = call(plugin);
        if (result instanceof Promise) result.catch((error: unknown) => this.failed(`Plugin "${name}" (${hook})`, error));
      } catch (error) {
        this.failed(`Plugin "${name}" (${hook})`, error);
      }
    }
  }

  private describeNames(): string {
    return this.byName.size === 0 ? "none registered" : `registered: ${this.names.map((n) => JSON.stringify(n)).join(", ")}`;
  }
}

function transitionInfo(worker: WorkerState | undefined, report: TaskFinishedMessage | TaskErredMessage | undefined): TransitionInfo {
  if (report === undefined) return worker === undefined ? {} : { worker: worker.address };
  const common = { worker: worker?.address, thread: report.thread, startstops: report.startstops };
  if (report.op === "task-finished") return { ...common, nbytes: report.nbytes, type: report.type, status: "OK" };
  return { ...common, exception: unpackError(report.error), status: "error" };
}
