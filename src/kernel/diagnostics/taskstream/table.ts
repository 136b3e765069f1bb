// Task-stream records in columns: one row per task, one per phase (a task's startstops). The
// local collector appends to it at a few numbers per task, so a million-task run stays cheap;
// records.ts TaskStreamRecords (the cluster's, or anyone's) are read into the same form, and the
// plot, the report and getTaskStream's `data` read only this.

import type { StartStopAction, TaskStreamRecord } from "../../../protocol/records";
import { type Key, formatKey, keyPrefix } from "../../graph/keys";

export const ACTIONS: readonly StartStopAction[] = ["compute", "transfer", "disk-read", "disk-write", "deserialize"];

/** Distinct strings numbered in order of first sight. */
class Names {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();

  of(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      i = this.list.push(name) - 1;
      this.index.set(name, i);
    }
    return i;
  }
}

export class TaskStreamTable {
  // Per task.
  /** A key (local runs: formatted only when asked) or its repr (records). */
  private readonly keys: (Key | { readonly repr: string })[] = [];
  readonly prefix: number[] = [];
  readonly worker: number[] = [];
  readonly thread: number[] = [];
  readonly ok: boolean[] = [];
  readonly nbytes: number[] = [];
  readonly type: number[] = [];
  private readonly spans: (string | undefined)[] = [];
  // Per phase.
  readonly phaseTask: number[] = [];
  readonly phaseAction: number[] = [];
  readonly phaseStart: number[] = [];
  readonly phaseStop: number[] = [];
  private readonly phaseSource: (number | undefined)[] = [];

  readonly prefixes = new Names();
  readonly workers = new Names();
  readonly types = new Names();
  readonly sources = new Names();
  /** Row names of workers known by another name than their id (a cluster worker's address → its name). */
  readonly workerNames = new Map<string, string>();
  /** Prefix per distinct head of a tuple key (`["x-token", i, j]` → "x"): key_split once per head. */
  private readonly prefixByHead = new Map<string, number>();

  get taskCount(): number {
    return this.prefix.length;
  }

  get phaseCount(): number {
    return this.phaseTask.length;
  }

  /** A task that ran in one piece (the local schedulers: compute only). */
  addTask(key: Key, worker: string, thread: number, ok: boolean, nbytes: number, type: string, start: number, stop: number): void {
    const task = this.keys.push(key) - 1;
    this.prefix.push(this.prefixOf(key));
    this.worker.push(this.workers.of(worker));
    this.thread.push(thread);
    this.ok.push(ok);
    this.nbytes.push(nbytes);
    this.type.push(this.types.of(type));
    this.spans.push(undefined);
    this.phaseTask.push(task);
    this.phaseAction.push(0);
    this.phaseStart.push(start);
    this.phaseStop.push(stop);
    this.phaseSource.push(undefined);
  }

  addRecord(record: TaskStreamRecord): void {
    const task = this.keys.push({ repr: record.key }) - 1;
    this.prefix.push(this.prefixes.of(record.prefix));
    this.worker.push(this.workers.of(record.worker));
    this.thread.push(record.thread);
    this.ok.push(record.status === "OK");
    this.nbytes.push(record.nbytes);
    this.type.push(this.types.of(record.type));
    this.spans.push(record.span);
    for (const phase of record.startstops) {
      this.phaseTask.push(task);
      this.phaseAction.push(Math.max(0, ACTIONS.indexOf(phase.action)));
      this.phaseStart.push(phase.start);
      this.phaseStop.push(phase.stop);
      this.phaseSource.push(phase.source === undefined ? undefined : this.sources.of(phase.source));
    }
  }

  /** Shows cluster workers by their names (`worker-0`) rather than their addresses. */
  nameWorkers(workers: Iterable<{ readonly address: string; readonly name: string }>): void {
    for (const { address, name } of workers) this.workerNames.set(address, name);
  }

  /** How worker `worker` (an id in `workers`) is shown. */
  workerLabel(worker: string): string {
    return this.workerNames.get(worker) ?? worker;
  }

  static fromRecords(records: Iterable<TaskStreamRecord>): TaskStreamTable {
    const table = new TaskStreamTable();
    for (const record of records) table.addRecord(record);
    return table;
  }

  /** Where phase `phase`'s data came from (a transfer's peer worker, "redis"), if recorded. */
  sourceOf(phase: number): string | undefined {
    const source = this.phaseSource[phase];
    return source === undefined ? undefined : this.sources.list[source];
  }

  /** Task `task`'s key (its repr, for tables read from records). */
  keyOf(task: number): Key {
    const key = this.keys[task];
    return typeof key === "object" && !Array.isArray(key) ? (key as { repr: string }).repr : (key as Key);
  }

  /** Dask's repr of task `task`'s key. */
  keyText(task: number): string {
    const key = this.keys[task];
    return typeof key === "object" && !Array.isArray(key) ? (key as { repr: string }).repr : formatKey(key as Key);
  }

  /** The records, Dask's task-stream messages (built on demand: a million of them cost memory). */
  records(): TaskStreamRecord[] {
    const records: TaskStreamRecord[] = [];
    let phase = 0;
    for (let task = 0; task < this.taskCount; task++) {
      const startstops: TaskStreamRecord["startstops"][number][] = [];
      for (; phase < this.phaseCount && this.phaseTask[phase] === task; phase++) {
        const source = this.phaseSource[phase];
        startstops.push({
          action: ACTIONS[this.phaseAction[phase]],
          start: this.phaseStart[phase],
          stop: this.phaseStop[phase],
          ...(source === undefined ? {} : { source: this.sources.list[source] }),
        });
      }
      const span = this.spans[task];
      records.push({
        key: this.keyText(task),
        prefix: this.prefixes.list[this.prefix[task]],
        worker: this.workers.list[this.worker[task]],
        thread: this.thread[task],
        status: this.ok[task] ? "OK" : "error",
        nbytes: this.nbytes[task],
        type: this.types.list[this.type[task]],
        startstops,
        ...(span === undefined ? {} : { span }),
      });
    }
    return records;
  }

  private prefixOf(key: Key): number {
    if (!Array.isArray(key) || typeof key[0] !== "string") return this.prefixes.of(keyPrefix(key));
    const head = key[0] as string;
    let prefix = this.prefixByHead.get(head);
    if (prefix === undefined) this.prefixByHead.set(head, (prefix = this.prefixes.of(keyPrefix(head))));
    return prefix;
  }
}
