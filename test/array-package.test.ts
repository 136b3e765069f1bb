// `tsdask/array` as a user reaches it: Node's require and tslab's TypeScript 5.0 (node10 module
// resolution, which ignores "exports") both go through array/package.json to dist/.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cellDiagnostics, inUserProject } from "./helpers/tslab-cell";

const root = join(__dirname, "..", "..");

const cell = `
import * as da from "tsdask/array";
import { array } from "tsdask";
async function main(): Promise<number> {
  const a = da.random.normal([100, 100], { chunks: [10, 10], seed: 1 });
  const res = a.dot(a.T).mean({ axis: 0 });
  const out: { shape: readonly number[]; data: Float64Array } = await res.compute({ scheduler: "sync" });
  const [q, r] = array.linalg.qr(da.random.random([40, 4], { chunks: [10, 4] }));
  const chunks: readonly (readonly number[])[] = q.dot(r).chunks;
  return out.data.length + chunks.length + da.ones(3).add(da.zeros(3)).shape[0];
}
main();
`;

test("require('tsdask/array') and its types resolve through array/package.json", async () => {
  await inUserProject(async (dir) => {
    const resolved = require.resolve("tsdask/array", { paths: [dir] });
    assert.equal(resolved, join(root, "dist/kernel/collections/array/index.js"));
    const da = require(resolved) as typeof import("../src/kernel/collections/array");
    const out = await da.ones([2, 3], { chunks: 2 }).sum({ axis: 1 }).compute();
    assert.deepEqual([...out.data], [3, 3]);
    // The pool schedulers come with get() itself, not with the package's main entry.
    const pooled = await da.ones([4, 2], { chunks: 2 }).sum({ axis: 0 }).compute({ scheduler: "threads" });
    assert.deepEqual([...pooled.data], [4, 4]);
    assert.deepEqual(cellDiagnostics(dir, cell), []);
  });
});
