// How a task's functions reach a worker, decided on the calling thread before anything runs:
// an export of a loaded module travels as (path, export name), a built-in as its global path,
// anything else as source text, which must not use names the worker lacks (JS has no
// cloudpickle: closures, imported bindings and `this` do not survive `fn.toString()`).

import { parse } from "acorn";
import { ancestor } from "acorn-walk";
import { analyze } from "eslint-scope";
import { type Key, formatKey } from "../graph/keys";
import { meteredFunctionOf } from "../metrics/context-meter";
import type { Expr } from "../graph/spec";
import { type UncloneableArgument, type UncloneablePart, findUncloneable, findUncloneableArgument } from "./transfer";
import { CALL, type FnSpec, LIST, LITERAL, type WireExpr } from "./wire";

type AnyFunction = (...args: never[]) => unknown;

/** A task function that cannot run in a worker; names the function, the key and the reason. */
export class UnshippableFunctionError extends Error {
  override name = "UnshippableFunctionError";
  constructor(
    readonly functionName: string,
    readonly key: Key,
    readonly reason: string,
    /** The free name that does not exist in the worker, when that is the reason. */
    readonly identifier?: string,
  ) {
    super(
      `Function ${functionName} of task ${formatKey(key)} cannot run in a worker: ${reason}. ` +
        `Use scheduler: "sync", or move the function into a module file and export it ` +
        `(exported functions travel by reference and may use imports).`,
    );
  }
}

/** Why a function cannot travel, independent of the task it appears in. */
interface Refusal {
  readonly reason: string;
  readonly identifier?: string;
}

export function functionLabel(fn: AnyFunction): string {
  return fn.name ? `"${fn.name}"` : "(anonymous)";
}

/**
 * Decides how functions travel, caching per function. `workerGlobals` are the names a task's
 * source may use freely: what the worker's globalThis has, plus the `require` it is given.
 */
export class FunctionShipper {
  private readonly decided = new WeakMap<AnyFunction, FnSpec | Refusal>();
  private readonly allowed: ReadonlySet<string>;

  /** `workerGlobals`: the names on a worker's globalThis, as its ready message listed them. */
  constructor(readonly workerGlobals: readonly string[]) {
    this.allowed = new Set([...workerGlobals, "require"]);
  }

  /** The spec for `fn`, or throws UnshippableFunctionError naming `key`. */
  spec(fn: AnyFunction, key: Key): FnSpec {
    const decision = this.decision(fn);
    if ("reason" in decision) throw new UnshippableFunctionError(functionLabel(fn), key, decision.reason, decision.identifier);
    return decision;
  }

  /**
   * The spec of a method that travels with its object (a worker plugin's hooks): as `spec`, but
   * its source may use `this`, which the worker binds to the rebuilt object. Throws naming `owner`.
   */
  methodSpec(fn: AnyFunction, owner: string): FnSpec {
    const exported = moduleExportOf(fn);
    if (exported !== undefined) return exported;
    const decision = this.checkSource(Function.prototype.toString.call(fn), true);
    if ("reason" in decision) throw new UnshippableFunctionError(functionLabel(fn), owner, decision.reason, decision.identifier);
    return decision;
  }

  private decision(fn: AnyFunction): FnSpec | Refusal {
    let decision = this.decided.get(fn);
    if (decision === undefined) {
      decision = this.decide(fn);
      this.decided.set(fn, decision);
    }
    return decision;
  }

  private decide(fn: AnyFunction): FnSpec | Refusal {
    const metered = meteredFunctionOf(fn);
    if (metered !== undefined) {
      // The wrapper travels as the function it wraps, re-wrapped under the same label by the worker.
      const inner = this.decision(metered.inner);
      if (!("reason" in inner)) return { kind: "metered", label: metered.label, inner };
      return { ...inner, reason: `it wraps (with contextMeter.meter("${metered.label}")) ${functionLabel(metered.inner)}, and ${inner.reason}` };
    }
    const exported = moduleExportOf(fn);
    if (exported !== undefined) return exported;
    const source = Function.prototype.toString.call(fn);
    if (source.endsWith("[native code] }")) {
      const path = builtInPathOf(fn);
      if (path !== undefined) return { kind: "global", path };
      return fn.name.startsWith("bound ")
        ? { reason: "it is a bound function (its bound this and arguments cannot travel); pass them as task arguments instead" }
        : { reason: "it is a native function that the worker cannot find on its globalThis" };
    }
    return this.checkSource(source);
  }

  private checkSource(source: string, allowThis = false): FnSpec | Refusal {
    const parsed = parseFunction(source);
    if (parsed === undefined) return { reason: "its source text cannot be parsed as a function" };
    if (parsed.isClass) return { reason: "it is a class, and a task calls its function without `new`" };
    const manager = analyze(parsed.program as never, { ecmaVersion: 2022, sourceType: "script" });
    for (const reference of manager.globalScope!.through) {
      const name = reference.identifier.name;
      if (!this.allowed.has(name)) {
        // tslab compiles every name a notebook declares or imports into `exports.NAME`.
        const hint = name === "exports" ? "; in a notebook, that is any name a cell declares or imports: pass values as task arguments, and use the globals contextMeter and span" : "";
        return {
          reason: `it uses "${name}", which does not exist in a worker (a variable from the surrounding code, or an imported binding${hint})`,
          identifier: name,
        };
      }
    }
    if (!allowThis && usesOuterThis(parsed)) {
      return { reason: "it uses `this` (a method, or a function called with a receiver), which a task call does not provide", identifier: "this" };
    }
    return { kind: "source", source, method: parsed.isMethod };
  }
}

/**
 * A table of the functions sent to workers: each distinct way a function travels (an FnSpec) gets
 * one id, sent to a worker once; equal specs (the same source from a re-run notebook cell, say)
 * share an id, so the table grows with distinct code rather than with function objects. Used by
 * the pools and by the cluster scheduler.
 */
export class FunctionTable {
  private readonly specs: FnSpec[] = [];
  private readonly idsBySpec = new Map<string, number>();
  private readonly idsByFunction = new WeakMap<AnyFunction, number>();
  private decider: FunctionShipper | undefined;

  /** How functions are checked, once a worker said which globals it has (undefined before). */
  get shipper(): FunctionShipper | undefined {
    return this.decider;
  }

  /** The names a worker's globalThis has; shipped sources may use only those. The first call decides. */
  setWorkerGlobals(globals: readonly string[]): FunctionShipper {
    this.decider ??= new FunctionShipper(globals);
    return this.decider;
  }

  /** How `fn` travels; throws UnshippableFunctionError naming `key` if it cannot. */
  specFor(fn: AnyFunction, key: Key): FnSpec {
    if (this.decider === undefined) throw new Error("No worker has started yet: cannot tell which functions can reach one");
    return this.decider.spec(fn, key);
  }

  /** The id under which `fn` travels (checked on first sight). */
  idFor(fn: AnyFunction, key: Key): number {
    let id = this.idsByFunction.get(fn);
    if (id === undefined) {
      id = this.idOf(this.specFor(fn, key));
      this.idsByFunction.set(fn, id);
    }
    return id;
  }

  /** The id of `spec`. */
  idOf(spec: FnSpec): number {
    const text = JSON.stringify(spec);
    let id = this.idsBySpec.get(text);
    if (id === undefined) {
      id = this.specs.push(spec) - 1;
      this.idsBySpec.set(text, id);
    }
    return id;
  }

  spec(id: number): FnSpec {
    const spec = this.specs[id];
    if (spec === undefined) throw new Error(`Internal: no function with id ${id}`);
    return spec;
  }
}

interface ParsedFunction {
  readonly program: ReturnType<typeof parse>;
  readonly isMethod: boolean;
  readonly isClass: boolean;
}

/** Parses `fn.toString()`: a function or arrow expression, a class, or a method shorthand. */
function parseFunction(source: string): ParsedFunction | undefined {
  const options = { ecmaVersion: "latest", sourceType: "script", ranges: true } as const; // eslint-scope reads ranges
  try {
    const program = parse(`(${source}\n)`, options);
    const statement = program.body[0];
    const isClass = statement?.type === "ExpressionStatement" && statement.expression.type === "ClassExpression";
    return { program, isMethod: false, isClass };
  } catch {
    // not an expression: maybe `name(args) { … }`, the text of a method
  }
  try {
    return { program: parse(`({${source}\n})`, options), isMethod: true, isClass: false };
  } catch {
    return undefined;
  }
}

/** True if `this` or `super` would mean the receiver of the shipped function (which a task call lacks). */
function usesOuterThis(parsed: ParsedFunction): boolean {
  const statement = parsed.program.body[0] as unknown as { expression: { properties?: { value: unknown }[] } };
  const outermost = parsed.isMethod ? statement.expression.properties![0].value : statement.expression;
  let found = false;
  const check = (_node: unknown, _state: unknown, ancestors: readonly { type: string }[]): void => {
    // The nearest regular function binds `this`; arrows do not. None, or the outermost: the receiver.
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const node = ancestors[i];
      if (node.type === "FunctionExpression" || node.type === "FunctionDeclaration") {
        if (node === outermost) found = true;
        return;
      }
    }
    found = true;
  };
  ancestor(parsed.program as never, { ThisExpression: check, Super: check } as never);
  return found;
}

// ---- Functions exported by loaded modules ------------------------------------------------------

interface ModuleExport {
  readonly kind: "module";
  readonly path: string;
  readonly name: string;
}
const exportIndex = new WeakMap<object, ModuleExport>();
/** require.cache entries already indexed, with the exports object they had then. */
const indexedExports = new Map<string, unknown>();

/** How `fn` travels if a loaded module (not the entry script) exports it, else undefined. */
export function moduleExportOf(fn: AnyFunction): FnSpec | undefined {
  const known = exportIndex.get(fn);
  if (known !== undefined) return known;
  // Index modules loaded (or whose exports were replaced) since the last look; exports added to an
  // already indexed object later are picked up by a full pass when a function is still unknown.
  indexModules(false);
  return exportIndex.get(fn) ?? (indexModules(true), exportIndex.get(fn));
}

function indexModules(all: boolean): void {
  for (const [path, module] of Object.entries(require.cache)) {
    // The entry script is skipped: requiring it in a worker would run the whole program again.
    if (module === undefined || !module.loaded || module === require.main) continue;
    const exported: unknown = module.exports;
    if (!all && indexedExports.get(path) === exported) continue;
    indexedExports.set(path, exported);
    if (typeof exported === "function" && !exportIndex.has(exported)) {
      exportIndex.set(exported, { kind: "module", path, name: "" });
    }
    if (exported === null || (typeof exported !== "object" && typeof exported !== "function")) continue;
    for (const name of Object.keys(exported)) {
      // Data properties only: getters may have side effects, and a re-export's getter leads to
      // a function that its defining module exports as data anyway.
      const value = Object.getOwnPropertyDescriptor(exported, name)?.value as unknown;
      if (typeof value === "function" && !exportIndex.has(value)) exportIndex.set(value, { kind: "module", path, name });
    }
  }
}

// ---- Built-ins ---------------------------------------------------------------------------------

let builtIns: WeakMap<object, readonly string[]> | undefined;

/** Globals and their function-valued members (Math.max, JSON.stringify, Array.from…). */
function builtInPathOf(fn: AnyFunction): readonly string[] | undefined {
  if (builtIns === undefined) {
    builtIns = new WeakMap();
    for (const name of Object.getOwnPropertyNames(globalThis)) {
      const value = Object.getOwnPropertyDescriptor(globalThis, name)?.value as unknown;
      if (value === null || (typeof value !== "object" && typeof value !== "function")) continue;
      if (typeof value === "function" && !builtIns.has(value)) builtIns.set(value, [name]);
      for (const member of Object.getOwnPropertyNames(value)) {
        const inner = Object.getOwnPropertyDescriptor(value, member)?.value as unknown;
        if (typeof inner === "function" && !builtIns.has(inner)) builtIns.set(inner, [name, member]);
      }
    }
  }
  return builtIns.get(fn);
}

// ---- Expressions -------------------------------------------------------------------------------

/**
 * The wire form of a task: references replaced by their values, functions by ids from `idOf`
 * (which decides how each travels and may throw UnshippableFunctionError).
 */
export function toWire(expr: Expr, values: readonly unknown[], idOf: (fn: AnyFunction) => number): WireExpr {
  switch (expr.kind) {
    case "literal":
      return Array.isArray(expr.value) ? [LITERAL, expr.value] : expr.value;
    case "ref": {
      const value = values[expr.index];
      return Array.isArray(value) ? [LITERAL, value] : value;
    }
    case "call": {
      const wire: unknown[] = [CALL, idOf(expr.fn)];
      for (const arg of expr.args) wire.push(toWire(arg, values, idOf));
      return wire;
    }
    case "list": {
      const wire: unknown[] = [LIST];
      for (const item of expr.items) wire.push(toWire(item, values, idOf));
      return wire;
    }
  }
}

/**
 * Where `wire` (a task's wire form, see toWire) holds what structured clone refuses: the
 * argument of its call and the part in it (a task that is not a call: the part of its value).
 */
export function findUncloneableWireArgument(wire: WireExpr): UncloneableArgument | UncloneablePart | undefined {
  if (!Array.isArray(wire)) return findUncloneable(wire);
  if (wire[0] === LITERAL) return findUncloneable(wire[1]);
  if (wire[0] !== CALL) return findUncloneable(wire);
  const args = wire.slice(2).map((arg: unknown) => (Array.isArray(arg) && arg[0] === LITERAL ? arg[1] : arg));
  return findUncloneableArgument(args);
}
