// Which built-in functions a Redis worker runs for anyone who can write to its Redis, and which
// functions it never runs even when a module it trusts exports them.
//
// A task calls its functions with arguments the job carries (plain data: structured clone makes
// no functions) and with what other calls of the same task return. A built-in is allowed only if
// it has no effect beyond its return value — it neither touches the process, the machine or the
// network, nor changes its arguments (a task's inputs can be values other tasks on this worker
// read too) — and if it can never hand a task a function it would otherwise not have. The second
// rule is what keeps the list closed under composition: given Object.getPrototypeOf,
// Object.getOwnPropertyDescriptors and Object.values, a task reaches the Function constructor
// through `({}).constructor`, and Array.from(["code"], thatConstructor) compiles code. With
// every allowed built-in returning data only, the only functions a task can hold are the ones
// its worker allowed, so built-ins that call a callback (Array.from's mapFn, JSON.parse's reviver)
// or coerce an argument (its valueOf, toString, toJSON) can call nothing else either.

import { builtinModules } from "node:module";

/** Function members of `owner` (data properties only: reading a getter runs code). */
function functionMembers(owner: object): string[] {
  return Object.getOwnPropertyNames(owner).filter((name) => typeof Object.getOwnPropertyDescriptor(owner, name)?.value === "function");
}

const TYPED_ARRAYS = [
  "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
  "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
] as const;

/**
 * The built-ins a worker runs without --allow-source, as the global paths the client ships them
 * by (["Math", "max"]; ["parseInt"] for a global function).
 */
export const PURE_BUILT_INS: readonly (readonly string[])[] = [
  // Math: arithmetic on numbers (Math.random reads the engine's generator, which tasks share harmlessly).
  ...functionMembers(Math).map((name) => ["Math", name]),
  // JSON: text to data and back; a reviver or replacer can only be a function the task was allowed.
  ["JSON", "parse"],
  ["JSON", "stringify"],
  // Conversions and tests of numbers, strings, booleans and bigints: new values, arguments untouched.
  ["Number"], ["Number", "isFinite"], ["Number", "isInteger"], ["Number", "isNaN"], ["Number", "isSafeInteger"], ["Number", "parseFloat"], ["Number", "parseInt"],
  ["String"], ["String", "fromCharCode"], ["String", "fromCodePoint"], ["String", "raw"],
  ["Boolean"],
  ["BigInt"], ["BigInt", "asIntN"], ["BigInt", "asUintN"],
  ["parseInt"], ["parseFloat"], ["isNaN"], ["isFinite"],
  ["encodeURI"], ["encodeURIComponent"], ["decodeURI"], ["decodeURIComponent"],
  // Dates as numbers: the clock and date arithmetic.
  ["Date", "now"], ["Date", "parse"], ["Date", "UTC"],
  // New arrays from data.
  ["Array", "isArray"], ["Array", "of"], ["Array", "from"],
  ...TYPED_ARRAYS.flatMap((name) => [[name, "from"], [name, "of"]]),
  // Reading an object's own enumerable data, building a new object, comparing. Not the Object
  // statics that change their argument (assign, defineProperty, defineProperties,
  // setPrototypeOf, freeze, seal, preventExtensions) nor those that reach prototypes or property
  // descriptors (getPrototypeOf, getOwnPropertyDescriptor(s), create), the way to the Function
  // constructor described above.
  ["Object", "keys"], ["Object", "values"], ["Object", "entries"], ["Object", "fromEntries"],
  ["Object", "is"], ["Object", "hasOwn"], ["Object", "isFrozen"], ["Object", "isSealed"], ["Object", "isExtensible"],
  // Left out on purpose, besides the above: eval, Function and every global that compiles code
  // (WebAssembly.*); Reflect.* (reads and calls anything); process.*, require, fetch, timers and
  // queueMicrotask (reach the process, the network, or run callbacks after the task); Atomics.*
  // (writes shared memory; wait blocks the thread); structuredClone (its transfer option detaches
  // the argument's buffers); Symbol.for (the process-wide registry); Buffer.allocUnsafe (old memory);
  // Promise.* and the groupBy statics (call functions of their arguments, of no use to a task).
];

const pureBuiltInKeys = new Set(PURE_BUILT_INS.map((path) => path.join(".")));

/** `path` without leading "globalThis"s: the client may ship eval as ["globalThis", "eval"]. */
export function withoutGlobalThis(path: readonly string[]): readonly string[] {
  let start = 0;
  while (start < path.length - 1 && path[start] === "globalThis") start++;
  return path.slice(start);
}

/** Whether a global path (without leading "globalThis"s) names one of PURE_BUILT_INS. */
export function isPureBuiltIn(path: readonly string[]): boolean {
  return pureBuiltInKeys.has(path.join("."));
}

// Node's built-in modules walked for their functions, but for those whose loading has an effect on
// the whole process: domain (makes every EventEmitter domain-aware), the deprecated aliases sys
// and punycode and the experimental wasi and node:-only modules (each prints a warning), and the
// "_"-prefixed internals (aliases of public classes, some deprecated). A module the gate trusts
// could still re-export a function of those; their functions only make domains, convert
// punycode, or are classes a task cannot call without `new`.
const UNWALKED_MODULES = new Set(["domain", "sys", "punycode", "wasi"]);

let unsafeFunctions: WeakSet<object> | undefined;

/** Collects the functions isUnsafeFunction knows (about 0.1 s, once per process): a worker does it as it starts, not on its first task. */
export function collectUnsafeFunctions(): void {
  unsafeFunctions ??= unsafeFunctionsOfThisProcess();
}

/**
 * Whether `fn` is a function of a Node built-in module (fs.writeFileSync, child_process.execSync,
 * their members such as util.types.isDate), or one that compiles code or reaches the process
 * (eval, the Function constructors, WebAssembly.*, process.*, Reflect.*): refused even when a
 * module under an allowed root exports it.
 */
export function isUnsafeFunction(fn: object): boolean {
  collectUnsafeFunctions();
  return unsafeFunctions!.has(fn);
}

function unsafeFunctionsOfThisProcess(): WeakSet<object> {
  const found = new WeakSet<object>();
  const visited = new WeakSet<object>();
  const walk = (value: unknown, depth: number): void => {
    if (value === null || (typeof value !== "object" && typeof value !== "function") || visited.has(value)) return;
    visited.add(value);
    if (typeof value === "function") found.add(value);
    if (depth === 0) return;
    for (const name of Object.getOwnPropertyNames(value)) walk(Object.getOwnPropertyDescriptor(value, name)?.value, depth - 1);
  };
  for (const name of builtinModules) {
    if (UNWALKED_MODULES.has(name) || name.startsWith("_") || name.startsWith("node:")) continue;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    walk(require(name), 2);
  }
  const compilers = [async () => {}, function* () {}, async function* () {}].map((fn) => Object.getPrototypeOf(fn).constructor as unknown);
  for (const value of [eval, Function, ...compilers]) walk(value, 0);
  for (const owner of [process, Reflect, (globalThis as Record<string, unknown>).WebAssembly]) walk(owner, 1);
  return found;
}
