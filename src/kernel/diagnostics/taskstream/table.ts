// The task stream's columns as the local schedulers fill them: a task appended at a few numbers
// (its key formatted only when asked), so a million-task run stays cheap. Records from a cluster
// are read into the same columns (protocol/plot/taskstream-table.ts).

import { ACTIONS, type KeyRepr, TaskStreamColumns } from "../../../protocol/plot/taskstream-table";
import type { TaskStreamRecord } from "../../../protocol/records";
import { type Key, keyPrefix, keyStr } from "../../graph/keys";

export { ACTIONS };

function isRepr(key: unknown): key is KeyRepr {
  return typeof key === "object" && key !== null && !Array.isArray(key);
}

export class TaskStreamTable extends TaskStreamColumns {
  /** Prefix per distinct head of a tuple key (`["x-token", i, j]` → "x"): key_split once per head. */
  private readonly prefixByHead = new Map<string, number>();

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

  static fromRecords(records: Iterable<TaskStreamRecord>): TaskStreamTable {
    const table = new TaskStreamTable();
    for (const record of records) table.addRecord(record);
    return table;
  }

  /** Task `task`'s key (its text, for tables read from records). */
  keyOf(task: number): Key {
    const key = this.keys[task];
    return isRepr(key) ? key.repr : (key as Key);
  }

  override keyText(task: number): string {
    const key = this.keys[task];
    return isRepr(key) ? key.repr : keyStr(key as Key);
  }

  private prefixOf(key: Key): number {
    if (!Array.isArray(key) || typeof key[0] !== "string") return this.prefixes.of(keyPrefix(key));
    const head = key[0] as string;
    let prefix = this.prefixByHead.get(head);
    if (prefix === undefined) this.prefixByHead.set(head, (prefix = this.prefixes.of(keyPrefix(head))));
    return prefix;
  }
}
