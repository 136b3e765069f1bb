// The code gate's decision alone (judgeFunction, FunctionGate.admit), on module files in a
// temporary folder: which specs a Redis worker without --allow-source runs, and why not the others.
// The same gate against real workers and a real Redis: redis-gate.test.ts.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { PURE_BUILT_INS } from "../../src/kernel/distributed/redis/built-ins";
import { FunctionGate, type GateSettings, WorkerCannotRunError, defaultModuleRoots, judgeFunction, resolveModuleRoots } from "../../src/kernel/distributed/redis/functions";
import type { FnSpec } from "../../src/kernel/execution/wire";

const base = realpathSync(mkdtempSync(join(tmpdir(), "tsdask-gate-")));
const project = join(base, "project");
const outside = join(base, "outside");
const pkg = join(project, "node_modules", "pkg");
for (const folder of [project, outside, pkg, join(project, "sub")]) mkdirSync(folder, { recursive: true });
writeFileSync(join(project, "package.json"), "{}\n");
writeFileSync(join(project, "tasks.js"), "exports.triple = (x) => x * 3;\nexports.ratio = 0.5;\nObject.defineProperty(exports, 'lazy', { enumerable: true, get: () => (x) => x });\n");
writeFileSync(join(project, "reexport.js"), "exports.run = require('node:child_process').execSync;\nexports.write = require('fs').promises.writeFile;\nexports.compile = eval;\n");
writeFileSync(join(project, "whole.js"), "module.exports = (x) => -x;\n");
writeFileSync(join(pkg, "index.js"), "exports.f = (x) => x;\n");
writeFileSync(join(outside, "evil.js"), "exports.f = (x) => x;\n");
symlinkSync(join(outside, "evil.js"), join(project, "link.js"));
symlinkSync(outside, join(project, "linked-folder"));
after(() => rmSync(base, { recursive: true, force: true }));

const settings: GateSettings = { worker: "w1", host: "h1", allowSource: false, moduleRoots: resolveModuleRoots([project]) };
const moduleExport = (path: string, name: string): FnSpec => ({ kind: "module", path, name });
const builtIn = (...path: string[]): FnSpec => ({ kind: "global", path });
const reason = (spec: unknown, with_: GateSettings = settings): string => {
  const verdict = judgeFunction(spec, with_);
  assert.equal(verdict.allowed, false, `${JSON.stringify(spec)} is refused`);
  return verdict.allowed ? "" : verdict.reason;
};

describe("the code gate's decision", () => {
  test("pure built-ins run, as the client ships them (globalThis.x too); eval, Function, process, Reflect, WebAssembly and mutating statics do not", () => {
    for (const path of [["Math", "max"], ["JSON", "parse"], ["Number", "parseFloat"], ["parseInt"], ["Array", "from"], ["Object", "keys"], ["Float64Array", "from"]]) {
      assert.deepEqual(judgeFunction(builtIn(...path), settings), { allowed: true, spec: builtIn(...path) });
    }
    assert.deepEqual(judgeFunction(builtIn("globalThis", "parseFloat"), settings), { allowed: true, spec: builtIn("parseFloat") });
    const refused = [
      ["eval"], ["globalThis", "eval"], ["Function"], ["Function", "prototype", "constructor"], ["process", "getBuiltinModule"],
      ["process", "binding"], ["require"], ["globalThis"], ["WebAssembly", "compile"], ["Reflect", "apply"], ["Object", "defineProperty"],
      ["Object", "assign"], ["Object", "getPrototypeOf"], ["Object", "getOwnPropertyDescriptors"], ["structuredClone"], ["Atomics", "wait"],
      ["setTimeout"], ["fetch"], ["Buffer", "allocUnsafe"], ["Math", "max", "call"], ["Math"],
    ];
    for (const path of refused) {
      assert.match(reason(builtIn(...path)), /^is the built-in .*, which worker w1 \(host h1\) does not run: .*--allow-source/, path.join("."));
    }
  });

  test("every allowed built-in is a function of the worker's globalThis", () => {
    for (const path of PURE_BUILT_INS) {
      const value = path.reduce<unknown>((owner, name) => (owner as Record<string, unknown>)[name], globalThis);
      assert.equal(typeof value, "function", path.join("."));
    }
  });

  test("functions of Node's built-in modules are refused however they are named, re-exports included", () => {
    for (const path of ["child_process", "node:child_process", "fs", "node:fs", "fs/promises", "vm", "worker_threads"]) {
      assert.match(reason(moduleExport(path, "execSync")), new RegExp(`^is exported by ${path}, a Node built-in module, whose functions worker w1 \\(host h1\\) runs only when started with --allow-source`));
    }
    for (const name of ["run", "write", "compile"]) {
      assert.match(reason(moduleExport(join(project, "reexport.js"), name)), /reexport\.js, and that is a function of a Node built-in module \(or eval, Function, process\.\*\)/, name);
    }
  });

  test("exports of modules under a root run, by their real path; elsewhere, in node_modules, through a symlink or with '..' they do not", () => {
    assert.deepEqual(judgeFunction(moduleExport(join(project, "tasks.js"), "triple"), settings), { allowed: true, spec: moduleExport(join(project, "tasks.js"), "triple") });
    assert.deepEqual(judgeFunction(moduleExport(join(project, "tasks"), "triple"), settings), { allowed: true, spec: moduleExport(join(project, "tasks.js"), "triple") }, "resolved as require would");
    assert.equal(judgeFunction(moduleExport(join(project, "whole.js"), ""), settings).allowed, true, "a module that is a function");
    const outsideRoots = /lies outside the module roots of worker w1 \(host h1\) \(.*\/project; node_modules below them excepted\): start the worker with --module-root/;
    assert.match(reason(moduleExport(join(outside, "evil.js"), "f")), outsideRoots);
    assert.match(reason(moduleExport(join(pkg, "index.js"), "f")), outsideRoots);
    assert.match(reason(moduleExport(join(project, "link.js"), "f")), /module .*\/project\/link\.js \(.*\/outside\/evil\.js\), which lies outside/);
    assert.match(reason(moduleExport(join(project, "linked-folder", "evil.js"), "f")), /\(.*\/outside\/evil\.js\), which lies outside/);
    assert.match(reason(moduleExport(`${project}/../outside/evil.js`, "f")), /is not an absolute path without "\.\."/);
    assert.match(reason(moduleExport("./tasks.js", "triple")), /is not an absolute path/);
    assert.match(reason(moduleExport(join(project, "missing.js"), "f")), /missing\.js, which does not exist on worker w1 \(host h1\): install the same code/);
    // A package's folder named as a root allows it.
    assert.equal(judgeFunction(moduleExport(join(pkg, "index.js"), "f"), { ...settings, moduleRoots: resolveModuleRoots([project, "node_modules/pkg"], project) }).allowed, true);
    assert.equal(judgeFunction(moduleExport(join(outside, "evil.js"), "f"), { ...settings, moduleRoots: resolveModuleRoots([join(outside, "evil.js")]) }).allowed, true, "a file as a root");
  });

  test("only an own data property that is a function: no getter, no inherited constructor, no value", () => {
    for (const name of ["lazy", "constructor", "__proto__", "ratio", "nothing"]) {
      assert.match(reason(moduleExport(join(project, "tasks.js"), name)), /is not a function that module .*tasks\.js exports/, name);
    }
  });

  test("specs of any other shape are refused", () => {
    for (const spec of [null, 7, "eval", {}, { kind: "weird" }, { kind: "global", path: "eval" }, { kind: "global", path: [] }, { kind: "module", path: 1, name: "" }, { kind: "source", source: "() => 1" }]) {
      assert.match(reason(spec), /^is not a function spec this worker knows .*, so worker w1 \(host h1\) does not run it$/);
    }
  });

  test("a contextMeter.meter wrapper passes as the function it wraps", () => {
    const metered = (inner: unknown, label = "I/O"): FnSpec => ({ kind: "metered", label, inner }) as FnSpec;
    const resolved = moduleExport(join(project, "tasks.js"), "triple");
    assert.deepEqual(judgeFunction(metered(moduleExport(join(project, "tasks"), "triple")), settings), { allowed: true, spec: metered(resolved) }, "its module resolved");
    assert.deepEqual(judgeFunction(metered(metered(builtIn("Math", "max")), "outer"), settings), { allowed: true, spec: metered(metered(builtIn("Math", "max")), "outer") });
    assert.match(reason(metered({ kind: "source", source: "(x) => x + 1", method: false })), /^travels as source text/);
    assert.match(reason(metered(moduleExport(join(outside, "evil.js"), "f"))), /lies outside the module roots/);
    assert.match(reason(metered(builtIn("eval"))), /is the built-in eval/);
    let deep: unknown = builtIn("Math", "max");
    for (let i = 0; i < 100; i++) deep = metered(deep);
    assert.match(reason(deep), /^is not a function spec this worker knows/, "nesting is bounded");
    assert.match(reason(metered(builtIn("Math", "max"), "")), /^is not a function spec this worker knows/, "a label is required");
  });

  test("source text only with --allow-source, which also lifts the rest of the gate", () => {
    const source: FnSpec = { kind: "source", source: "(x) => x + 1", method: false };
    assert.match(reason(source), /^travels as source text, and worker w1 \(host h1\) does not run shipped source: .*--allow-source/);
    const open = { ...settings, allowSource: true };
    for (const spec of [source, builtIn("eval"), moduleExport("child_process", "execSync"), moduleExport(join(outside, "evil.js"), "f")]) {
      assert.deepEqual(judgeFunction(spec, open), { allowed: true, spec });
    }
    assert.match(reason(moduleExport(join(project, "missing.js"), "f"), open), /does not exist/);
  });

  test("default roots: the project a worker starts in (found from a folder inside it) and tsdask's task functions", () => {
    const roots = defaultModuleRoots(join(project, "sub"));
    assert.equal(roots[0], project);
    assert.ok(roots.some((root) => root.endsWith(join("kernel", "collections"))), roots.join(", "));
    assert.ok(roots.some((root) => /kernel\/distributed\/client\/diagnostics\.[jt]s$/.test(root)), roots.join(", "));
    assert.equal(defaultModuleRoots(outside).length, 2, "no package.json up from the folder: no project");
    assert.throws(() => resolveModuleRoots(["no-such-folder"], project), /Module root no-such-folder does not exist/);
  });
});

describe("FunctionGate.admit", () => {
  const gate = new FunctionGate(settings);

  test("the functions of a job, with module paths replaced by the files checked, or the error refusing the first", () => {
    assert.deepEqual(gate.admit([[0, builtIn("Math", "max")], [3, moduleExport(join(project, "tasks"), "triple")]], "task 'x'"), [
      [0, builtIn("Math", "max")],
      [3, moduleExport(join(project, "tasks.js"), "triple")],
    ]);
    const refused = gate.admit([[0, builtIn("Math", "max")], [1, builtIn("eval")]], "task 'x'");
    assert.ok(refused instanceof WorkerCannotRunError);
    assert.match(refused.message, /^Function eval of task 'x' is the built-in eval, which worker w1 \(host h1\) does not run/);
    assert.match((gate.admit({ 0: builtIn("Math", "max") }, "task 'x'") as Error).message, /The functions of task 'x' are not a list of function specs/);
    assert.match((gate.admit([[null, builtIn("Math", "max")]], "client.run") as Error).message, /Function Math\.max of client\.run has no function id/);
  });
});
