// The cluster worker's data store on its own, in this process: when a value it lets go of gives
// its memory back at once (its buffers detached), and when that is left to the garbage collector.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { DataStore } from "../../src/kernel/distributed/worker/store";
import { markPlainStandIns, releaseBuffers } from "../../src/kernel/execution/buffers";
import { waitFor } from "../helpers/wait";

const VALUES = 1_000_000;
const BYTES = 8 * VALUES;

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), "tsdask-store-"));
});
afterEach(() => {
  rmSync(folder, { recursive: true, force: true });
});

function block(seed: number): Float64Array {
  return new Float64Array(VALUES).fill(seed);
}

test("releaseBuffers gives an ArrayBuffer's memory back before it returns", () => {
  const before = process.memoryUsage().arrayBuffers;
  const arrays = [block(1), block(2)];
  assert.ok(process.memoryUsage().arrayBuffers - before >= 2 * BYTES);
  releaseBuffers(arrays.map((array) => array.buffer as ArrayBuffer));
  assert.deepEqual(arrays.map((array) => array.length), [0, 0]);
  assert.ok(process.memoryUsage().arrayBuffers - before < BYTES, "no garbage collection needed");
});

test("a spilled value gives its memory back at once, and reads back equal", () => {
  // Room for two blocks: the third spills the oldest.
  const store = new DataStore(folder, 2.5 * BYTES);
  const kept = [block(0), block(1), block(2)];
  kept.forEach((value, i) => store.put(`b-${i}`, value, BYTES, "Float64Array"));
  assert.deepEqual(store.layout(), { memory: ["b-1", "b-2"], disk: ["b-0"] });
  assert.equal(kept[0].length, 0, "the spilled block's buffer was released");
  assert.equal(kept[1].length, VALUES);
  const back = store.get("b-0") as Float64Array;
  assert.ok(back.length === VALUES && back[0] === 0 && back[VALUES - 1] === 0);
  store.close();
  assert.deepEqual(readdirSync(folder), []);
});

test("a value handed out (lent) is left to the garbage collector when spilled or deleted", () => {
  const store = new DataStore(folder, 2.5 * BYTES);
  const lent = block(7);
  store.put("lent", lent, BYTES, "Float64Array");
  assert.equal(store.get("lent"), lent);
  store.delete("lent");
  assert.equal(lent.length, VALUES, "still usable by whoever it was given to");
  assert.equal(store.awaitsCollection, true);
  store.close();
});

test("a buffer two values share is released with the last of them", () => {
  const store = new DataStore(folder, 2.5 * BYTES);
  const shared = block(3);
  store.put("a", shared, BYTES, "Float64Array");
  store.put("b", { again: shared }, BYTES, "Object");
  store.delete("a");
  assert.equal(shared.length, VALUES, "b still holds it");
  store.delete("b");
  assert.equal(shared.length, 0);
  store.close();
});

test("a value in shared memory standing in for plain memory spills as plain memory, and the store collects it rather than waiting for a later collection", async () => {
  const store = new DataStore(folder, 1.5 * BYTES);
  // Made and stored where this test keeps no reference to it, as a task thread's result is; a weak
  // reference tells when it was collected.
  const standInRef = ((): WeakRef<Float64Array> => {
    const standIn = new Float64Array(new SharedArrayBuffer(BYTES)).fill(4);
    markPlainStandIns([standIn.buffer as SharedArrayBuffer]);
    store.put("kept", standIn, BYTES, "Float64Array");
    return new WeakRef(standIn);
  })();
  // A weak reference holds its target until the job that made it ends.
  await new Promise((resolve) => setImmediate(resolve));
  const before = process.memoryUsage().arrayBuffers;
  store.put("next", block(5), BYTES, "Float64Array");
  assert.deepEqual(store.layout(), { memory: ["next"], disk: ["kept"] });
  // Shared memory cannot be detached: the store ran a full collection to give it back.
  assert.equal(standInRef.deref(), undefined, "the store collected the stand-in it spilled");
  // V8 frees the collected memory on a background thread, within milliseconds (83 ms at worst
  // measured on a loaded 2-core machine).
  await waitFor("V8 to free the collected stand-in's memory", () => process.memoryUsage().arrayBuffers - before < BYTES / 2, 1);
  const back = store.get("kept") as Float64Array;
  assert.ok(back.buffer instanceof ArrayBuffer, "read back as the plain memory it stood in for");
  assert.ok(back.length === VALUES && back[0] === 4 && back[VALUES - 1] === 4);
  store.close();
});
