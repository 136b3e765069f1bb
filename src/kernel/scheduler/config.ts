// Dask's dask.config for choosing schedulers: `config.set({...})` for the whole process, and
// `withConfig({...}, fn)` for the computations started inside `fn` only (AsyncLocalStorage,
// like withCallbacks: concurrent computations never see each other's scoped settings).

import { AsyncLocalStorage } from "node:async_hooks";
import { checkNames } from "../names";
import { type SchedulerChoice, checkNumWorkers, checkScheduler } from "./options";

/** The settings; each is optional, and unset means "fall through to the next source". */
export interface ConfigValues {
  /** Where computations run when the call does not say (see GetOptions.scheduler). */
  readonly scheduler?: SchedulerChoice;
  /** Pool size for "threads" and "processes". */
  readonly numWorkers?: number;
}

type ConfigName = keyof ConfigValues;
const CHECKS: { readonly [name in ConfigName]-?: (value: unknown, where: string) => void } = {
  scheduler: checkScheduler,
  numWorkers: checkNumWorkers,
};
const CONFIG_NAMES = Object.keys(CHECKS) as ConfigName[];

/** Undoes one `config.set`: `restore()` or, with TypeScript ≥ 5.2, `using`. */
export interface ConfigChange {
  /** Puts back what the names it set held before (unset if they were unset). Calling it again does nothing. */
  restore(): void;
  [Symbol.dispose](): void;
}

let globalValues: ConfigValues = {};
const scopes = new AsyncLocalStorage<ConfigValues>();

/** Checks names and values; returns the given ones, `undefined` kept (it means "unset"). */
function checked(values: ConfigValues): ConfigValues {
  checkNames(values, CONFIG_NAMES, "config name");
  for (const name of CONFIG_NAMES) {
    const value = values[name];
    if (value !== undefined) CHECKS[name](value, `Config ${name}`);
  }
  return values;
}

function merged(base: ConfigValues, changes: ConfigValues): ConfigValues {
  const result: Record<string, unknown> = { ...base };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete result[name];
    else result[name] = value;
  }
  return result as ConfigValues;
}

/** Dask's `dask.config`, for the settings tsdask reads. */
export const config = {
  /**
   * Sets values for the whole process: `config.set({ scheduler: "threads", numWorkers: 4 })`.
   * A value of `undefined` unsets that name. Returns a change whose `restore()` undoes it.
   */
  set(values: ConfigValues): ConfigChange {
    const changes = checked(values);
    const before: Record<string, unknown> = {};
    for (const name of Object.keys(changes)) before[name] = globalValues[name as ConfigName];
    globalValues = merged(globalValues, changes);
    let restored = false;
    const restore = (): void => {
      if (restored) return;
      restored = true;
      globalValues = merged(globalValues, before as ConfigValues);
    };
    return { restore, [Symbol.dispose]: restore };
  },

  /** The value in effect here: the innermost withConfig block's, else the global one; undefined if unset. */
  get<K extends ConfigName>(name: K): ConfigValues[K] {
    if (!(CONFIG_NAMES as string[]).includes(name)) throw new TypeError(`Unknown config name "${String(name)}"; known: ${CONFIG_NAMES.join(", ")}`);
    return scopes.getStore()?.[name] ?? globalValues[name];
  },

  /** Unsets every global value (withConfig blocks that are running keep theirs). */
  reset(): void {
    globalValues = {};
  },
};

/**
 * Dask's `with dask.config.set(...)`: the values apply to the computations started inside `fn`
 * (awaited or not) and to no others. Blocks nest; an inner value wins, `undefined` unsets it
 * for the block (the global value then applies). Returns what `fn` returns.
 */
export function withConfig<T>(values: ConfigValues, fn: () => T): T {
  const changes = checked(values);
  if (typeof fn !== "function") throw new TypeError(`withConfig takes a function to run, got ${typeof fn}`);
  return scopes.run(merged(scopes.getStore() ?? {}, changes), fn);
}
