// The profiling hub on its own (fake sources): leases turn sources on and off, the first lease's
// options apply, collect asks every source, windows reach listeners and a bounded history.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HISTORY_PER_SOURCE, ProfileHub, type ProfileSource } from "../../src/kernel/profiling/hub";
import { emptyProfile, type ProfileWindow } from "../../src/protocol/profile";

function source(log: string[], name: string): ProfileSource {
  return {
    start: (options) => void log.push(`${name} start ${options.interval}/${options.cycle}`),
    stop: () => void log.push(`${name} stop`),
    collect: async (timeout) => void log.push(`${name} collect ${timeout}`),
  };
}

const window = (time: number, source: string): ProfileWindow => ({ time, stop: time + 1, source, compute: {}, administrative: emptyProfile() });

test("sources sample only while leased; the first lease's options apply; late sources start at once", async () => {
  const hub = new ProfileHub();
  const log: string[] = [];
  hub.register(source(log, "a"));
  await hub.collect();
  assert.deepEqual(log, [], "nothing is collected while nobody profiles");
  const first = hub.acquire({ interval: 0.005, cycle: 0.5 });
  const second = hub.acquire({ interval: 0.1, cycle: 2 });
  assert.deepEqual(second.options, { interval: 0.005, cycle: 0.5 });
  hub.register(source(log, "b"));
  await hub.collect(123);
  first.release();
  first.release(); // twice is harmless
  assert.deepEqual(hub.active, { interval: 0.005, cycle: 0.5 });
  second.release();
  assert.equal(hub.active, undefined);
  assert.deepEqual(log, ["a start 0.005/0.5", "b start 0.005/0.5", "a collect 123", "b collect 123", "a stop", "b stop"]);
});

test("windows reach listeners while they listen, and a history bounded per source", () => {
  const hub = new ProfileHub();
  const heard: number[] = [];
  const stop = hub.listen((windows) => heard.push(...windows.map((w) => w.time)));
  hub.add([window(1, "x"), window(2, "y")]);
  stop();
  hub.add([window(3, "x")]);
  assert.deepEqual(heard, [1, 2]);
  for (let i = 0; i < 3 * HISTORY_PER_SOURCE; i++) hub.add([window(10 + i, "x")]);
  const kept = hub.windows().filter((w) => w.source === "x");
  assert.equal(kept.length, HISTORY_PER_SOURCE);
  assert.equal(kept.at(-1)!.time, 10 + 3 * HISTORY_PER_SOURCE - 1, "the newest are kept");
  assert.deepEqual(hub.windows().filter((w) => w.source === "y").map((w) => w.time), [2]);
});
