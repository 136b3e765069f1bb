// ProgressBar: ports of dask/diagnostics/tests/test_progress.py, plus the quirks fixed here.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Callback, ProgressBar, get, withCallbacks } from "../../src";
import type { LiveDisplay, MimeBundle } from "../../src/kernel/display";
import { MIME_TYPE, type ProgressPayload } from "../../src/protocol";
import { FakeOut, SCHEDULERS, checkBarCompleted, dsk, dsk2, sleep } from "./fixtures";
import { add, boom, mul, nap } from "./tasks";

for (const scheduler of SCHEDULERS) {
  describe(`ProgressBar (${scheduler})`, () => {
    test("P2: draws a completed bar of the given width", async () => {
      const out = new FakeOut();
      assert.equal(await withCallbacks(new ProgressBar({ out }), () => get(dsk, "e", { scheduler })), 6);
      checkBarCompleted(out.text);
      assert.ok(out.text.startsWith("\r[" + " ".repeat(40) + "] | 0% Completed | "), "Dask draws 0% at once");
      assert.ok(out.text.endsWith("\n"));
      const narrow = new FakeOut();
      await withCallbacks(new ProgressBar({ out: narrow, width: 20 }), () => get(dsk, "e", { scheduler }));
      checkBarCompleted(narrow.text, 20);
    });

    test("P3: prints nothing when the run is shorter than minimum", async () => {
      const out = new FakeOut();
      await withCallbacks(new ProgressBar({ minimum: 10, out }), () => get(dsk, "e", { scheduler }));
      assert.equal(out.text, "");
    });

    test("P4: a failing run stops the timer and ends the line", async () => {
      const out = new FakeOut();
      await assert.rejects(withCallbacks(new ProgressBar({ out, dt: 0.01 }), () => get({ a: [boom] }, "a", { scheduler })), RangeError);
      assert.ok(out.text.endsWith("\n"));
      const after = out.text;
      await sleep(50);
      assert.equal(out.text, after, "no redraw after the end");
    });

    test("a failed run leaves the last partial percentage", async () => {
      const out = new FakeOut();
      await assert.rejects(withCallbacks(new ProgressBar({ out, width: 10 }), () => get({ x: [add, 1, 2], y: [boom, "x"] }, "y", { scheduler })));
      assert.match(out.text, /\r\[#####     \] \| 50% Completed \| [\d.]+ (us|ms)\n$/);
      assert.doesNotMatch(out.text, /100%/);
    });

    test("P6: register() and unregister()", async () => {
      assert.equal(Callback.active.size, 0);
      const out = new FakeOut();
      const pbar = new ProgressBar({ out }).register();
      assert.equal(Callback.active.size, 1);
      await get(dsk, "e", { scheduler });
      checkBarCompleted(out.text);
      pbar.unregister();
      assert.equal(Callback.active.size, 0);
    });

    test("opts.callbacks", async () => {
      const out = new FakeOut();
      await get(dsk, "e", { scheduler, callbacks: [new ProgressBar({ out })] });
      checkBarCompleted(out.text);
    });

    test("P7: a graph with no tasks completes", async () => {
      const out = new FakeOut();
      await withCallbacks(new ProgressBar({ out }), () => get({ x: 1 }, "x", { scheduler }));
      checkBarCompleted(out.text);
    });

    test("P9: aliases", async () => {
      const out = new FakeOut();
      const graph = { a: 1, b: 2, c: [add, "a", "b"], d: [add, 1, 2], e: "d", f: [mul, "e", "c"] };
      assert.equal(await withCallbacks(new ProgressBar({ out }), () => get(graph, "f", { scheduler })), 9);
      checkBarCompleted(out.text);
    });

    test("P10: lastDuration", async () => {
      const pbar = new ProgressBar({ out: new FakeOut() });
      await withCallbacks(pbar, () => get({ x: 1 }, "x", { scheduler }));
      assert.equal(typeof pbar.lastDuration, "number");
      assert.ok(pbar.lastDuration > 0 && pbar.lastDuration < 1);
    });

    test("redraws every dt while tasks run, percentages rising", async () => {
      const out = new FakeOut();
      const graph: Record<string, unknown> = {};
      for (let i = 0; i < 8; i++) graph[`t${i}`] = [nap, i];
      await withCallbacks(new ProgressBar({ out, dt: 0.02, width: 8 }), () => get(graph, Object.keys(graph), { scheduler }));
      const percents = out.text.split("\r").slice(1).map((draw) => Number(/(\d+)% Completed/.exec(draw)![1]));
      assert.ok(percents.length >= 8, `${percents.length} draws`);
      assert.deepEqual(percents, [...percents].sort((a, b) => a - b));
      assert.ok(new Set(percents).size >= 4, `distinct percentages ${[...new Set(percents)]}`);
      assert.equal(percents.at(-1), 100);
    });

    test("a file or log (not a TTY) gets plain lines, no \\r", async () => {
      const out = new FakeOut(false);
      await withCallbacks(new ProgressBar({ out }), () => get(dsk, "e", { scheduler }));
      assert.match(out.text, /^\[#{40}\] \| 100% Completed \| [\d.]+ (us|ms)\n$/);
    });

    test("concurrent computations in one block: the bar follows the first", async () => {
      const out = new FakeOut();
      await withCallbacks(new ProgressBar({ out }), () => Promise.all([get(dsk2, "c", { scheduler }), get(dsk2, "c", { scheduler })]));
      checkBarCompleted(out.text);
    });
  });
}

describe("ProgressBar, on the calling thread", () => {
  test("no dt of latency at the end: a trivial compute takes < 30 ms", async () => {
    const pbar = new ProgressBar({ out: new FakeOut() });
    await withCallbacks(pbar, () => get(dsk, "e", { scheduler: "sync" })); // warm up
    const t0 = performance.now();
    await withCallbacks(pbar, () => get(dsk, "e", { scheduler: "sync" }));
    assert.ok(performance.now() - t0 < 30, `took ${performance.now() - t0} ms`);
  });

  test("only the outermost computation draws", async () => {
    const out = new FakeOut();
    const inner = async (): Promise<number> => (await get(dsk, "e")) as number;
    const pbar = new ProgressBar({ out }).register();
    try {
      assert.equal(await get({ x: [inner], y: [add, "x", 1] }, "y"), 7);
    } finally {
      pbar.unregister();
    }
    checkBarCompleted(out.text);
  });
});

test("in a log, a run longer than 5 s gets one progress line per 5 s, then the final one", async () => {
  const out = new FakeOut(false);
  const graph: Record<string, unknown> = {};
  for (let i = 0; i < 11; i++) graph[`nap-${i}`] = [nap, i, 500];
  await withCallbacks(new ProgressBar({ out, width: 11 }), () => get(graph, Object.keys(graph)));
  const lines = out.text.split("\n");
  assert.equal(lines.pop(), "");
  assert.ok(!out.text.includes("\r"));
  assert.equal(lines.length, 2, JSON.stringify(out.text));
  assert.match(lines[0], /^\[#{7,10} *\] \| [7-9]\d% Completed \| 5\.\d\d s$/);
  assert.match(lines[1], /^\[#{11}\] \| 100% Completed \| 5\.\d\d s$/);
});

describe("ProgressBar in a notebook (fake LiveDisplay)", () => {
  class FakeDisplay implements LiveDisplay {
    bundles: MimeBundle[] = [];
    /** Bundles passed to finish(), the unthrottled last state. */
    finished = 0;
    sends = 0;
    update(bundle: MimeBundle): void {
      this.bundles.push(bundle);
    }
    flush(): Promise<void> {
      return Promise.resolve();
    }
    finish(bundle: MimeBundle): Promise<void> {
      this.finished++;
      this.bundles.push(bundle);
      return Promise.resolve();
    }
    payloads(): ProgressPayload[] {
      return this.bundles.map((bundle) => bundle[MIME_TYPE] as ProgressPayload);
    }
  }

  test("one live output, throttled, with per-prefix counts and a text fallback", async () => {
    const displays: FakeDisplay[] = [];
    const pbar = new ProgressBar({ display: () => (displays.push(new FakeDisplay()), displays.at(-1)!) });
    const graph = new Map<unknown, unknown>();
    const n = 100_000;
    for (let i = 0; i < n; i++) graph.set(["inc-abc123", i], [add, i, 1]);
    graph.set("total-1", [(...xs: number[]) => xs.length, ...[...graph.keys()]]);
    const t0 = performance.now();
    assert.equal(await withCallbacks(pbar, () => get(graph as never, "total-1")), n);
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(displays.length, 1);
    const [display] = displays;
    const payloads = display.payloads();
    assert.ok(payloads.length <= seconds * 10 + 2, `${payloads.length} updates in ${seconds.toFixed(2)} s`);
    const last = payloads.at(-1)!;
    assert.equal(last.kind, "progress");
    assert.equal(last.state, "finished");
    assert.equal(last.done, n + 1);
    assert.equal(last.total, n + 1);
    assert.deepEqual(last.groups, [
      { name: "inc", done: n, total: n },
      { name: "total", done: 1, total: 1 },
    ]);
    assert.deepEqual(payloads.map((p) => p.seq), payloads.map((_, i) => i + 1));
    assert.ok(payloads.every((p) => p.id === last.id && p.version === 1));
    assert.match(display.bundles.at(-1)!["text/plain"] as string, /^\[#{40}\] \| 100% Completed \| /);
    assert.equal(display.finished, 1, "the last state is sent unthrottled, once");
  });

  test("errored and cancelled runs", async () => {
    const display = new FakeDisplay();
    const pbar = new ProgressBar({ display: () => display });
    const boom = (): never => {
      throw new Error("boom");
    };
    await assert.rejects(withCallbacks(pbar, () => get({ x: [add, 1, 2], y: [boom, "x"] }, "y")));
    assert.equal(display.payloads().at(-1)!.state, "errored");
    assert.equal(display.payloads().at(-1)!.done, 1);

    const cancelled = new FakeDisplay();
    const controller = new AbortController();
    const stop = async (): Promise<number> => {
      controller.abort();
      await sleep(1);
      return 1;
    };
    await assert.rejects(
      get({ x: [stop], y: [add, "x", 1] }, "y", { signal: controller.signal, callbacks: [new ProgressBar({ display: () => cancelled })] }),
      { name: "AbortError" },
    );
    assert.equal(cancelled.payloads().at(-1)!.state, "cancelled");
  });

  test("falls back to text when no notebook output can be opened", async () => {
    const out = new FakeOut();
    await withCallbacks(new ProgressBar({ out, display: () => null }), () => get(dsk, "e"));
    checkBarCompleted(out.text);
  });
});

test("bad options are named", () => {
  assert.throws(() => new ProgressBar({ width: 0 }), /width/);
  assert.throws(() => new ProgressBar({ dt: -1 }), /dt/);
  assert.throws(() => new ProgressBar({ minimum: Number.NaN }), /minimum/);
  assert.throws(() => new ProgressBar({ out: {} as never }), /out/);
});
