// Dask's profile trees as data: building from stacks (leaf frames counted), merging, selecting
// by prefix and time window, the timeline, coarsening, the compact form and the icicle layout.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ProfileBuilder,
  type ProfileWindow,
  MAX_STACK_DEPTH,
  coarsenWindows,
  computeProfile,
  administrativeProfile,
  emptyProfile,
  icicleLayout,
  mergeProfiles,
  packProfile,
  profilePrefixes,
  profileTimeline,
  subtreeAt,
  unpackProfile,
} from "../../src/protocol/profile";
import type { ProfileNode } from "../../src/protocol/records";

const frame = (name: string, line = 1) => ({
  identifier: `${name};/src/${name}.js;${line}`,
  description: { filename: `/src/${name}.js`, name, line_number: line + 1, line: `${name}();` },
});

function tree(stacks: readonly (readonly string[])[]): ProfileNode {
  const builder = new ProfileBuilder();
  for (const stack of stacks) builder.add(stack.map((name) => frame(name)));
  return builder.tree;
}

function window(time: number, source: string, compute: Record<string, ProfileNode>, administrative = emptyProfile()): ProfileWindow {
  return { time, stop: time + 1, source, compute, administrative };
}

const child = (node: ProfileNode, name: string): ProfileNode => node.children[`${name};/src/${name}.js;1`];

test("a stack counts once on every frame along it, the innermost included (Dask leaves the leaf at 0)", () => {
  const t = tree([["main", "f", "g"], ["main", "f", "g"], ["main", "f"], ["main", "h"]]);
  assert.equal(t.identifier, "root");
  assert.equal(t.count, 4);
  assert.equal(child(t, "main").count, 4);
  assert.equal(child(child(t, "main"), "f").count, 3);
  assert.equal(child(child(child(t, "main"), "f"), "g").count, 2, "the leaf's own samples are counted");
  assert.equal(child(child(t, "main"), "h").count, 1);
  assert.deepEqual(child(t, "main").description, { filename: "/src/main.js", name: "main", line_number: 2, line: "main();" });
});

test("merge sums counts by identifier, keeps the first description; merging nothing is the empty tree", () => {
  const a = tree([["main", "f"], ["main", "f"]]);
  const b = tree([["main", "f"], ["main", "g"]]);
  const merged = mergeProfiles([a, b]);
  assert.equal(merged.count, 4);
  assert.equal(child(merged, "main").count, 4);
  assert.equal(child(child(merged, "main"), "f").count, 3);
  assert.equal(child(child(merged, "main"), "g").count, 1);
  assert.deepEqual(mergeProfiles([]), emptyProfile());
  // The inputs are untouched.
  assert.equal(a.count, 2);
});

test("a very deep recursion merges without overflowing the stack; built trees keep the innermost frames", () => {
  // By hand: 20 000 levels, deeper than any sampled stack.
  let deep: ProfileNode = { identifier: "leaf", count: 1, description: frame("leaf").description, children: {} };
  for (let i = 0; i < 20_000; i++) deep = { identifier: "recurse", count: 1, description: frame("recurse").description, children: { [deep.identifier]: deep } };
  const merged = mergeProfiles([{ ...emptyProfile(), count: 1, children: { recurse: deep } }, { ...emptyProfile(), count: 1, children: { recurse: deep } }]);
  let node = merged;
  let depth = 0;
  while (Object.keys(node.children).length > 0) {
    node = Object.values(node.children)[0];
    depth++;
  }
  assert.equal(depth, 20_001);
  assert.equal(node.identifier, "leaf");
  assert.equal(node.count, 2);

  const built = tree([[...Array.from({ length: 1000 }, () => "recurse"), "leaf"]]);
  let last = built;
  let levels = 0;
  while (Object.keys(last.children).length > 0) {
    last = Object.values(last.children)[0];
    levels++;
  }
  assert.equal(levels, MAX_STACK_DEPTH);
  assert.equal(last.description.name, "leaf", "the innermost frames are the ones kept");
});

test("select by prefix and time window; per-prefix profiles add up to the whole; the administrative side apart", () => {
  const windows = [
    window(10, "1", { inc: tree([["inc"], ["inc"]]), dec: tree([["dec"]]) }, tree([["loop"]])),
    window(11, "1", { inc: tree([["inc"]]) }),
    window(11, "2", { dec: tree([["dec"], ["dec"], ["dec"]]) }, tree([["loop"], ["send"]])),
  ];
  assert.equal(computeProfile(windows).count, 7);
  assert.equal(computeProfile(windows, { prefix: "inc" }).count, 3);
  assert.equal(computeProfile(windows, { prefix: ["inc", "dec"] }).count, 7);
  assert.equal(computeProfile(windows, { prefix: "inc" }).count + computeProfile(windows, { prefix: "dec" }).count, 7);
  assert.equal(computeProfile(windows, { prefix: "nope" }).count, 0);
  assert.deepEqual(computeProfile(windows, { prefix: "nope" }), emptyProfile());
  assert.equal(computeProfile(windows, { start: 11, stop: 12 }).count, 4, "only the windows overlapping [11, 12)");
  assert.equal(computeProfile(windows, { start: 100 }).count, 0, "a future range is empty");
  assert.equal(computeProfile(windows, { sources: ["2"] }).count, 3);
  assert.equal(administrativeProfile(windows).count, 3);
  assert.deepEqual(profilePrefixes(windows), [{ prefix: "dec", count: 4 }, { prefix: "inc", count: 3 }]);
});

test("the timeline sums sources per window and per prefix, in time order", () => {
  const windows = [
    window(11, "2", { dec: tree([["dec"], ["dec"]]) }),
    window(10, "1", { inc: tree([["inc"]]) }),
    window(11, "1", { inc: tree([["inc"]]) }, tree([["loop"]])),
  ];
  assert.deepEqual(profileTimeline(windows), [
    { time: 10, count: 1, byPrefix: { inc: 1 } },
    { time: 11, count: 3, byPrefix: { dec: 2, inc: 1 } },
  ]);
  assert.deepEqual(profileTimeline(windows, { kind: "administrative" }).map((p) => p.count), [0, 1]);
  assert.deepEqual(profileTimeline(windows, { bin: 5 }).map((p) => [p.time, p.count]), [[10, 4]]);
});

test("coarsening bounds the windows and keeps every sample", () => {
  const windows = Array.from({ length: 1000 }, (_, i) => window(i, String(i % 3), { inc: tree([["inc"]]), ...(i % 7 === 0 ? { dec: tree([["dec"]]) } : {}) }, tree([["loop"]])));
  const coarse = coarsenWindows(windows, 50);
  assert.ok(coarse.length <= 50, `${coarse.length} windows`);
  assert.equal(computeProfile(coarse).count, computeProfile(windows).count);
  assert.equal(computeProfile(coarse, { prefix: "dec" }).count, computeProfile(windows, { prefix: "dec" }).count);
  assert.equal(administrativeProfile(coarse).count, 1000);
  assert.deepEqual(coarsenWindows(windows.slice(0, 10), 50).length, 10, "short runs keep their windows");
  assert.deepEqual(coarsenWindows([], 10), []);
});

test("the compact form round-trips and stores each frame once", () => {
  const windows = [window(0, "a", { inc: tree([["main", "f"], ["main", "g"]]) }, tree([["main"]])), window(1, "a", { inc: tree([["main", "f"]]) })];
  const packed = packProfile(windows, 0.01);
  assert.equal(packed.frames.length, 3);
  assert.deepEqual(JSON.parse(JSON.stringify(unpackProfile(packed))), JSON.parse(JSON.stringify(windows)));
});

test("the icicle: children share their parent's width by count, busiest first; thin cells are left out", () => {
  const t = tree([["main", "f"], ["main", "f"], ["main", "f"], ["main", "g"], ["main"]]);
  const cells = icicleLayout(t);
  const at = (name: string) => cells.find((cell) => cell.node.description.name === name)!;
  assert.deepEqual([cells[0].depth, cells[0].x0, cells[0].x1], [0, 0, 1]);
  const near = (actual: number, expected: number): void => assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} ≠ ${expected}`);
  assert.equal(at("main").depth, 1);
  near(at("main").x0, 0);
  near(at("main").x1, 1);
  near(at("f").x0, 0);
  near(at("f").x1, 0.6);
  near(at("g").x0, 0.6);
  near(at("g").x1, 0.8); // the rest of main (0.8–1) is main's own time
  assert.deepEqual(at("g").path, ["main;/src/main.js;1", "g;/src/g.js;1"]);
  assert.equal(subtreeAt(t, at("g").path)?.count, 1);
  assert.equal(icicleLayout(t, { minWidth: 0.3 }).some((cell) => cell.node.description.name === "g"), false);
  assert.deepEqual(icicleLayout(emptyProfile()), []);
});
