// Values as binary frames, and framed messages over a real Unix socket.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Connection, listen } from "../../src/kernel/distributed/comm/connection";
import { decodeValue, encodeValue, frameLength, framesByteLength, framesHeader } from "../../src/kernel/distributed/comm/frames";
import { markPlainStandIns } from "../../src/kernel/execution/buffers";

const roundTrip = (value: unknown, shared?: boolean): unknown => decodeValue(encodeValue(value), { shared });

describe("frames", () => {
  test("plain values travel in one part, as structured clone keeps them", () => {
    const value = { a: 1, b: "two", c: [1, 2, { d: null }], e: new Map([["k", new Set([1n, 2n])]]), f: new Date(5) };
    const parts = encodeValue(value);
    assert.equal(parts.length, 1);
    assert.deepEqual(decodeValue(parts), value);
  });

  test("typed arrays are frames of their own bytes, sent without a copy", () => {
    const block = new Float64Array(1 << 20).map((_, i) => i / 3);
    const parts = encodeValue({ block, label: "x" });
    assert.equal(parts.length, 2);
    assert.equal(parts[1].byteLength, block.byteLength);
    assert.equal(parts[1].buffer, block.buffer, "the frame is a view of the array's memory");
    assert.ok(parts[0].byteLength < 200, "the skeleton holds no block bytes");
    const back = roundTrip({ block, label: "x" }) as { block: Float64Array; label: string };
    assert.ok(back.block instanceof Float64Array);
    assert.deepEqual(back.block, block);
    assert.equal(back.label, "x");
  });

  test("a view of part of a buffer sends only its own bytes", () => {
    const whole = new Int32Array([1, 2, 3, 4, 5, 6]);
    const middle = whole.subarray(2, 4);
    const parts = encodeValue(middle);
    assert.equal(framesByteLength(parts.slice(1)), 8);
    assert.deepEqual(decodeValue(parts), new Int32Array([3, 4]));
  });

  test("shared memory stays shared memory unless the receiver asks otherwise", () => {
    const block = new Float64Array(new SharedArrayBuffer(64)).fill(2.5);
    const shared = roundTrip(block) as Float64Array;
    assert.ok(shared.buffer instanceof SharedArrayBuffer);
    assert.notEqual(shared.buffer, block.buffer, "the receiver gets memory of its own");
    assert.deepEqual([...shared], [...block]);
    const plain = roundTrip(block, false) as Float64Array;
    assert.ok(plain.buffer instanceof ArrayBuffer);
    assert.deepEqual([...plain], [...block]);
  });

  test("shared memory standing in for plain memory travels as plain memory: the header and the block say so", () => {
    const standIn = new SharedArrayBuffer(64);
    new Float64Array(standIn).fill(4);
    markPlainStandIns([standIn]);
    const shared = new Float64Array(new SharedArrayBuffer(64)).fill(5);
    const parts = encodeValue({ plain: new Float64Array(standIn), buffer: standIn, shared });
    assert.equal(parts[1].buffer, standIn, "the frame is still a view of the stand-in's memory: no copy on the sending side");
    const header = framesHeader(parts);
    assert.deepEqual([1, 2, 3].map((i) => frameLength(header.readUInt32LE(4 * (i + 1))).shared), [false, false, true]);
    const back = decodeValue(parts) as { plain: Float64Array; buffer: ArrayBuffer; shared: Float64Array };
    assert.ok(back.plain.buffer instanceof ArrayBuffer && !(back.plain.buffer instanceof SharedArrayBuffer));
    assert.ok(back.buffer instanceof ArrayBuffer);
    assert.deepEqual([back.plain[7], new Float64Array(back.buffer)[0]], [4, 4]);
    assert.ok(back.shared.buffer instanceof SharedArrayBuffer, "real shared memory stays shared");
  });

  test("every binary kind keeps its type; buffers and views shared by reference stay shared", () => {
    const bytes = Buffer.from("hello");
    const view = new Uint16Array([7, 8]);
    const value = {
      bytes,
      view,
      again: view,
      arrayBuffer: new Uint8Array([1, 2, 3]).buffer,
      dataView: new DataView(new ArrayBuffer(4)),
      bigints: new BigInt64Array([1n, -2n]),
      inMap: new Map([[1, new Float32Array([0.5])]]),
      inSet: new Set([new Uint8ClampedArray([255])]),
    };
    const back = roundTrip(value) as typeof value;
    assert.ok(Buffer.isBuffer(back.bytes));
    assert.equal(back.bytes.toString(), "hello");
    assert.ok(back.view instanceof Uint16Array);
    assert.equal(back.again, back.view);
    assert.ok(back.arrayBuffer instanceof ArrayBuffer);
    assert.deepEqual([...new Uint8Array(back.arrayBuffer)], [1, 2, 3]);
    assert.ok(back.dataView instanceof DataView);
    assert.deepEqual(back.bigints, new BigInt64Array([1n, -2n]));
    assert.deepEqual(back.inMap.get(1), new Float32Array([0.5]));
    assert.deepEqual([...back.inSet][0], new Uint8ClampedArray([255]));
  });

  test("cycles survive", () => {
    const node: { self?: unknown; block: Uint8Array } = { block: new Uint8Array([9]) };
    node.self = node;
    const back = roundTrip(node) as typeof node;
    assert.equal(back.self, back);
    assert.deepEqual(back.block, new Uint8Array([9]));
  });
});

describe("connections", () => {
  const dir = mkdtempSync(join(tmpdir(), "tsdask-comm-test-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("messages arrive whole and in order, large ones included", async () => {
    const path = join(dir, "a.sock");
    const received: unknown[] = [];
    let serverSide: Connection | undefined;
    const server = await listen(path, (connection) => {
      serverSide = connection;
      connection.on("message", (value) => {
        received.push(value);
        connection.send({ echo: received.length });
      });
    });
    const client = await Connection.connect(path);
    const replies: unknown[] = [];
    const allReplies = new Promise<void>((resolve) =>
      client.on("message", (value) => {
        replies.push(value);
        if (replies.length === 4) resolve();
      }),
    );
    const big = new Float64Array(1_000_000).map((_, i) => i);
    client.send("small");
    client.send({ big, shared: new Float64Array(new SharedArrayBuffer(16)).fill(1) });
    client.send([]);
    client.send({ empty: new Uint8Array(0) });
    await allReplies;
    assert.equal(received[0], "small");
    const second = received[1] as { big: Float64Array; shared: Float64Array };
    assert.deepEqual(second.big, big);
    assert.deepEqual([...second.shared], [1, 1]);
    assert.deepEqual(received[2], []);
    assert.deepEqual(received[3], { empty: new Uint8Array(0) });
    assert.deepEqual(replies, [{ echo: 1 }, { echo: 2 }, { echo: 3 }, { echo: 4 }]);
    const closed = new Promise<Error | undefined>((resolve) => serverSide!.on("close", resolve));
    client.close();
    assert.equal(await closed, undefined);
    assert.throws(() => client.send(1), /closed/);
    await new Promise((resolve) => server.close(resolve));
  });

  test("the connecting side reads parts straight into their own memory; shared blocks arrive in shared memory", async () => {
    const path = join(dir, "direct.sock");
    const shared = new Float64Array(new SharedArrayBuffer(8 * 1_000_000));
    for (let i = 0; i < shared.length; i++) shared[i] = i;
    const plain = new Uint8Array(3_000_001).map((_, i) => i % 251);
    const server = await listen(path, (connection) => {
      connection.on("message", () => {
        // Back to back, so reads straddle messages and parts.
        connection.send({ shared, label: "first" });
        connection.send("small");
        connection.send({ plain, empty: new Uint8Array(0), tiny: new Int16Array([-1, 2]) });
        connection.send(shared.subarray(10, 20));
      });
    });
    const client = await Connection.connect(path);
    const received: unknown[] = [];
    const wireBytes: number[] = [];
    const all = new Promise<void>((resolve) =>
      client.on("message", (value, bytes) => {
        received.push(value);
        wireBytes.push(bytes);
        if (received.length === 4) resolve();
      }),
    );
    client.send("go");
    await all;
    const first = received[0] as { shared: Float64Array; label: string };
    assert.ok(first.shared.buffer instanceof SharedArrayBuffer);
    assert.equal(first.shared.buffer.byteLength, shared.byteLength, "the part's own memory, not a copy of a larger read");
    assert.deepEqual(first.shared, shared);
    assert.equal(first.label, "first");
    assert.equal(received[1], "small");
    const third = received[2] as { plain: Uint8Array; empty: Uint8Array; tiny: Int16Array };
    assert.ok(third.plain.buffer instanceof ArrayBuffer);
    assert.deepEqual(third.plain, plain);
    assert.deepEqual(third.empty, new Uint8Array(0));
    assert.deepEqual(third.tiny, new Int16Array([-1, 2]));
    const fourth = received[3] as Float64Array;
    assert.ok(fourth.buffer instanceof SharedArrayBuffer);
    assert.deepEqual([...fourth], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    assert.ok(wireBytes[0] > shared.byteLength && wireBytes[0] < shared.byteLength + 200);
    client.close();
    await new Promise((resolve) => server.close(resolve));
  });

  test("connecting to a missing socket names the path", async () => {
    await assert.rejects(Connection.connect(join(dir, "nobody.sock")), /Cannot connect to .*nobody\.sock/);
  });
});
