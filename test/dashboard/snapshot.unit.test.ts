// The DOM-free parts of the dashboard views: how a snapshot from a kernel is checked and ordered,
// and byte sizes as Dask prints them. (The views themselves: page.browser.test.ts, lab.browser.test.ts.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatBytes } from "../../src/protocol/format";
import { SnapshotError, isNewer, parseSnapshot } from "../../src/views/dashboard/snapshot";

const snapshot = { version: 1, source: "kernel-1", seq: 4, time: 1700000000.5, progress: [], workers: [] };

test("snapshots are accepted as objects or as JSON text (tslab's public display API sends text)", () => {
  assert.deepEqual(parseSnapshot(snapshot), snapshot);
  assert.deepEqual(parseSnapshot(JSON.stringify(snapshot)), snapshot);
});

test("a bad envelope is refused with the reason; a bad section is dropped and named, the rest kept", () => {
  const refuses = (data: unknown, message: RegExp): void =>
    assert.throws(() => parseSnapshot(data), (error: unknown) => error instanceof SnapshotError && message.test(error.message));
  refuses("{", /not JSON/);
  refuses([], /not a JSON object/);
  refuses({ ...snapshot, version: 2 }, /uses version 2; this extension understands version 1/);
  refuses({ ...snapshot, source: 3 }, /"source" must be a string/);
  refuses({ ...snapshot, seq: "4" }, /"seq" and "time" must be numbers/);
  const odd = parseSnapshot({ ...snapshot, workers: { a: 1 }, taskStream: { records: "x", total: 1 }, profile: { tree: 1 }, unknown: 5 });
  assert.equal(odd.workers, undefined);
  assert.equal(odd.taskStream, undefined);
  assert.equal(odd.profile, undefined);
  assert.deepEqual(odd.progress, []);
  assert.equal((odd as unknown as { unknown?: number }).unknown, undefined, "unknown fields are not passed on");
  assert.deepEqual(odd.errors, [
    'the "workers" section was dropped: not a list',
    'the "taskStream" section was dropped: "records" is not a list',
    'the "profile" section was dropped: "tree" is not an object',
  ]);
  const treeOnly = parseSnapshot({ ...snapshot, profile: { tree: { identifier: "root", count: 1, description: {}, children: {} } } });
  assert.equal(treeOnly.profile, undefined);
  assert.deepEqual(treeOnly.errors, ['the "profile" section was dropped: "packed" is not a packed profile']);
});

test("newer means a later seq of the same source, or any seq of a new source (a restarted kernel)", () => {
  const a = parseSnapshot(snapshot);
  assert.equal(isNewer(a, undefined), true);
  assert.equal(isNewer({ ...a, seq: 5 }, a), true);
  assert.equal(isNewer({ ...a, seq: 4 }, a), false);
  assert.equal(isNewer({ ...a, seq: 3 }, a), false);
  assert.equal(isNewer({ ...a, source: "kernel-2", seq: 1 }, a), true);
});

test("bytes read like Dask's format_bytes", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(917), "917 B");
  assert.equal(formatBytes(1000), "0.98 kiB");
  assert.equal(formatBytes(1240), "1.21 kiB");
  assert.equal(formatBytes(512 * 2 ** 20), "512.00 MiB");
  assert.equal(formatBytes(2 ** 31), "2.00 GiB");
  assert.equal(formatBytes(3 * 2 ** 40), "3.00 TiB");
  assert.equal(formatBytes(2 ** 52), "4.00 PiB");
});
