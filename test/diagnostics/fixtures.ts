// Graphs and helpers shared by the diagnostics tests (ports of dask/diagnostics/tests).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { SchedulerName } from "../../src";
import type { ProfileNode } from "../../src/protocol/records";
import { add, mul, slowadd } from "./tasks";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
export const dsk2 = { a: 1, b: 2, c: [slowadd, "a", "b"] };

/**
 * The schedulers the scheduler-independent tests run under (their task functions come from
 * ./tasks so the pools can ship them). Dask runs these tests with the threaded and sync schedulers.
 */
export const SCHEDULERS: readonly SchedulerName[] = ["sync", "threads", "processes"];

/** A writable that records what is written; a terminal unless `isTTY` is false. */
export class FakeOut {
  text = "";
  constructor(readonly isTTY = true) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

/** Dask's check_bar_completed: one "100% Completed", and a full bar of `width` after the last \r. */
export function checkBarCompleted(text: string, width = 40): void {
  assert.equal(text.split("100% Completed").length - 1, 1, `one completed bar in ${JSON.stringify(text)}`);
  const [bar, percent] = text.slice(text.lastIndexOf("\r") + 1).split("|").map((part) => part.trim());
  assert.equal(bar, "[" + "#".repeat(width) + "]");
  assert.equal(percent, "100% Completed");
}

/**
 * Where ./hot.ts's hotLoop is in its TypeScript source (the profiler maps compiled lines back
 * through the source map): its file, its first line, its hot line, and its profile-tree identifier.
 */
export const HOT_FILE = resolve(__dirname, "../../../test/diagnostics/hot.ts");
const hotLines = readFileSync(HOT_FILE, "utf8").split("\n");
export const HOT_DEFINITION_LINE = hotLines.findIndex((line) => line.includes("function hotLoop(")) + 1;
export const HOT_LINE = hotLines.findIndex((line) => line.includes("// HOT LINE")) + 1;
export const HOT_ID = `hotLoop;${HOT_FILE};${HOT_DEFINITION_LINE}`;

/** The node of `identifier` anywhere below `tree` (the first found, depth first). */
export function findFrame(tree: ProfileNode, identifier: string): ProfileNode | undefined {
  const stack = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.identifier === identifier) return node;
    stack.push(...Object.values(node.children));
  }
  return undefined;
}
