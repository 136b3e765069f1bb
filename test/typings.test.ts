// The shipped .d.ts files type-check under tslab's own compiler (TypeScript 5.0.4, its cell
// options): notebooks compile every cell against them, so newer syntax would break users.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellDiagnostics, inUserProject, tslabTypeScript } from "./helpers/tslab-cell";

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

test("a tslab cell using the public API compiles with TypeScript 5.0 against dist/*.d.ts", async () => {
  assert.equal(tslabTypeScript.version, "5.0.4");
  assert.deepEqual(await inUserProject((dir) => cellDiagnostics(dir, cell)), []);
});
