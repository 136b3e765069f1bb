// The statistical profiler's checks on any cluster (LocalCluster, Redis): a graph of CPU-hot tasks
// (prefix "burn") and mostly-waiting ones, and what `client.profile` must show once it ran.
import assert from "node:assert/strict";
import type { Client } from "../../src";
import type { ProfileNode } from "../../src/protocol/records";
import { HOT_FILE, HOT_ID, HOT_LINE, findFrame } from "../diagnostics/fixtures";
import { combine, hotLoop, mostlyWaiting } from "../diagnostics/hot";

/** Four hot tasks burn-0…3, two waiting ones, and "all" that needs them all. */
export function hotGraph(): Record<string, unknown> {
  const dsk: Record<string, unknown> = {};
  for (let i = 0; i < 4; i++) dsk[`burn-${i}`] = [hotLoop, 6000];
  for (let i = 0; i < 2; i++) dsk[`wait-${i}`] = [mostlyWaiting, 100];
  dsk.all = [combine, "burn-0", "burn-1", "burn-2", "burn-3", "wait-0", "wait-1"];
  return dsk;
}

/**
 * After hotGraph ran in [t0, t1] (client clock): hotLoop dominates the burn prefix on its
 * TypeScript line, never shows under wait, and nothing was sampled long before. Returns burn's tree.
 */
export async function checkHotProfile(client: Client, t0: number, t1: number): Promise<ProfileNode> {
  const burn = await client.profile({ key: "burn", start: t0, stop: t1 });
  assert.ok(burn.count >= 10, `${burn.count} samples under burn`);
  const hot = findFrame(burn, HOT_ID);
  assert.ok(hot !== undefined, `no ${HOT_ID} in ${Object.keys(burn.children).join(", ")}`);
  assert.ok(hot.count >= 0.8 * burn.count, `hotLoop has ${hot.count} of ${burn.count} samples`);
  assert.equal(burn.children[HOT_ID]?.count, hot.count, "the tree starts at the task's own function");
  assert.equal(hot.description.filename, HOT_FILE, "the TypeScript source, through the source map");
  assert.equal(hot.description.line_number, HOT_LINE);
  assert.match(hot.description.line, /Math\.sqrt\(i\) \/ i; \/\/ HOT LINE <img/);
  assert.equal(findFrame(await client.profile({ key: "wait", start: t0, stop: t1 }), HOT_ID), undefined, "hotLoop never ran under wait");
  assert.equal((await client.profile({ stop: t0 - 30 })).count, 0, "a window before the run is empty");
  return burn;
}
