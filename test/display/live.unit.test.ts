// The display bridge against a fake tslab: throttling, coalescing, flush, a busy socket, and
// finding the kernel's tslab (the real kernel is exercised by test/notebook.test.ts).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { display, inNotebook, newLiveDisplay } from "../../src";
import type { MimeBundle } from "../../src/protocol";
import { ThrottledDisplay } from "../../src/kernel/display/live";
import { FakeClock } from "../helpers/fake-clock";
import { findChannel, type OutputSlot } from "../../src/kernel/display/tslab";

/** Records what would have gone to the kernel; can be told to be busy, like tslab's socket. */
class FakeSlot implements OutputSlot {
  shown: { bundle: MimeBundle; at: number }[] = [];
  busyFor = 0;
  failWith: Error | undefined;
  constructor(private readonly clock: FakeClock) {}
  show(bundle: MimeBundle): void {
    if (this.failWith !== undefined) throw this.failWith;
    if (this.busyFor > 0) {
      this.busyFor--;
      throw Object.assign(new Error("Socket is busy writing"), { code: "EBUSY" });
    }
    this.shown.push({ bundle, at: this.clock.now() });
  }
}

function setup(intervalMs = 100) {
  const clock = new FakeClock();
  const slot = new FakeSlot(clock);
  return { clock, slot, live: new ThrottledDisplay(slot, intervalMs, clock) };
}

const progress = (done: number): MimeBundle => ({ "text/plain": `${done}%` });

describe("ThrottledDisplay", () => {
  test("the first update is sent at once, in the caller's turn", () => {
    const { slot, live } = setup();
    live.update(progress(0));
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(0)]);
    assert.equal(live.sends, 1);
  });

  test("a synchronous burst becomes one send now and one send of the last bundle an interval later", () => {
    const { clock, slot, live } = setup(100);
    for (let i = 0; i <= 2000; i++) live.update(progress(i));
    assert.equal(slot.shown.length, 1);
    clock.advance(99);
    assert.equal(slot.shown.length, 1);
    clock.advance(1);
    assert.deepEqual(slot.shown.map((s) => [s.bundle, s.at]), [
      [progress(0), 0],
      [progress(2000), 100],
    ]);
    assert.equal(clock.pendingTimers, 0, "nothing left scheduled once the last bundle is out");
  });

  test("steady fast updates are sent at most once per interval, the latest each time", () => {
    const { clock, slot, live } = setup(100);
    for (let i = 0; i < 1000; i++) {
      live.update(progress(i));
      clock.advance(1);
    }
    clock.advance(100);
    // 1000 ms of updates: the leading send, then one per 100 ms.
    assert.equal(slot.shown.length, 11);
    for (let k = 1; k < slot.shown.length; k++) {
      assert.ok(slot.shown[k]!.at - slot.shown[k - 1]!.at >= 100, "sends are an interval apart");
    }
    assert.deepEqual(slot.shown.at(-1)!.bundle, progress(999));
  });

  test("an update after a quiet period is sent at once", () => {
    const { clock, slot, live } = setup(100);
    live.update(progress(1));
    clock.advance(500);
    live.update(progress(2));
    assert.deepEqual(slot.shown.map((s) => s.at), [0, 500]);
  });

  test("flush sends the pending bundle on a later turn, without waiting for the interval", async () => {
    const { clock, slot, live } = setup(100);
    live.update(progress(1));
    live.update(progress(2));
    const flushed = live.flush();
    assert.equal(slot.shown.length, 1, "flush does not send in the caller's turn");
    await flushed;
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(1), progress(2)]);
    assert.equal(clock.pendingTimers, 0, "the throttle timer was cancelled");
    clock.advance(1000);
    assert.equal(slot.shown.length, 2, "nothing is sent twice");
  });

  test("finish sends the last state in the caller's turn, inside the interval, and cancels the pending one", async () => {
    const { clock, slot, live } = setup(100);
    live.update(progress(1));
    clock.advance(10);
    live.update(progress(2));
    const finished = live.finish(progress(3));
    assert.deepEqual(slot.shown.map((s) => [s.bundle, s.at]), [[progress(1), 0], [progress(3), 10]]);
    await finished;
    clock.advance(1000);
    assert.equal(slot.shown.length, 2, "the superseded update is not sent after the last state");
  });

  test("finish retries through a busy socket", async () => {
    const { clock, slot, live } = setup(100);
    live.update(progress(1));
    slot.busyFor = 2;
    const finished = live.finish(progress(2));
    for (let i = 0; i < 10 && slot.shown.length < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(10);
    }
    await finished;
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(1), progress(2)]);
  });

  test("flush with nothing pending sends nothing", async () => {
    const { slot, live } = setup();
    await live.flush();
    live.update(progress(1));
    await live.flush();
    assert.equal(slot.shown.length, 1);
  });

  test("a busy socket delays the bundle instead of dropping it; the first message stays display_data", () => {
    const { clock, slot, live } = setup(100);
    slot.busyFor = 2;
    live.update(progress(1)); // busy: no throw, retried later
    assert.equal(live.sends, 0);
    clock.advance(100); // busy again
    live.update(progress(2));
    clock.advance(100);
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(2)]);
    assert.equal(live.sends, 1);
  });

  test("flush retries through a busy socket", async () => {
    const { clock, slot, live } = setup(100);
    live.update(progress(1));
    live.update(progress(2));
    slot.busyFor = 3;
    const flushed = live.flush();
    for (let i = 0; i < 10 && slot.shown.length < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(10);
    }
    await flushed;
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(1), progress(2)]);
  });

  test("other send errors surface: thrown by update, or by the next flush when a timer hit them", async () => {
    const { clock, slot, live } = setup(100);
    slot.failWith = new Error("Not ready");
    assert.throws(() => live.update(progress(1)), /Not ready/);
    slot.failWith = undefined;
    live.update(progress(2));
    live.update(progress(3));
    slot.failWith = new Error("cyclic payload");
    clock.advance(100);
    await assert.rejects(live.flush(), /cyclic payload/);
    slot.failWith = undefined;
    await live.flush();
    assert.deepEqual(slot.shown.map((s) => s.bundle), [progress(2)]);
  });
});

describe("options", () => {
  test("minIntervalMs must be a number high enough to protect the kernel", () => {
    assert.throws(() => newLiveDisplay({ minIntervalMs: 0 }), /minIntervalMs must be a number ≥ 20.*got 0/);
    assert.throws(() => newLiveDisplay({ minIntervalMs: Number.NaN }), /got NaN/);
    assert.throws(() => newLiveDisplay({ minIntervalMs: "100" as unknown as number }), /got 100/);
  });
});

describe("outside a notebook", () => {
  test("there is no notebook: no live display, display() shows nothing", () => {
    assert.equal(inNotebook(), false);
    assert.equal(newLiveDisplay(), null);
    assert.equal(display({ "text/plain": "x" }), false);
  });
});

describe("finding the kernel's tslab", () => {
  const dirs: string[] = [];
  afterEach(() => {
    delete (globalThis as { __tslab__?: unknown }).__tslab__;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A package laid out like tslab 1.0.x, loaded the way the kernel loads it, and tslab's global hook. */
  function fakeKernel(withJupyter: boolean) {
    const dir = mkdtempSync(join(tmpdir(), "fake-tslab-"));
    dirs.push(dir);
    mkdirSync(join(dir, "dist"));
    if (withJupyter) {
      writeFileSync(join(dir, "dist/jupyter.js"), "exports.lastWriteDisplayData = null;\n");
    }
    writeFileSync(
      join(dir, "dist/public.js"),
      `exports.raws = [];
       exports.newDisplay = () => ({ raw: (mime, value) => exports.raws.push([mime, value]) });\n`,
    );
    const publicModule = require(join(dir, "dist/public.js")) as { raws: [string, string][] };
    const jupyter = withJupyter
      ? (require(join(dir, "dist/jupyter.js")) as { lastWriteDisplayData: unknown })
      : undefined;
    (globalThis as { __tslab__?: unknown }).__tslab__ = {
      require: (id: string) => {
        if (id !== "tslab") throw new Error(`unexpected require ${id}`);
        return publicModule;
      },
    };
    return { publicModule, jupyter };
  }

  test("whole bundles, with the payload as a JSON object, go through tslab's writer with one display id", () => {
    const { jupyter } = fakeKernel(true);
    const sent: { content: { data: unknown; transient: { display_id?: string } }; update: boolean }[] = [];
    jupyter!.lastWriteDisplayData = (content: (typeof sent)[number]["content"], update: boolean) => {
      sent.push({ content, update });
    };
    const channel = findChannel();
    assert.equal(channel?.mode, "bundle");
    const slot = channel!.newSlot();
    const payload = { kind: "progress", done: 1 };
    slot.show({ "application/vnd.tsdask.v1+json": payload, "text/plain": "1" });
    slot.show({ "application/vnd.tsdask.v1+json": { ...payload, done: 2 }, "text/plain": "2" });
    assert.deepEqual(
      sent.map((s) => s.update),
      [false, true],
    );
    assert.deepEqual(sent[0]!.content.data, { "application/vnd.tsdask.v1+json": payload, "text/plain": "1" });
    const ids = new Set(sent.map((s) => s.content.transient.display_id));
    assert.equal(ids.size, 1);
    assert.match([...ids][0]!, /^[0-9a-f]{16}$/);
    const other = channel!.newSlot();
    other.show({ "text/plain": "other" });
    assert.notEqual(sent[2]!.content.transient.display_id, sent[0]!.content.transient.display_id);
  });

  test("before any cell has run, showing fails with a clear error", () => {
    fakeKernel(true);
    assert.throws(() => findChannel()!.newSlot().show({ "text/plain": "x" }), /not ready/);
  });

  test("without tslab's writer, the public API gets the first MIME type, JSON as text", () => {
    const { publicModule } = fakeKernel(false);
    const channel = findChannel();
    assert.equal(channel?.mode, "raw");
    channel!.newSlot().show({ "application/vnd.tsdask.v1+json": { done: 1 }, "text/plain": "1" });
    assert.deepEqual(publicModule.raws, [["application/vnd.tsdask.v1+json", '{"done":1}']]);
  });

  test("no tslab hook (a plain process, a worker thread) means no channel", () => {
    assert.equal(findChannel(), null);
    (globalThis as { __tslab__?: unknown }).__tslab__ = { require: () => ({}) };
    assert.equal(findChannel(), null, "a module without newDisplay is not tslab");
  });
});
