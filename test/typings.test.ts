// The shipped .d.ts files type-check under tslab's own compiler (TypeScript 5.0.4, its cell
// options): notebooks compile every cell against them, so newer syntax would break users.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

type Ts = typeof import("typescript");
const ts = require("@tslab/typescript-for-tslab") as Ts;
const root = join(__dirname, "..", "..");

const cell = `
import { get, delayed, compute, Callback, withCallbacks, ref, quote, type Key, type State } from "tsdask";
const add = (a: number, b: number) => a + b;
class PrintKeys extends Callback {
  pretask(key: Key, _dsk: unknown, state: State) { console.log(key, state.ready.length); }
}
async function main() {
  const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [add, ref("c"), quote("x")] };
  const result = await withCallbacks([new PrintKeys()], () => get(dsk, "c", { scheduler: "sync" }));
  const inc = delayed((x: number) => x + 1, { name: "inc" });
  const n: number = await inc(inc(1)).compute();
  const [x, y] = await compute(inc(1), inc(2));
  const cb = new Callback({ pretask: (key) => console.log(key) }).register();
  cb[Symbol.dispose]();
  return [result, n, x, y];
}
main();
`;

test("a tslab cell using the public API compiles with TypeScript 5.0 against dist/*.d.ts", () => {
  assert.equal(ts.version, "5.0.4");
  const dir = mkdtempSync(join(tmpdir(), "tsdask-typings-"));
  try {
    const file = join(dir, "cell.ts");
    writeFileSync(file, cell);
    const program = ts.createProgram([file], {
      // tslab's hard-coded cell options (research/tslab-check.md §2).
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      lib: ["lib.es2022.d.ts"],
      moduleResolution: ts.ModuleResolutionKind.NodeJs,
      esModuleInterop: true,
      noEmit: true,
      baseUrl: root,
      paths: { tsdask: ["dist/index.d.ts"] },
      typeRoots: [join(root, "node_modules/tslab/node_modules/@types"), join(root, "node_modules/@types")],
      types: ["node"],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    assert.deepEqual(diagnostics, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
