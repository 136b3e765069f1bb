// contextMeter and span as globals, so a task's code reaches them wherever it runs: a function
// shipped to a worker as source may use only the worker's globals (not the bindings it imported:
// tslab compiles a cell's `contextMeter` into `exports.contextMeter`, which no worker has), and a
// `require("tsdask")` inside a task would put the module loader's frames into its profile.
// Installed where tasks run (pool threads and processes, cluster workers) and by the package's entry.

import { contextMeter } from "./context-meter";
import { span } from "./spans";

declare global {
  /** tsdask's contextMeter, on every thread that runs tasks (see README, "Fine performance metrics"). */
  var contextMeter: typeof import("./context-meter").contextMeter;
  /** tsdask's span, on every thread that runs tasks. */
  var span: typeof import("./spans").span;
}

const TASK_GLOBALS = { contextMeter, span } as const;

/** Defines the task globals this thread lacks (a user's own global of the same name is left alone). */
export function installTaskGlobals(): void {
  for (const [name, value] of Object.entries(TASK_GLOBALS)) {
    if (!(name in globalThis)) Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }
}
