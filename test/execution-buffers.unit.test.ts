// Big inputs handed to a task thread as moved copies (src/kernel/execution/buffers: BufferMover,
// holdsBigBuffer): what the thread gets must be what structured clone would give it, and the
// values here must not change.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import {
  BufferMover,
  OWNED_BUFFER_MIN_BYTES,
  PlainRestorer,
  STAND_IN_MAX_BYTES,
  holdsBigBuffer,
  holdsPlainStandIn,
  inSharedMemory,
  isSharedMemory,
  markPlainStandIns,
  standsInForPlain,
} from "../src/kernel/execution/buffers";

const BIG = OWNED_BUFFER_MIN_BYTES;

/** What a message carrying `value` with `transfer` delivers (the same machinery as a thread's postMessage). */
function delivered(value: unknown, transfer: readonly ArrayBuffer[]): Promise<unknown> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port2.once("message", (data: unknown) => {
      port1.close();
      port2.close();
      resolve(data);
    });
    port1.postMessage(value, [...transfer]);
  });
}

test("holdsBigBuffer finds a big plain buffer anywhere structured clone reaches, and nothing else", () => {
  const big = new Float64Array(BIG / 8);
  assert.equal(holdsBigBuffer(big), true);
  assert.equal(holdsBigBuffer(big.buffer), true);
  assert.equal(holdsBigBuffer({ a: [1, new Map([["k", new Set([big])]])] }), true);
  assert.equal(holdsBigBuffer(new Uint8Array(big.buffer, 8, 4)), true, "a small view of a big buffer: a clone copies all of it");
  assert.equal(holdsBigBuffer(new Float64Array(BIG / 8 - 1)), false, "under the threshold");
  assert.equal(holdsBigBuffer(new Float64Array(new SharedArrayBuffer(BIG))), false, "shared memory is shared, not copied");
  assert.equal(holdsBigBuffer([1, "x", { y: null }, new Date(0)]), false);
  const cycle: Record<string, unknown> = { n: 1 };
  cycle.self = cycle;
  assert.equal(holdsBigBuffer(cycle), false);
});

test("BufferMover moves copies of big plain buffers and leaves the originals and everything else alone", async () => {
  const floats = new Float64Array(BIG / 8).map((_, i) => i);
  const bytes = new Uint8Array(floats.buffer, 8, 16);
  const shared = new Int32Array(new SharedArrayBuffer(BIG)).fill(7);
  const small = new Float32Array([1, 2, 3]);
  const date = new Date(5);
  const value = { floats, bytes, shared, small, date, list: [floats, , "x"], map: new Map([["f", floats]]), set: new Set([bytes]), nested: { n: 1 } };

  const mover = new BufferMover();
  const moved = mover.move(value) as typeof value;
  // One copy per buffer, however many views of it there are.
  assert.equal(mover.transfer.length, 1);
  assert.notEqual(moved.floats.buffer, floats.buffer);
  assert.equal(moved.bytes.buffer, moved.floats.buffer, "views that shared a buffer still share one");
  assert.equal(moved.list[0], moved.floats);
  assert.equal(moved.map.get("f"), moved.floats);
  assert.equal([...moved.set][0], moved.bytes);
  assert.equal(1 in moved.list, false, "holes are kept");
  assert.equal(moved.shared, shared, "shared memory is left for the message to share");
  assert.equal(moved.small, small);
  assert.equal(moved.date, date);
  assert.equal(moved.nested, value.nested, "what holds no big buffer is not rebuilt");

  const arrived = (await delivered(moved, mover.transfer)) as typeof value;
  assert.equal(arrived.floats instanceof Float64Array, true);
  assert.deepEqual([arrived.floats.length, arrived.floats[1], arrived.floats[floats.length - 1]], [floats.length, 1, floats.length - 1]);
  assert.deepEqual([arrived.bytes.byteOffset, arrived.bytes.length, arrived.bytes.buffer === arrived.floats.buffer], [8, 16, true]);
  assert.equal(arrived.shared.buffer instanceof SharedArrayBuffer, true);
  // The copies moved; the originals are whole, and can be moved again.
  assert.equal(mover.transfer[0].byteLength, 0);
  assert.deepEqual([floats.length, floats[1], bytes.length], [BIG / 8, 1, 16]);
  const again = new BufferMover();
  again.move(value);
  assert.equal(again.transfer.length, 1);
  assert.equal(again.transfer[0].byteLength, BIG);
});

test("BufferMover gives a view its built-in class, as structured clone does, and keeps cycles", async () => {
  const buffer = Buffer.alloc(BIG, 3);
  const view = new DataView(new ArrayBuffer(BIG), 4, 8);
  const cycle: Record<string, unknown> = { buffer };
  cycle.self = cycle;
  const mover = new BufferMover();
  const moved = mover.move([cycle, view]) as [typeof cycle, DataView];
  assert.equal(moved[0].self, moved[0]);
  assert.equal(moved[1] instanceof DataView, true);
  assert.deepEqual([moved[1].byteOffset, moved[1].byteLength], [4, 8]);
  const cloned = structuredClone([cycle, view]) as [typeof cycle, DataView];
  const arrived = (await delivered(moved, mover.transfer)) as [typeof cycle, DataView];
  assert.equal(Object.getPrototypeOf(arrived[0].buffer), Object.getPrototypeOf(cloned[0].buffer));
  assert.equal(arrived[0].self, arrived[0]);
  assert.equal((arrived[0].buffer as Uint8Array)[BIG - 1], 3);
});

test("BufferMover moves a given buffer itself, uncopied: it arrives whole and is detached here; other big buffers are still copied", async () => {
  const given = new Float64Array(BIG / 8).fill(2);
  const kept = new Float64Array(BIG / 8).fill(3);
  const mover = new BufferMover(new Set([given.buffer]));
  const moved = mover.move({ given, kept, again: [given] }) as { given: Float64Array; kept: Float64Array; again: Float64Array[] };
  assert.equal(moved.given.buffer, given.buffer, "no copy of the given buffer");
  assert.notEqual(moved.kept.buffer, kept.buffer);
  assert.equal(moved.again[0], moved.given);
  assert.deepEqual(mover.transfer, [given.buffer, moved.kept.buffer]);
  const arrived = (await delivered(moved, mover.transfer)) as typeof moved;
  assert.deepEqual([arrived.given.length, arrived.given[0], arrived.kept[0]], [BIG / 8, 2, 3]);
  assert.equal(given.length, 0, "the given buffer left this side");
  assert.deepEqual([kept.length, kept[0]], [BIG / 8, 3], "a copied one stays whole");
});

test("inSharedMemory copies the buffers a value owns into stand-ins, keeping each view's class, offset and length, and releases the originals; bigger ones are left to move", () => {
  const floats = new Float64Array(BIG / 8).map((_, i) => i);
  const tail = new DataView(floats.buffer, 0, BIG);
  const bare = new ArrayBuffer(BIG);
  const part = new Int16Array(new ArrayBuffer(2 * BIG), 0, BIG / 2);
  const real = new Uint8Array(new SharedArrayBuffer(BIG));
  const small = new Float32Array([1, 2]);
  const huge = new Uint8Array(STAND_IN_MAX_BYTES + 1);
  const standIns: SharedArrayBuffer[] = [];
  const moved: ArrayBuffer[] = [];
  const shared = inSharedMemory({ floats, tail, bare, part, real, small, again: [floats], huge }, standIns, moved) as {
    floats: Float64Array;
    tail: DataView;
    bare: SharedArrayBuffer;
    part: Int16Array;
    real: Uint8Array;
    small: Float32Array;
    again: Float64Array[];
    huge: Uint8Array;
  };
  assert.equal(standIns.length, 2, "one stand-in per owned buffer, however many views it has");
  assert.ok(shared.floats instanceof Float64Array && shared.floats.buffer === standIns[0]);
  assert.ok(shared.tail instanceof DataView && shared.tail.buffer === standIns[0]);
  assert.deepEqual([shared.floats.length, shared.floats[1], shared.floats[BIG / 8 - 1], shared.tail.byteLength], [BIG / 8, 1, BIG / 8 - 1, BIG]);
  assert.equal(shared.bare, standIns[1]);
  assert.equal(shared.again[0], shared.floats);
  assert.equal(shared.part, part, "a partly viewed buffer may hold others' data: left alone");
  assert.deepEqual([shared.real, shared.small], [real, small]);
  assert.deepEqual([floats.length, bare.byteLength], [0, 0], "the originals were released");
  // Copying so big a buffer would hold it twice: it moves as it is.
  assert.deepEqual([shared.huge === huge, moved.length, moved[0] === huge.buffer], [true, 1, true]);
  // Not marked yet: the receiving side marks the stand-ins its message names.
  assert.equal(standsInForPlain(standIns[0]), false);
  markPlainStandIns(standIns);
  assert.deepEqual([standsInForPlain(standIns[0]), isSharedMemory(standIns[0]), isSharedMemory(real.buffer)], [true, false, true]);
  assert.equal(holdsPlainStandIn({ x: [shared.floats] }), true);
  assert.equal(holdsPlainStandIn({ real }), false);
  assert.equal(holdsBigBuffer(shared.floats), true, "a stand-in is handed to a thread as plain memory would be");
});

test("BufferMover shares a marked stand-in uncopied and names it; PlainRestorer gives plain memory back with the same view class, offset and length", async () => {
  const standIn = new SharedArrayBuffer(BIG);
  new Float64Array(standIn).fill(6);
  markPlainStandIns([standIn]);
  const view = new Int32Array(standIn, 8, 4);
  const whole = new Float64Array(standIn);
  const mover = new BufferMover();
  const moved = mover.move({ view, whole }) as { view: Int32Array; whole: Float64Array };
  assert.deepEqual(mover.transfer, [], "nothing copied on this side");
  assert.deepEqual([...mover.standIns], [standIn]);
  assert.equal(moved.whole, whole);

  // What the thread gets, and what it makes of it with the stand-ins the message named.
  const arrived = (await delivered([[...mover.standIns], moved], [])) as [SharedArrayBuffer[], typeof moved];
  const named = new Set<ArrayBufferLike>(arrived[0]);
  const restored = new PlainRestorer((buffer) => named.has(buffer)).restore(arrived[1]) as typeof moved;
  assert.ok(restored.view instanceof Int32Array && restored.whole instanceof Float64Array);
  assert.ok(restored.whole.buffer instanceof ArrayBuffer && !(restored.whole.buffer instanceof SharedArrayBuffer));
  assert.equal(restored.view.buffer, restored.whole.buffer, "views that shared a stand-in share its plain copy");
  assert.deepEqual([restored.view.byteOffset, restored.view.length, restored.whole.length, restored.whole[3]], [8, 4, BIG / 8, 6]);
  restored.whole[0] = 1;
  assert.equal(whole[0], 6, "the copy is the task's own: the stored value does not change");
  const untouched = { n: 1 };
  assert.equal(new PlainRestorer().restore(untouched), untouched, "what holds no stand-in is not rebuilt");
});
