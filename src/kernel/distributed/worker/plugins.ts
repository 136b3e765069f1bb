// The worker plugins a worker runs (Dask's Worker.plugins): rebuilt from what the scheduler sent
// (see ShippedWorkerPlugin), set up with the worker's view, told the worker's task transitions
// after each event, torn down when removed or when the worker closes. A hook's failure is logged
// with the plugin's name ("… failed to setup"), as Dask logs it; setup and teardown failures are
// also returned to whoever asked (the client registering or unregistering the plugin).

import { resolveFunction } from "../../execution/functions";
import { keyFromId } from "../../graph/keys";
import type { ShippedWorkerPlugin } from "../messages";
import type { WorkerView } from "./view";

type Hook = (...args: unknown[]) => unknown;

interface LoadedPlugin {
  /** What `this` is in its hooks: the plugin's own data, on its class's prototype when it has one. */
  readonly object: Record<string, unknown>;
  readonly setup?: Hook;
  readonly teardown?: Hook;
  readonly transition?: Hook;
}

export class WorkerPlugins {
  private readonly byName = new Map<string, LoadedPlugin>();

  constructor(
    private readonly view: WorkerView,
    private readonly log: (text: string) => void,
    /** Told whether any plugin watches transitions (the state machine records them only then). */
    private readonly watchTransitions: (on: boolean) => void,
  ) {}

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /**
   * Adds `shipped` and runs its setup (a plugin of the same name is torn down first, unless the
   * new one is idempotent: then it is kept). Throws the setup's error, after logging it.
   */
  async add(shipped: ShippedWorkerPlugin): Promise<void> {
    if (this.byName.has(shipped.name)) {
      if (shipped.idempotent) return;
      // Replaced: torn down first (a failing teardown is logged, and the new plugin still comes in).
      await this.remove(shipped.name).catch(() => {});
    }
    const plugin = load(shipped);
    this.byName.set(shipped.name, plugin);
    this.watchTransitions(this.watching());
    try {
      await plugin.setup?.call(plugin.object, this.view);
    } catch (error) {
      this.log(`Plugin ${shipped.name} failed to setup: ${describe(error)}`);
      throw error;
    }
  }

  /**
   * Removes the plugin and runs its teardown; throws the teardown's error, after logging it. One
   * this worker never took (its gate refused it) is already gone: the scheduler names unknown ones.
   */
  async remove(name: string): Promise<void> {
    const plugin = this.byName.get(name);
    if (plugin === undefined) return;
    this.byName.delete(name);
    this.watchTransitions(this.watching());
    try {
      await plugin.teardown?.call(plugin.object, this.view);
    } catch (error) {
      this.log(`Plugin ${name} failed to teardown: ${describe(error)}`);
      throw error;
    }
  }

  /** Tells every plugin the transitions the last event made, in order; failures are logged. */
  transitions(changes: readonly (readonly [keyId: string, start: string, finish: string])[]): void {
    for (const [name, plugin] of this.byName) {
      if (plugin.transition === undefined) continue;
      for (const [keyId, start, finish] of changes) {
        try {
          plugin.transition.call(plugin.object, keyFromId(keyId), start, finish, {});
        } catch (error) {
          this.log(`Plugin ${name} failed in transition: ${describe(error)}`);
        }
      }
    }
  }

  /** The worker closes: every plugin is torn down, failures logged. */
  async teardownAll(): Promise<void> {
    for (const name of this.names) await this.remove(name).catch(() => {});
  }

  private watching(): boolean {
    for (const plugin of this.byName.values()) if (plugin.transition !== undefined) return true;
    return false;
  }
}

function load(shipped: ShippedWorkerPlugin): LoadedPlugin {
  if (shipped.build.kind === "class") {
    const Class = resolveFunction(shipped.build.class) as unknown as { prototype: object };
    const object = Object.assign(Object.create(Class.prototype) as Record<string, unknown>, shipped.data);
    const hook = (name: string): Hook | undefined => (typeof object[name] === "function" ? (object[name] as Hook) : undefined);
    return { object, setup: hook("setup"), teardown: hook("teardown"), transition: hook("transition") };
  }
  const { methods } = shipped.build;
  const hook = (name: "setup" | "teardown" | "transition"): Hook | undefined => {
    const spec = methods[name];
    return spec === undefined ? undefined : (resolveFunction(spec) as Hook);
  };
  return { object: { ...shipped.data }, setup: hook("setup"), teardown: hook("teardown"), transition: hook("transition") };
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
