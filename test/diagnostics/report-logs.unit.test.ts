// The performance report's Worker Logs tab as data, and the ring a worker keeps its lines in.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildReport } from "../../src/kernel/diagnostics/report/build";
import { TaskStreamTable } from "../../src/kernel/diagnostics/taskstream";
import { WorkerLog, computeFailedLine } from "../../src/kernel/distributed/worker/logs";
import { keyId } from "../../src/kernel/graph/keys";

const inputs = { started: 0, stopped: 1, code: "", scheduler: "test", taskStream: new TaskStreamTable() };
const line = (message: string) => ({ time: 1, level: "INFO" as const, message });

describe("the Worker Logs tab", () => {
  test("no logs at all: Dask's 'No logs to report'", () => {
    assert.deepEqual(buildReport(inputs).workerLogs, { note: "No logs to report" });
    const empty = [{ name: "worker-0", address: "unix://a", lines: [] }];
    assert.deepEqual(buildReport({ ...inputs, workerLogs: empty }).workerLogs, { note: "No logs to report" });
  });

  test("each worker's lines, those without any kept so the tab can say so", () => {
    const workerLogs = [
      { name: "worker-0", address: "unix://a", lines: [line("Start worker at: unix://a")] },
      { name: "worker-1", address: "unix://b", lines: [] },
    ];
    assert.deepEqual(buildReport({ ...inputs, workerLogs }).workerLogs, { data: workerLogs });
  });

  test("a source that could not read the logs says why", () => {
    assert.deepEqual(buildReport({ ...inputs, workerLogsNote: "The workers' logs could not be read: gone" }).workerLogs, { note: "The workers' logs could not be read: gone" });
  });
});

describe("a worker's log ring", () => {
  test("keeps the last `capacity` lines, oldest first; lines(n) gives the last n", () => {
    const log = new WorkerLog(3);
    for (let i = 1; i <= 5; i++) log.add(line(`l${i}`));
    assert.deepEqual(log.lines().map((l) => l.message), ["l3", "l4", "l5"]);
    assert.deepEqual(log.lines(2).map((l) => l.message), ["l4", "l5"]);
    assert.throws(() => new WorkerLog(0), /whole number ≥ 1 of lines, got 0/);
  });

  test("a failed task's line names its key as Dask prints it and its exception", () => {
    const error = { kind: "error", className: "RangeError", name: "RangeError", message: "too big", stack: "" } as const;
    assert.equal(computeFailedLine(keyId(["x", 0]), error as never), "Compute Failed\nKey: ('x', 0)\nException: RangeError: too big");
    assert.equal(computeFailedLine("inc-1", { kind: "value", value: 42 }), "Compute Failed\nKey: inc-1\nException: 42");
  });
});
