// The statistical profiler on the three local schedulers: a CPU-hot function dominates the tree
// under its task prefix with the right line numbers, prefixes and time windows select, the
// administrative side holds the rest, and the fold turns tagged samples into trees.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { type SchedulerName, StatisticalProfiler, get, now, withCallbacks } from "../../src";
import { computeProfile } from "../../src/protocol/profile";
import type { ProfileNode } from "../../src/protocol/records";
import { foldThreadProfile } from "../../src/kernel/profiling/fold";
import { profiling } from "../../src/kernel/profiling/hub";
import { wakeSampler } from "../../src/kernel/profiling/thread-sampler";
import { HOT_FILE, HOT_ID, HOT_LINE, findFrame } from "./fixtures";
import { combine, hotLoop, mostlyWaiting } from "./hot";

/** Four hot tasks, two waiting ones, and one that gathers them. */
function graph(): Record<string, unknown> {
  const dsk: Record<string, unknown> = {};
  for (let i = 0; i < 4; i++) dsk[`burn-${i}`] = [hotLoop, 8000];
  for (let i = 0; i < 2; i++) dsk[`wait-${i}`] = [mostlyWaiting, 100];
  dsk.total = [combine, "burn-0", "burn-1", "burn-2", "burn-3", "wait-0", "wait-1"];
  return dsk;
}

function findNamed(tree: ProfileNode, name: string): ProfileNode | undefined {
  const stack = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node !== tree && node.description.name === name) return node;
    stack.push(...Object.values(node.children));
  }
  return undefined;
}

describe("StatisticalProfiler on the local schedulers", () => {
  for (const scheduler of ["sync", "threads", "processes"] as SchedulerName[]) {
    test(`${scheduler}: the hot function dominates its prefix's tree, on the lines of its source`, async () => {
      const sp = new StatisticalProfiler();
      const before = now();
      await withCallbacks(sp, () => get(graph(), "total", { scheduler, numWorkers: 2 }));
      assert.equal(profiling.active, undefined, "profiling is off once the block has ended");
      const prefixes = sp.prefixes.map((p) => p.prefix);
      assert.equal(prefixes[0], "burn", `prefixes: ${JSON.stringify(sp.prefixes)}`);
      const burn = sp.profile({ key: "burn" });
      // ≥ 0.4 s of CPU at one sample per 10 ms: even a crowded machine gives a fair number.
      assert.ok(burn.count >= 10, `${burn.count} samples under burn`);
      const hot = findFrame(burn, HOT_ID);
      assert.ok(hot !== undefined, `no ${HOT_ID} in ${JSON.stringify(Object.keys(burn.children))}`);
      assert.ok(hot.count >= 0.8 * burn.count, `hotLoop has ${hot.count} of ${burn.count} samples`);
      assert.equal(burn.children[HOT_ID]?.count, hot.count, "the tree starts at the task's own function");
      assert.equal(hot.description.name, "hotLoop");
      assert.equal(hot.description.filename, HOT_FILE);
      assert.equal(hot.description.line_number, HOT_LINE);
      assert.match(hot.description.line, /Math\.sqrt\(i\) \/ i; \/\/ HOT LINE <img/);
      // Selections: a key's prefix, another prefix, a time window before the run.
      assert.equal(sp.profile({ key: "burn-3" }).count, burn.count, "a key stands for its prefix");
      assert.equal(findFrame(sp.profile({ key: "wait" }), HOT_ID), undefined, "hotLoop never ran under wait");
      assert.equal(sp.profile({ stop: before - 5 }).count, 0);
      assert.equal(sp.results.count, computeProfile(sp.windows).count);
      assert.ok(sp.results.count >= burn.count);
      assert.ok(sp.timeline().reduce((sum, point) => sum + point.count, 0) === sp.results.count);
      // The calling thread's scheduling work is administrative, never compute.
      assert.equal(findNamed(sp.results, "runLoop"), undefined);
    });
  }

  test("registered (no block): the profile is complete when get() resolves, and sampling stops", async () => {
    const sp = new StatisticalProfiler().register();
    try {
      await get({ a: [hotLoop, 8000] }, "a", { scheduler: "threads", numWorkers: 1 });
      assert.equal(profiling.active, undefined);
      const hot = findFrame(sp.results, HOT_ID);
      assert.ok(hot !== undefined && hot.count >= 5, `hotLoop: ${hot?.count} samples`);
    } finally {
      sp.unregister();
    }
  });

  test("options are checked", () => {
    assert.throws(() => new StatisticalProfiler({ interval: 0 }), /interval must be a number of seconds/);
    assert.throws(() => new StatisticalProfiler({ cycle: 0.001 }), /cycle must be a number of seconds/);
    assert.throws(() => new StatisticalProfiler({ interval: 2, cycle: 1 }), /cycle \(1 s\) must be at least the interval/);
    assert.throws(() => new StatisticalProfiler({ intervl: 1 } as never), /Unknown StatisticalProfiler option "intervl"/);
  });
});

describe("the fold", () => {
  // Stack nodes: 0 (root) → 1 worker loop (runner file) → 2 task fn; 0 → 3 (idle); 0 → 4 loop outside.
  const runner = join(__dirname, "../../src/kernel/graph/spec.js");
  const frames = [
    ["(root)", "", -1],
    ["evaluate", `file://${runner}`, 40],
    ["userFn", "file:///app/user.js", 9],
    ["(idle)", "", -1],
    ["poll", "file:///app/loop.js", 3],
  ] as const;
  const profile = {
    frames,
    nodeFrame: Int32Array.from([0, 1, 2, 3, 4]),
    nodeParent: Int32Array.from([-1, 0, 1, 0, 0]),
    nodeLine: Int32Array.from([0, 0, 12, 0, 0]),
    //        task 0 ×2, idle, outside, task 1 (2.5 s: next window), at task 1's edge outside its runner
    samples: Int32Array.from([2, 2, 3, 4, 2, 4]),
    times: Float64Array.from([1.1, 1.2, 1.3, 1.4, 2.5, 2.500001]),
    sampleTask: Int32Array.from([0, 0, -1, -1, 1, 1]),
    nearEdge: Uint8Array.from([0, 0, 0, 0, 0, 1]),
    openTask: 2,
    until: 3,
  };
  const keys = ["inc-1", ["dec-ab12cd34", 3]] as const;

  test("samples go to their task's prefix, cut at the runner; idle is dropped; the rest is administrative", () => {
    const windows = foldThreadProfile(profile, { cycle: 1, source: "7", keyOf: (task) => keys[task] as never });
    assert.deepEqual(windows.map((w) => [w.time, w.stop, w.source]), [[1, 2, "7"], [2, 3, "7"]]);
    const [first, second] = windows;
    assert.deepEqual(Object.keys(first.compute), ["inc"]);
    const user = first.compute.inc.children["userFn;/app/user.js;10"];
    assert.equal(user.count, 2, "the tree starts after the runner frame");
    assert.deepEqual(user.description, { filename: "/app/user.js", name: "userFn", line_number: 12, line: "" });
    assert.equal(first.administrative.count, 1, "idle is not counted; the loop sample is administrative");
    assert.ok(first.administrative.children["poll;/app/loop.js;4"]);
    assert.equal(second.compute.dec.count, 1);
    assert.equal(second.administrative.count, 1, "at a task's edge, a stack outside the runner is not the task's");
  });

  test("Node's module loader is left out; WebAssembly kernels show under their AssemblyScript file", () => {
    // 0 (root) → 1 runner → 2 userFn → 3, 4 the loader (a require) → 5 a kernel of the required module.
    const loaded = {
      ...profile,
      frames: [
        ...frames.slice(0, 3),
        ["Module._load", "node:internal/modules/cjs/loader", 1000],
        ["require", "node:internal/modules/helpers", 170],
        ["asm/gemm/multiplyStrips", "wasm://wasm/babbc0be", 0],
      ] as const,
      nodeFrame: Int32Array.from([0, 1, 2, 3, 4, 5]),
      nodeParent: Int32Array.from([-1, 0, 1, 2, 3, 4]),
      nodeLine: Int32Array.from([0, 0, 12, 0, 0, 0]),
      samples: Int32Array.from([5, 4]),
      times: Float64Array.from([1.1, 1.2]),
      sampleTask: Int32Array.from([0, 0]),
      nearEdge: Uint8Array.from([0, 0]),
      openTask: 1,
    };
    const [window] = foldThreadProfile(loaded, { cycle: 1, source: "7", keyOf: (task) => keys[task] as never });
    const user = window.compute.inc.children["userFn;/app/user.js;10"];
    assert.equal(user.count, 2, "a sample inside the loader stays with the code that required");
    assert.deepEqual(Object.keys(user.children), ["multiplyStrips;asm/gemm.ts;0"], "no loader frame between the caller and the kernel");
    assert.equal(user.children["multiplyStrips;asm/gemm.ts;0"].description.filename, "asm/gemm.ts");
  });

  test("the scheduler's loop outside a runner is administrative, even inside a task's interval", () => {
    // 0 (root) → 1 runLoop (the schedulers' loop) → 2 a promise hook: what an async task's last
    // moments look like while the loop resumes before marking its end.
    const loop = join(__dirname, "../../src/kernel/scheduler/loop.js");
    const inLoop = {
      ...profile,
      frames: [frames[0], ["runLoop", `file://${loop}`, 39], ["promiseInitHook", "node:internal/async_hooks", 319]] as const,
      nodeFrame: Int32Array.from([0, 1, 2]),
      nodeParent: Int32Array.from([-1, 0, 1]),
      nodeLine: Int32Array.from([0, 0, 0]),
      samples: Int32Array.from([2]),
      times: Float64Array.from([1.1]),
      sampleTask: Int32Array.from([0]),
      nearEdge: Uint8Array.from([0]),
      openTask: 1,
    };
    const [window] = foldThreadProfile(inLoop, { cycle: 1, source: "7", keyOf: (task) => keys[task] as never });
    assert.deepEqual(Object.keys(window.compute), [], "no task's profile has the loop");
    assert.equal(window.administrative.count, 1);
  });

  test("a task whose key is unknown counts as administrative", () => {
    const windows = foldThreadProfile(profile, { cycle: 1, source: "7", keyOf: () => undefined });
    assert.equal(computeProfile(windows).count, 0);
  });
});

describe("the thread sampler", () => {
  test("a hand-over adds no sample of its own (V8's stack at a profile's start is dropped)", () => {
    // One sample a second: none is due in the few milliseconds below, so every batch must be empty.
    const sampler = wakeSampler(1);
    try {
      sampler.collect();
      for (let i = 0; i < 3; i++) {
        const until = performance.now() + 3;
        while (performance.now() < until);
        const batch = sampler.collect();
        assert.equal(batch.samples.length, 0, `hand-over ${i} brought ${batch.samples.length} sample(s) no interval had taken`);
      }
    } finally {
      sampler.sleep();
    }
  });
});
