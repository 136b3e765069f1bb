// The cluster worker: a process LocalCluster forks (./main), holding data, running tasks on
// threads, fetching inputs from peers and reporting to the scheduler (see CONTRACTS.md).
import { join } from "node:path";

/** The script LocalCluster forks, with a WorkerStartConfig as JSON in the first argument. */
export const workerEntryPath = join(__dirname, "main.js");

export type { WorkerView, WorkerDataView, WorkerMemoryView } from "./view";
export type { DigestKey } from "./digests";
export { WorkerStateMachine, type WorkerEvent, type WorkerInstruction, type WorkerTask, type WorkerTaskState } from "./state";
export { TaskRunner, type TaskRequest, type TaskRun } from "./execute";
export { Digests, InstructionLedger, ExecuteLedger } from "./digests";
export { DataStore } from "./store";
export { TransferStats, TRANSFER_LOG_LENGTH } from "./transfers";
export { WorkerClock } from "./clock";
