// Scheduler ↔ worker message batches as they cross a LocalCluster socket: every message comes
// back as it was sent, whatever its expression's shape and its inputs' holders.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeBatch, encodeBatch, encodeBatches } from "../../src/kernel/distributed/comm/batches";
import { decodeValue } from "../../src/kernel/distributed/comm/frames";
import type { ComputeTaskMessage, FromWorker, ToWorker } from "../../src/kernel/distributed/messages";

type Message = ToWorker | FromWorker;

const roundTrip = (messages: readonly Message[]): Message[] => decodeBatch(decodeValue(encodeBatch(messages)));

const A = "unix:///tmp/a.sock";
const B = "unix:///tmp/b.sock";

function compute(key: string, task: ComputeTaskMessage["task"], dependencies: ComputeTaskMessage["dependencies"] = []): ComputeTaskMessage {
  return { op: "compute-task", key, name: `'${key}'`, prefix: "x", task, dependencies, priority: 2 ** 31 + 7, spanId: "span-1" };
}

describe("message batches", () => {
  test("compute-tasks keep nested expressions, literals and every input's holders", () => {
    const messages: Message[] = [
      compute("a", ["lit", 1]),
      compute("b", ["call", 0, ["ref", "a"]], [{ key: "a", nbytes: 8, whoHas: [] }]),
      compute(
        "c",
        ["call", 3, ["list", ["ref", "a"], ["lit", "s"], ["list"]], ["call", 4], ["lit", [1, [2]]], ["ref", "b"]],
        [
          { key: "a", nbytes: 8, whoHas: [A, B] },
          { key: "b", nbytes: 0, whoHas: [], local: true },
        ],
      ),
      { ...compute("d", ["list"], [{ key: "c", nbytes: 16, whoHas: [B] }]), returnsResult: true },
      { op: "free-keys", keys: ["a", "b"] },
      compute("e", ["lit", { object: new Float64Array([1, 2]) }]),
    ];
    assert.deepEqual(roundTrip(messages), messages);
  });

  test("task-finished reports keep their phases and a returned value", () => {
    const messages: Message[] = [
      { op: "task-finished", key: "a", nbytes: 8, type: "number", thread: 1, startstops: [{ action: "compute", start: 1, stop: 2 }] },
      {
        op: "task-finished",
        key: "b",
        nbytes: 24,
        type: "Array",
        thread: 2,
        startstops: [
          { action: "transfer", start: 0, stop: 1, source: A },
          { action: "compute", start: 1, stop: 3 },
        ],
        value: [1, 2, 3],
      },
      { op: "task-finished", key: "c", nbytes: 0, type: "undefined", thread: 1, startstops: [], value: undefined },
    ];
    assert.deepEqual(roundTrip(messages), messages);
  });

  test("a long batch goes as several socket messages, in order", () => {
    const messages = Array.from({ length: 1300 }, (_, i) => compute(`k${i}`, ["call", 0, ["ref", `k${i - 1}`]], [{ key: `k${i - 1}`, nbytes: 8, whoHas: [A] }]));
    const parts = [...encodeBatches(messages)];
    assert.equal(parts.length, 3);
    assert.deepEqual(
      parts.flatMap((frames) => decodeBatch(decodeValue(frames))),
      messages,
    );
  });

  test("a corrupt expression tag is an error naming it", () => {
    const flat = decodeValue(encodeBatch([compute("a", ["lit", 1])])) as unknown[];
    flat[flat.indexOf("lit")] = "nope";
    assert.throws(() => decodeBatch(flat), /task expression tag "nope"/);
  });
});
