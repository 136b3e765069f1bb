// Task specs in Dask's raw-graph convention, and the small expression tree they compile to.
//
// `[fn, ...args]` is a task; a string (or tuple array) equal to a graph key is a reference;
// other arrays are lists evaluated element by element; everything else is a literal.
// `ref(key)` and `quote(value)` say explicitly what a bare value would leave ambiguous.

import type { Key } from "./keys";

/** Objects that stand for a key in a graph (a Delayed value) carry their key under this symbol. */
export const keyOfCollection: unique symbol = Symbol.for("tsdask.key") as never;

/** An explicit reference to a key; unlike a bare string, a missing key is an error. */
export class TaskRef {
  constructor(readonly key: Key) {}
}

/** A value that is taken as it is: never read as a task, reference or list. */
export class Quoted {
  constructor(readonly value: unknown) {}
}

/** Refers to the value of `key`. */
export function ref(key: Key): TaskRef {
  return new TaskRef(key);
}

/** Protects `value` (a string that equals a key, an array that starts with a function) from interpretation. */
export function quote(value: unknown): Quoted {
  return new Quoted(value);
}

// The compiled form. `ref.index` points into the computation's table of keys.
export interface LiteralExpr {
  readonly kind: "literal";
  readonly value: unknown;
}
export interface RefExpr {
  readonly kind: "ref";
  readonly index: number;
}
export interface CallExpr {
  readonly kind: "call";
  readonly fn: (...args: never[]) => unknown;
  readonly args: readonly Expr[];
}
export interface ListExpr {
  readonly kind: "list";
  readonly items: readonly Expr[];
}
export type Expr = LiteralExpr | RefExpr | CallExpr | ListExpr;

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Evaluates an expression against the values of its dependencies. Stays synchronous unless a
 * nested call returns a promise; then the enclosing call waits for it.
 */
export function evaluate(expr: Expr, values: readonly unknown[]): unknown {
  switch (expr.kind) {
    case "literal":
      return expr.value;
    case "ref":
      return values[expr.index];
    case "call": {
      const args = evaluateAll(expr.args, values);
      const fn = expr.fn as (...args: unknown[]) => unknown;
      return isThenable(args) ? args.then((ready) => fn(...(ready as unknown[]))) : fn(...args);
    }
    case "list":
      return evaluateAll(expr.items, values);
  }
}

function evaluateAll(exprs: readonly Expr[], values: readonly unknown[]): unknown[] | PromiseLike<unknown[]> {
  const out = new Array<unknown>(exprs.length);
  let pending = false;
  for (let i = 0; i < exprs.length; i++) {
    const value = evaluate(exprs[i], values);
    if (exprs[i].kind !== "literal" && exprs[i].kind !== "ref" && isThenable(value)) pending = true;
    out[i] = value;
  }
  return pending ? Promise.all(out) : out;
}

/** Calls `visit` with every function an expression calls, nested ones included. */
export function forEachFunction(expr: Expr, visit: (fn: CallExpr["fn"]) => void): void {
  if (expr.kind === "call") {
    visit(expr.fn);
    for (const arg of expr.args) forEachFunction(arg, visit);
  } else if (expr.kind === "list") {
    for (const item of expr.items) forEachFunction(item, visit);
  }
}
