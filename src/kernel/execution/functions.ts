// Turning a shipped function spec (see ship.ts) back into a function, in the thread or process
// that runs it: pool workers for tasks, cluster workers for `client.run` functions.

import { createRequire } from "node:module";
import { join } from "node:path";
import { meteredFunction } from "../metrics/context-meter";
import { installTaskGlobals } from "../metrics/task-globals";
import type { FnSpec } from "./wire";

// Shipped functions may use them as globals (the shipper allows what a worker's globalThis has).
installTaskGlobals();

export type AnyFunction = (...args: unknown[]) => unknown;

// `require` inside shipped sources resolves packages as a script in the caller's directory would.
const taskRequire = createRequire(join(process.cwd(), "[tsdask task]"));
const compiledBySource = new Map<string, AnyFunction>();

/** The function `spec` names; throws if its module, global or source cannot be loaded. */
export function resolveFunction(spec: FnSpec): AnyFunction {
  switch (spec.kind) {
    case "module": {
      const exported = require(spec.path) as Record<string, unknown>;
      return (spec.name === "" ? exported : exported[spec.name]) as AnyFunction;
    }
    case "global":
      return spec.path.reduce<unknown>((owner, name) => (owner as Record<string, unknown>)[name], globalThis) as AnyFunction;
    case "source": {
      const cacheKey = (spec.method ? "m" : "f") + spec.source;
      let fn = compiledBySource.get(cacheKey);
      if (fn === undefined) {
        // The caller checked that the source uses only names this scope provides.
        const body = spec.method
          ? `const holder = {${spec.source}\n}; return holder[Reflect.ownKeys(holder)[0]];`
          : `return (${spec.source}\n);`;
        fn = new Function("require", body)(taskRequire) as AnyFunction;
        compiledBySource.set(cacheKey, fn);
      }
      return fn;
    }
    case "metered":
      return meteredFunction(spec.label, resolveFunction(spec.inner));
  }
}
