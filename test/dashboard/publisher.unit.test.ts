// The dashboard feed's kernel side without a kernel: the publisher's throttling, coalescing and
// idling on a fake clock, merging and bounding of providers' sections, and DashboardFeed on real
// computations. (The real kernel → JupyterLab path: dashboard.browser.test.ts.)
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DashboardFeed, DashboardPublisher, get, withCallbacks } from "../../src";
import { boundSections, pruneProfile } from "../../src/kernel/dashboard/bounds";
import { mergeSections } from "../../src/kernel/dashboard/publisher";
import { DASHBOARD_LIMITS, type ComputationProgress, type DashboardSnapshot } from "../../src/protocol/dashboard";
import type { ProfileNode, TaskStreamRecord } from "../../src/protocol/records";
import { FakeClock } from "../helpers/fake-clock";

function setup(intervalMs = 500) {
  const clock = new FakeClock();
  const publisher = new DashboardPublisher({ minIntervalMs: intervalMs, notebook: false, clock });
  const seen: DashboardSnapshot[] = [];
  publisher.subscribe((snapshot) => seen.push(snapshot));
  return { clock, publisher, seen };
}

const run = (id: string, state: ComputationProgress["state"], started: number): ComputationProgress => ({
  id,
  label: id,
  started,
  done: 1,
  total: 2,
  elapsed: 1,
  state,
  groups: [],
});

describe("DashboardPublisher", () => {
  test("news is coalesced into at most one snapshot per interval, built from the latest data", () => {
    const { clock, publisher, seen } = setup(500);
    let done = 0;
    const source = publisher.provide({ name: "test", sections: () => ({ progress: [{ ...run("a", "running", 0), done }] }) });
    clock.advance(0);
    assert.equal(seen.length, 1, "a new provider is published at once");
    for (let i = 0; i < 10_000; i++) {
      done = i;
      source.changed();
      if (i % 100 === 0) clock.advance(10);
    }
    // 10 000 changes over 1 s: one snapshot per 500 ms, never a burst.
    clock.advance(500);
    assert.ok(seen.length <= 4, `${seen.length} snapshots`);
    for (let k = 1; k < seen.length; k++) assert.equal(seen[k]!.seq, seen[k - 1]!.seq + 1);
    assert.equal(seen.at(-1)!.progress![0]!.done, 9999, "the last snapshot has the last data");
  });

  test("idle means no timer: nothing is scheduled once the last news is out", () => {
    const { clock, publisher, seen } = setup();
    const source = publisher.provide({ name: "test", sections: () => ({}) });
    clock.advance(1000);
    assert.equal(clock.pendingTimers, 0);
    assert.equal(publisher.pending, false);
    const count = seen.length;
    clock.advance(60_000);
    assert.equal(seen.length, count, "no snapshot without news");
    source.changed();
    assert.equal(clock.pendingTimers, 1);
    clock.advance(0);
    assert.equal(seen.length, count + 1, "news after a quiet spell goes out at once");
    source.close();
    clock.advance(1000);
    assert.equal(seen.length, count + 2, "closing publishes once more, without the provider");
    assert.equal(clock.pendingTimers, 0);
    source.changed();
    source.close();
    assert.equal(clock.pendingTimers, 0, "a closed source cannot wake the publisher");
  });

  test("a live source is published every interval without a call per change, and idles when it stops", () => {
    const { clock, publisher, seen } = setup(500);
    const source = publisher.provide({ name: "running computation", sections: () => ({}) });
    clock.advance(0);
    source.setLive(true);
    clock.advance(5000);
    assert.equal(seen.length, 11, "the first snapshot, then one per 500 ms");
    source.setLive(false);
    clock.advance(500);
    const count = seen.length;
    clock.advance(60_000);
    assert.equal(seen.length, count, "idle once no source is live");
    assert.equal(clock.pendingTimers, 0);
    source.setLive(true);
    source.close();
    clock.advance(1000);
    assert.equal(clock.pendingTimers, 0, "closing a live source ends its live stretch");
  });

  test("a busy sink (tslab's EBUSY) is retried soon, with fresh data; other sink errors are reported, not thrown", () => {
    const { clock, publisher, seen } = setup(500);
    let busy = 2;
    publisher.subscribe(() => {
      if (busy-- > 0) throw Object.assign(new Error("Socket is busy writing"), { code: "EBUSY" });
    });
    publisher.provide({ name: "test", sections: () => ({}) });
    clock.advance(0);
    clock.advance(200);
    assert.equal(publisher.stats.retries, 2);
    assert.equal(clock.pendingTimers, 0, "retries stop once the sink took a snapshot");
    assert.equal(seen.length, 3);

    publisher.subscribe(() => {
      throw new Error("the page went away");
    });
    const source = publisher.provide({ name: "other", sections: () => ({}) });
    assert.doesNotThrow(() => clock.advance(1000));
    assert.equal(publisher.stats.lastError, "the page went away");
    source.close();
  });

  test("a provider that throws is named in the snapshot's errors; the others still publish", () => {
    const { clock, publisher, seen } = setup();
    publisher.provide({
      name: "Client",
      sections: () => {
        throw new Error("scheduler unreachable");
      },
    });
    publisher.provide({ name: "local", sections: () => ({ progress: [run("a", "running", 1)] }) });
    clock.advance(0);
    assert.deepEqual(seen.at(-1)!.errors, ["Client: scheduler unreachable"]);
    assert.equal(seen.at(-1)!.progress!.length, 1);
  });

  test("with nobody listening nothing is built; a newcomer gets the current state at once", () => {
    const clock = new FakeClock();
    const publisher = new DashboardPublisher({ notebook: false, clock });
    let calls = 0;
    const source = publisher.provide({ name: "test", sections: () => (calls++, {}) });
    source.setLive(true);
    clock.advance(5000);
    assert.equal(calls, 0, "no snapshot built for no one");
    assert.equal(clock.pendingTimers, 0, "and no timer kept for no one");
    const seen: DashboardSnapshot[] = [];
    publisher.subscribe((snapshot) => seen.push(snapshot));
    clock.advance(0);
    assert.equal(seen.length, 1);
    source.close();
  });

  test("refuses intervals that would flood the kernel and providers without sections()", () => {
    assert.throws(() => new DashboardPublisher({ minIntervalMs: 10 }), /minIntervalMs must be a number ≥ 100/);
    assert.throws(() => new DashboardPublisher().provide({} as never), /sections\(\) method/);
  });
});

describe("sections", () => {
  test("computations from every provider merge, running first then newest; other sections: first provider wins", () => {
    const merged = mergeSections([
      { progress: [run("old", "finished", 1)], memory: { process: 1 } as never },
      { progress: [run("new", "finished", 3), run("live", "running", 2)], memory: { process: 2 } as never },
    ]);
    assert.deepEqual(merged.progress!.map((p) => p.id), ["live", "new", "old"]);
    assert.equal((merged.memory as { process: number }).process, 1);
  });

  test("lists are cut to their limits, newest task-stream records kept", () => {
    const records = Array.from({ length: DASHBOARD_LIMITS.taskStream + 10 }, (_, i) => ({ key: `k-${i}` }) as unknown as TaskStreamRecord);
    const bounded = boundSections({ taskStream: { records, total: records.length } });
    assert.equal(bounded.taskStream!.records.length, DASHBOARD_LIMITS.taskStream);
    assert.equal(bounded.taskStream!.records[0]!.key, "k-10");
    assert.equal(bounded.taskStream!.total, records.length);
    const small = { progress: [run("a", "running", 0)] };
    assert.equal(boundSections(small).progress![0], small.progress[0], "lists within bounds are not copied");
  });

  test("a profile tree is pruned to its heaviest nodes, whole paths from the root", () => {
    const node = (name: string, count: number, children: ProfileNode[] = []): ProfileNode => ({
      identifier: name,
      count,
      description: { filename: "f.ts", name, line_number: 1, line: "" },
      children: Object.fromEntries(children.map((child) => [child.identifier, child])),
    });
    const tree = node("root", 100, [node("a", 60, [node("a1", 50), node("a2", 5)]), node("b", 40, [node("b1", 30)]), node("c", 1)]);
    const pruned = pruneProfile(tree, 4);
    const names: string[] = [];
    const walk = (n: ProfileNode): void => {
      names.push(n.identifier);
      Object.values(n.children).forEach(walk);
    };
    walk(pruned);
    assert.deepEqual(names, ["root", "a", "a1", "b"]);
    assert.equal(pruneProfile(tree, 100), tree);
  });
});

describe("DashboardFeed", () => {
  test("reports a computation's progress by key prefix, then its outcome; concurrent ones apart", async () => {
    const { clock, publisher, seen } = setup();
    const feed = new DashboardFeed({ publisher, label: "test run" });
    const inc = (x: number): number => x + 1;
    const dsk: Record<string, unknown> = { x: 1 };
    for (let i = 0; i < 20; i++) dsk[`inc-${i}`] = [inc, "x"];
    for (let i = 0; i < 5; i++) dsk[`sum-${i}`] = [(...xs: number[]) => xs.reduce((a, b) => a + b, 0), `inc-${i}`, `inc-${i + 5}`];
    await withCallbacks(feed, () => Promise.all([get(dsk, "sum-0"), get(dsk, Object.keys(dsk).filter((k) => k !== "x"))]));
    clock.advance(1000);
    const progress = seen.at(-1)!.progress!;
    assert.equal(progress.length, 2);
    const [whole, small] = [...progress].sort((a, b) => b.total - a.total);
    assert.deepEqual(
      { state: whole!.state, done: whole!.done, total: whole!.total, groups: whole!.groups },
      { state: "finished", done: 25, total: 25, groups: [{ name: "inc", done: 20, total: 20 }, { name: "sum", done: 5, total: 5 }] },
    );
    assert.deepEqual(small!.groups, [{ name: "inc", done: 2, total: 2 }, { name: "sum", done: 1, total: 1 }]);
    assert.equal(small!.label, "test run");
    assert.equal(clock.pendingTimers, 0, "idle after the computations");
  });

  test("a failed and a cancelled computation are marked so", async () => {
    const { clock, publisher, seen } = setup();
    const feed = new DashboardFeed({ publisher });
    const boom = (): never => {
      throw new RangeError("boom");
    };
    await assert.rejects(withCallbacks(feed, () => get({ a: [boom] }, "a")), RangeError);
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(withCallbacks(feed, () => get({ a: 1, b: [(x: number) => x, "a"] }, "b", { signal: controller.signal })));
    clock.advance(1000);
    assert.deepEqual(seen.at(-1)!.progress!.map((p) => p.state).sort(), ["cancelled", "errored"]);
  });

  test("keeps the running computations and the last few finished", async () => {
    const { clock, publisher, seen } = setup();
    const feed = new DashboardFeed({ publisher }).register();
    try {
      for (let i = 0; i < DASHBOARD_LIMITS.computations + 3; i++) await get({ a: 1, b: [(x: number) => x + i, "a"] }, "b");
    } finally {
      feed.unregister();
    }
    clock.advance(1000);
    const labels = seen.at(-1)!.progress!.map((p) => p.label);
    assert.equal(labels.length, DASHBOARD_LIMITS.computations);
    assert.equal(labels[0], `computation ${DASHBOARD_LIMITS.computations + 3}`, "newest first");
  });

  test("rejects a label that is not text", () => {
    assert.throws(() => new DashboardFeed({ label: 3 as never }), /label must be a string/);
  });
});
