// span(name, fn) (Dask's `distributed.span`): names a block of the user's code, so that the tasks
// built or submitted inside it are accounted together. The active span path follows async code
// (AsyncLocalStorage); collections record it on the task specs they create.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/** Where a task belongs: the span names from the outermost in, and each span's id. */
export interface SpanPath {
  readonly names: readonly string[];
  readonly ids: readonly string[];
}

interface SpanGlobals {
  readonly active: AsyncLocalStorage<SpanPath>;
  /** Task spec (the array `[fn, ...args]`) → the span that was active when a collection built it. */
  readonly ofSpec: WeakMap<object, SpanPath>;
  /** Whether any spec was ever tagged: until then, looking tasks up is skipped altogether. */
  tagged: boolean;
}

// Shared by every copy of tsdask in the process, like the metric frames (see context-meter.ts).
const GLOBAL_KEY = Symbol.for("tsdask.metrics.spans");
const globals: SpanGlobals = ((globalThis as Record<symbol, unknown>)[GLOBAL_KEY] ??= {
  active: new AsyncLocalStorage<SpanPath>(),
  ofSpec: new WeakMap<object, SpanPath>(),
  tagged: false,
}) as SpanGlobals;

/**
 * Runs `fn` inside a new span and returns what it returns (await it when `fn` is async). Tasks
 * whose graphs are built or computed inside (delayed values, arrays, raw graphs given to `get`)
 * belong to it; spans nest: `span("load", () => span("parse", …))` tags tasks `["load", "parse"]`.
 * `span(["a", "b"], fn)` opens "a" and, inside it, "b". `fn` receives the innermost span's id.
 * Tasks outside any span belong to the span "default".
 */
export function span<T>(name: string | readonly string[], fn: (id: string) => T): T {
  const names = typeof name === "string" ? [name] : name;
  if (!Array.isArray(names) || names.length === 0 || names.some((tag) => typeof tag !== "string" || tag === "")) {
    throw new TypeError(`span: must specify at least one span tag (a non-empty string), got ${describeName(name)}`);
  }
  if (typeof fn !== "function") throw new TypeError(`span("${names.join('", "')}", fn): fn must be a function, got ${typeof fn}`);
  const outer = globals.active.getStore();
  const ids = names.map(() => randomUUID());
  const path: SpanPath = { names: [...(outer?.names ?? []), ...names], ids: [...(outer?.ids ?? []), ...ids] };
  return globals.active.run(path, fn, ids[ids.length - 1]);
}

function describeName(name: unknown): string {
  if (typeof name === "function") return "a function (the name comes first: span(name, fn))";
  return name === undefined ? "nothing" : JSON.stringify(name);
}

/** The span path active here; undefined outside every span (the task goes to "default"). */
export function currentSpan(): SpanPath | undefined {
  return globals.active.getStore();
}

/** Records the active span on a task spec a collection just built (nothing outside spans). */
export function tagTask(spec: object): void {
  const path = globals.active.getStore();
  if (path === undefined) return;
  globals.ofSpec.set(spec, path);
  globals.tagged = true;
}

/** Records the active span on every task of a freshly built layer (a Map of key → spec). */
export function tagLayer(layer: ReadonlyMap<unknown, unknown>): void {
  const path = globals.active.getStore();
  if (path === undefined) return;
  for (const spec of layer.values()) if (typeof spec === "object" && spec !== null) globals.ofSpec.set(spec, path);
  globals.tagged = true;
}

/** The span a collection recorded on this task spec, if any. */
export function spanOfSpec(spec: unknown): SpanPath | undefined {
  if (!globals.tagged || typeof spec !== "object" || spec === null) return undefined;
  return globals.ofSpec.get(spec);
}

/** False until some collection tagged a task: callers may then skip per-task lookups. */
export function anyTaskTagged(): boolean {
  return globals.tagged;
}
