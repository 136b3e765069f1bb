// What a Redis worker agrees to run. Anyone who can write to the Redis can put a job in a queue
// or a request on a worker's channel, naming any function, so every function spec a worker reads
// from Redis passes this gate before it becomes a function: tasks (on a thread or inline) and
// client.run alike. Without --allow-source a worker runs only exports of modules under the folders
// its operator allows (see defaultModuleRoots) and the pure built-ins of ./built-ins.

import { existsSync, realpathSync } from "node:fs";
import { isBuiltin } from "node:module";
import { dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import type { FnSpec } from "../../execution/wire";
import type { ShippedWorkerPlugin } from "../messages";
import { collectUnsafeFunctions, isPureBuiltIn, isUnsafeFunction, withoutGlobalThis } from "./built-ins";

/** A task needs a function this worker does not have or does not allow; names the function, task and worker. */
export class WorkerCannotRunError extends Error {
  override name = "WorkerCannotRunError";
}

export interface GateSettings {
  /** The worker's name and host, for refusals. */
  readonly worker: string;
  readonly host: string;
  /** Whether anything may run, source text shipped by clients included (--allow-source). */
  readonly allowSource: boolean;
  /**
   * Folders (or single files) whose modules' exports may run, as real paths (see resolveModuleRoots);
   * a node_modules folder below a root is not part of it.
   */
  readonly moduleRoots: readonly string[];
}

/** A spec the worker runs, with a module's path replaced by the real path of the file checked. */
export type Verdict = { readonly allowed: true; readonly spec: FnSpec } | { readonly allowed: false; readonly reason: string };

/** Real paths of `folders` (relative ones from `cwd`); throws naming a folder that does not exist. */
export function resolveModuleRoots(folders: readonly string[], cwd = process.cwd()): string[] {
  return folders.map((folder) => {
    const absolute = join(isAbsolute(folder) ? "" : cwd, folder);
    if (!existsSync(absolute)) throw new Error(`Module root ${folder} does not exist (looked for ${absolute})`);
    return realpathSync(absolute);
  });
}

/**
 * The module roots of a worker started in `cwd`: the project it was started in (the nearest
 * folder up from `cwd` holding a package.json; its node_modules excepted), and tsdask's own task
 * functions (the collections' kernels, and the diagnostics that client.run asks workers for).
 */
export function defaultModuleRoots(cwd = process.cwd()): string[] {
  const roots = [join(__dirname, "../../collections"), require.resolve("../client/diagnostics")];
  for (let folder = cwd; ; folder = dirname(folder)) {
    if (existsSync(join(folder, "package.json"))) {
      roots.unshift(folder);
      break;
    }
    if (dirname(folder) === folder) break;
  }
  return resolveModuleRoots(roots);
}

/** Whether the real path `file` is `root` (a file) or lies under it (a folder) outside node_modules below it. */
function isUnderRoot(file: string, root: string): boolean {
  if (file === root) return true;
  const inside = relative(root, file);
  if (inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) return false;
  return !inside.split(sep).includes("node_modules");
}

const ALLOW_SOURCE = "--allow-source (then anyone who can write to this Redis can run any code on that machine)";

/**
 * Whether a worker with `settings` runs the function `spec` names (read from Redis: any shape).
 * Loads a module under an allowed root (running its top level, as the task's thread would) to
 * check that its export is a function and none of Node's.
 */
export function judgeFunction(spec: unknown, settings: GateSettings): Verdict {
  const where = `worker ${settings.worker} (host ${settings.host})`;
  const refuse = (reason: string): Verdict => ({ allowed: false, reason });
  if (!isFnSpec(spec)) return refuse(`is not a function spec this worker knows (${JSON.stringify(spec)?.slice(0, 120)}), so ${where} does not run it`);
  switch (spec.kind) {
    case "source":
      if (settings.allowSource) return { allowed: true, spec };
      return refuse(
        `travels as source text, and ${where} does not run shipped source: export it from a module file under the worker's module roots, or start the worker with ${ALLOW_SOURCE}`,
      );
    case "global": {
      if (settings.allowSource) return { allowed: true, spec };
      const path = withoutGlobalThis(spec.path);
      if (isPureBuiltIn(path)) return { allowed: true, spec: { kind: "global", path } };
      return refuse(
        `is the built-in ${path.join(".")}, which ${where} does not run: without --allow-source it runs only side-effect-free built-ins ` +
          `(Math.*, JSON.parse/stringify, Number/String/Array/Object conversions; the README lists them): export a function of your own from a module under its module roots, or start the worker with ${ALLOW_SOURCE}`,
      );
    }
    case "module":
      return judgeModuleExport(spec, settings, where);
    case "metered": {
      // A contextMeter.meter wrapper runs what its inner function would, so it passes as that does.
      const inner = judgeFunction(spec.inner, settings);
      return inner.allowed ? { allowed: true, spec: { ...spec, inner: inner.spec } } : inner;
    }
  }
}

function judgeModuleExport(spec: FnSpec & { kind: "module" }, settings: GateSettings, where: string): Verdict {
  const refuse = (reason: string): Verdict => ({ allowed: false, reason });
  if (isBuiltin(spec.path) && !settings.allowSource) {
    return refuse(`is exported by ${spec.path}, a Node built-in module, whose functions ${where} runs only when started with ${ALLOW_SOURCE}`);
  }
  if (!settings.allowSource && (!isAbsolute(spec.path) || normalize(spec.path) !== spec.path)) {
    return refuse(`names module ${JSON.stringify(spec.path)}, which is not an absolute path without ".." (clients send the file's path), so ${where} does not load it`);
  }
  let file: string;
  try {
    file = require.resolve(spec.path);
  } catch {
    return refuse(`is exported by module ${spec.path}, which does not exist on ${where}: install the same code at the same path on every worker`);
  }
  if (settings.allowSource) return { allowed: true, spec };
  // Symbolic links followed: a link under a root to a file elsewhere is that file.
  const real = realpathSync(file);
  if (!settings.moduleRoots.some((root) => isUnderRoot(real, root))) {
    const shown = real === spec.path ? spec.path : `${spec.path} (${real})`;
    return refuse(
      `is exported by module ${shown}, which lies outside the module roots of ${where} (${settings.moduleRoots.join(", ")}; ` +
        `node_modules below them excepted): start the worker with --module-root naming that module's folder, or with ${ALLOW_SOURCE}`,
    );
  }
  let exported: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    exported = require(real);
  } catch (error) {
    return refuse(`is exported by module ${real}, which fails to load on ${where}: ${(error as Error).message}`);
  }
  const fn = spec.name === "" ? exported : ownDataProperty(exported, spec.name);
  if (typeof fn !== "function") return refuse(`is not a function that module ${real} exports on ${where}: install the same code at the same path on every worker`);
  if (isUnsafeFunction(fn)) {
    return refuse(
      `is exported by module ${real}, and that is a function of a Node built-in module (or eval, Function, process.*), which ${where} runs only when started with ${ALLOW_SOURCE}`,
    );
  }
  return { allowed: true, spec: { kind: "module", path: real, name: spec.name } };
}

/** `owner[name]` if that is an own data property, as the client indexes exports: not a getter (reading it runs code), nor an inherited `constructor`. */
function ownDataProperty(owner: unknown, name: string): unknown {
  if (owner === null || (typeof owner !== "object" && typeof owner !== "function")) return undefined;
  return Object.getOwnPropertyDescriptor(owner, name)?.value;
}

/** How many contextMeter.meter wrappers a spec may nest: a bound on the recursion a job from Redis can cause. */
const MAX_METERED_DEPTH = 16;

/** Whether `value` has the shape of a FnSpec (anything may come out of Redis). */
function isFnSpec(value: unknown, depth = 0): value is FnSpec {
  if (value === null || typeof value !== "object") return false;
  const spec = value as Record<string, unknown>;
  switch (spec.kind) {
    case "module":
      return typeof spec.path === "string" && typeof spec.name === "string";
    case "global":
      return Array.isArray(spec.path) && spec.path.length > 0 && spec.path.every((name) => typeof name === "string");
    case "source":
      return typeof spec.source === "string" && typeof spec.method === "boolean";
    case "metered":
      return typeof spec.label === "string" && spec.label !== "" && depth < MAX_METERED_DEPTH && isFnSpec(spec.inner, depth + 1);
    default:
      return false;
  }
}

function describeFunction(spec: unknown): string {
  if (!isFnSpec(spec)) return "(unreadable)";
  switch (spec.kind) {
    case "module":
      return spec.name === "" ? `the export of ${spec.path}` : `"${spec.name}"`;
    case "global":
      return withoutGlobalThis(spec.path).join(".");
    case "source": {
      const head = spec.source.replace(/\s+/g, " ").slice(0, 40);
      return `\`${head}${spec.source.length > 40 ? "…" : ""}\``;
    }
    case "metered":
      return `${describeFunction(spec.inner)} (wrapped by contextMeter.meter("${spec.label}"))`;
  }
}

/** Function specs this worker allows (module paths resolved): what its runners may turn into functions. */
export type AdmittedFunctions = readonly (readonly [number, FnSpec])[];

/** Verdicts remembered, by spec; more distinct specs than this (a flood of jobs) start it afresh. */
const MAX_REMEMBERED = 1024;

/** The gate every function spec read from Redis passes on a worker (see judgeFunction). */
export class FunctionGate {
  /** Specs allowed before, as JSON → the spec to run. Refusals are judged again: a missing module may be installed meanwhile. */
  private readonly allowed = new Map<string, FnSpec>();

  constructor(readonly settings: GateSettings) {
    if (!settings.allowSource) collectUnsafeFunctions();
  }

  /** `plugin` with its code as the gate admits it (a plugin's code passes as a task's does), or the refusal naming the plugin. */
  admitPlugin(plugin: ShippedWorkerPlugin): ShippedWorkerPlugin | WorkerCannotRunError {
    const { build } = plugin;
    const hooks = build.kind === "class" ? [] : (Object.keys(build.methods) as (keyof typeof build.methods)[]);
    const specs = build.kind === "class" ? [build.class] : hooks.map((hook) => build.methods[hook]!);
    const admitted = this.admit(specs.map((spec, i) => [i, spec]), `worker plugin ${plugin.name}`);
    if (admitted instanceof WorkerCannotRunError) return admitted;
    if (build.kind === "class") return { ...plugin, build: { kind: "class", class: admitted[0][1] } };
    return { ...plugin, build: { kind: "methods", methods: Object.fromEntries(hooks.map((hook, i) => [hook, admitted[i][1]])) } };
  }

  /** `functions` (id → spec, as a job or request carries them) if this worker runs them all; else the error refusing the first it does not, for `user` ("task 'x'", "client.run"). */
  admit(functions: unknown, user: string): AdmittedFunctions | WorkerCannotRunError {
    if (!Array.isArray(functions)) return new WorkerCannotRunError(`The functions of ${user} are not a list of function specs: worker ${this.settings.worker} runs none of them`);
    const admitted: [number, FnSpec][] = [];
    for (const entry of functions as unknown[]) {
      const [id, spec] = Array.isArray(entry) ? (entry as unknown[]) : [];
      if (typeof id !== "number") return new WorkerCannotRunError(`Function ${describeFunction(spec)} of ${user} has no function id: worker ${this.settings.worker} cannot call it`);
      const text = JSON.stringify(spec);
      let allowed = this.allowed.get(text);
      if (allowed === undefined) {
        const verdict = judgeFunction(spec, this.settings);
        if (!verdict.allowed) return new WorkerCannotRunError(`Function ${describeFunction(spec)} of ${user} ${verdict.reason}`);
        if (this.allowed.size >= MAX_REMEMBERED) this.allowed.clear();
        this.allowed.set(text, (allowed = verdict.spec));
      }
      admitted.push([id, allowed]);
    }
    return admitted;
  }
}
