// ResourceProfiler: ports of dask's test_resource_profiler*, plus the sampler thread's guarantees.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ResourceProfiler, get, now, withCallbacks } from "../../src";
import { PidusageSampler, processCpuMicros } from "../../src/kernel/diagnostics/sampler";
import { SCHEDULERS, dsk2, sleep } from "./fixtures";
import { busy } from "./tasks";

for (const scheduler of SCHEDULERS) {
  describe(`ResourceProfiler (${scheduler})`, () => {
    test("R4: samples in a block, stops, restarts", async () => {
      const rprof = new ResourceProfiler({ dt: 0.01 });
      let tIn = 0;
      await withCallbacks(rprof, () => {
        tIn = now();
        return get(dsk2, "c", { scheduler });
      });
      assert.ok(rprof.results.length > 0);
      for (const r of rprof.results) assert.deepEqual(Object.keys(r).sort(), ["cpu", "mem", "time"]);
      assert.ok(rprof.startTime! < tIn && tIn < rprof.endTime!);
      assert.equal(rprof.running, false);
      rprof.clear();
      assert.deepEqual(rprof.results, []);
      rprof.close();
      rprof.close();
      assert.equal(rprof.running, false);
      await withCallbacks(rprof, () => get(dsk2, "c", { scheduler }));
      assert.ok(rprof.results.length > 0);
    });

    test("R5: several computations in a block, then registered", async () => {
      const rprof = new ResourceProfiler({ dt: 0.01 });
      await withCallbacks(rprof, async () => {
        await get(dsk2, "c", { scheduler });
        assert.equal(rprof.results.length, 0, "in a block, results arrive at its end (Dask)");
        await get(dsk2, "c", { scheduler });
      });
      assert.ok(rprof.results.length > 10);
      const times = rprof.results.map((r) => r.time);
      assert.deepEqual(times, [...times].sort((a, b) => a - b));
      rprof.clear();
      rprof.register();
      try {
        await get(dsk2, "c", { scheduler });
        const n = rprof.results.length;
        assert.ok(n > 0, "registered: results at each finish");
        await get(dsk2, "c", { scheduler });
        assert.ok(rprof.results.length > n);
        assert.ok(rprof.running, "the sampler thread waits between registered computations");
      } finally {
        rprof.unregister();
      }
      assert.equal(rprof.running, false);
      assert.ok(rprof.startTime! <= rprof.results[0].time && rprof.results.at(-1)!.time <= rprof.endTime!);
      const snapshot = rprof.snapshot();
      assert.equal(snapshot.kind, "resources");
      assert.ok(snapshot.startTime <= rprof.results[0].time && rprof.results.at(-1)!.time <= snapshot.endTime);
    });

    test("opts.callbacks", async () => {
      const rprof = new ResourceProfiler({ dt: 0.01 });
      await get(dsk2, "c", { scheduler, callbacks: [rprof] });
      assert.ok(rprof.results.length > 0);
      assert.equal(rprof.running, true);
      rprof.close();
    });

    test("the first sample is a real measurement and stopping is prompt", async () => {
      const rprof = new ResourceProfiler({ dt: 5 });
      const t0 = performance.now();
      await withCallbacks(rprof, () => get({ x: [busy, 50] }, "x", { scheduler }));
      const took = performance.now() - t0;
      assert.ok(took < 1000, `a dt=5 block took ${took.toFixed(0)} ms`);
      assert.ok(rprof.results.length >= 1);
      assert.ok(rprof.results[0].cpu > 10, `first sample cpu ${rprof.results[0].cpu}`);
      assert.ok(rprof.results[0].mem > 10);
    });
  });
}

test("samples keep coming while the main thread is busy in a synchronous task", async () => {
  const rprof = new ResourceProfiler({ dt: 0.1 });
  let share = 0; // the CPU this process really got during the task, % of one core
  const measured = (ms: number): number => {
    const [wall, cpu] = [performance.now(), processCpuMicros()];
    const result = busy(ms);
    share = (100 * (processCpuMicros() - cpu)) / 1000 / (performance.now() - wall);
    return result;
  };
  await withCallbacks(rprof, () => get({ x: [measured, 600] }, "x"));
  const during = rprof.results.filter((r) => r.time > rprof.startTime! + 0.05 && r.time < rprof.endTime! - 0.05);
  assert.ok(during.length >= 4, `${during.length} samples during the task`);
  // The machine's cores are shared with other work, so compare with the share the task got, not 100%.
  assert.ok(share > 15, `the busy task got ${share.toFixed(1)}% of a core`);
  const cpus = during.map((r) => r.cpu.toFixed(1)).join(", ");
  // One 0.1 s interval can be starved by the other work; most must show the task's load.
  assert.ok(during.filter((r) => r.cpu > share / 2).length >= 4, `cpu ${cpus} while busy (task got ${share.toFixed(1)}%)`);
  const mean = during.reduce((sum, r) => sum + r.cpu, 0) / during.length;
  assert.ok(Math.abs(mean - share) < share * 0.4, `mean ${mean.toFixed(1)}% vs ${share.toFixed(1)}%: ${cpus}`);
});

test("memory and CPU of descendant processes are counted (grandchildren too)", async () => {
  const rprof = new ResourceProfiler({ dt: 0.05 });
  const script = "const b=Buffer.alloc(150e6,1);const e=Date.now()+700;let x=0;while(Date.now()<e)x+=b[x%1000];";
  await withCallbacks(rprof, async () => {
    await sleep(150);
    // sh → node: the node process is a grandchild of this one.
    const child = spawn("sh", ["-c", `"${process.execPath}" -e "${script}"`], { stdio: "ignore" });
    await new Promise((resolve) => child.on("exit", resolve));
  });
  const before = rprof.results.filter((r) => r.time < rprof.startTime! + 0.14);
  const peak = Math.max(...rprof.results.map((r) => r.mem));
  assert.ok(before.length > 0);
  assert.ok(peak - Math.max(...before.map((r) => r.mem)) > 100, `memory rose by ${peak - before[0].mem} MB`);
  assert.ok(Math.max(...rprof.results.map((r) => r.cpu)) > 40);
});

test("the sampler's own work is not counted", async () => {
  // Sampling every 2 ms makes the sampler thread itself a clear share of the process's CPU.
  const rprof = new ResourceProfiler({ dt: 0.002 });
  let actual = 0;
  await withCallbacks(rprof, async () => {
    const [wall, cpu] = [performance.now(), processCpuMicros()];
    await sleep(500);
    actual = (100 * (processCpuMicros() - cpu)) / 1000 / (performance.now() - wall);
  });
  const settled = rprof.results.slice(3);
  const mean = settled.reduce((sum, r) => sum + r.cpu, 0) / settled.length;
  assert.ok(settled.length > 20, `${settled.length} samples`);
  assert.ok(actual > 5, `the process used ${actual.toFixed(1)}% (mostly sampling)`);
  assert.ok(mean < actual / 2, `reported ${mean.toFixed(2)}% of ${actual.toFixed(2)}% used by the whole process`);
});

test("a registered ResourceProfiler never keeps a script from exiting", () => {
  const entry = join(__dirname, "../../src/index.js");
  const script = `const t=require(${JSON.stringify(entry)});new t.ResourceProfiler({dt:0.05}).register();
    t.get({x:[()=>1]},"x").then(v=>console.log("done",v));`;
  const t0 = performance.now();
  const result = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), "done 1");
  assert.ok(performance.now() - t0 < 5000);
});

test("the pidusage fallback (other platforms) measures this process", async () => {
  const sampler = new PidusageSampler();
  await sampler.restart({ time: now(), cpuMicros: processCpuMicros() });
  busy(100);
  const sample = await sampler.sample();
  assert.ok(sample.mem > 10 && sample.cpu > 10, JSON.stringify(sample));
});

test("bad options are named", () => {
  assert.throws(() => new ResourceProfiler({ dt: 0 }), /dt/);
});

test("a block's sampler thread is reused by the next profiler, with that profiler's own dt", async () => {
  const fast = new ResourceProfiler({ dt: 0.01 });
  await withCallbacks(fast, () => sleep(300));
  const slow = new ResourceProfiler({ dt: 0.25 });
  await withCallbacks(slow, () => sleep(600));
  assert.ok(fast.results.length >= 10, `${fast.results.length} samples at dt 0.01 over 0.3 s`);
  // The first sample comes 0.1 s in, then every 0.25 s, then the final one: about four.
  assert.ok(slow.results.length >= 2 && slow.results.length <= 6, `${slow.results.length} samples at dt 0.25 over 0.6 s`);
  assert.ok(slow.results.every((r) => r.time >= slow.startTime! && r.time <= slow.endTime! + 0.05));
  assert.equal(fast.running || slow.running, false);
});

test("overlapping blocks each get a sampler thread of their own", async () => {
  const a = new ResourceProfiler({ dt: 0.02 });
  const b = new ResourceProfiler({ dt: 0.02 });
  await Promise.all([withCallbacks(a, () => sleep(200)), withCallbacks(b, () => sleep(300))]);
  assert.ok(a.results.length >= 3 && b.results.length >= 3, `${a.results.length} and ${b.results.length} samples`);
  assert.ok(a.results.at(-1)!.time < b.results.at(-1)!.time);
});

test("an idle sampler thread kept for the next profiler never keeps a script from exiting", () => {
  const entry = join(__dirname, "../../src/index.js");
  const script = `const t=require(${JSON.stringify(entry)});
    t.withCallbacks(new t.ResourceProfiler({dt:0.05}), () => t.get({x:[()=>1]},"x")).then(v=>console.log("done",v));`;
  const t0 = performance.now();
  const result = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), "done 1");
  assert.ok(performance.now() - t0 < 5000);
});
