// Task-stream records in columns: one row per task, one per phase (a task's startstops), read
// from records.ts TaskStreamRecords (the cluster's, or anyone's). The kernel's local collector
// extends it to append tasks at a few numbers each; the plot, the report and the dashboard's
// task stream panel read only these columns.

import type { StartStopAction, TaskStreamRecord } from "../records";

export const ACTIONS: readonly StartStopAction[] = ["compute", "transfer", "disk-read", "disk-write", "deserialize"];

/** Distinct strings numbered in order of first sight. */
export class Names {
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

/** A key as a record gives it, already text (Python's `str(key)`). */
export interface KeyRepr {
  readonly repr: string;
}

export class TaskStreamColumns {
  // Per task.
  /** Each task's key as stored: a KeyRepr here; the kernel's table also keeps raw keys. */
  protected readonly keys: unknown[] = [];
  readonly prefix: number[] = [];
  readonly worker: number[] = [];
  readonly thread: number[] = [];
  readonly ok: boolean[] = [];
  readonly nbytes: number[] = [];
  readonly type: number[] = [];
  protected readonly spans: (string | undefined)[] = [];
  // Per phase.
  readonly phaseTask: number[] = [];
  readonly phaseAction: number[] = [];
  readonly phaseStart: number[] = [];
  readonly phaseStop: number[] = [];
  protected readonly phaseSource: (number | undefined)[] = [];

  readonly prefixes = new Names();
  readonly workers = new Names();
  readonly types = new Names();
  readonly sources = new Names();
  /** Row names of workers known by another name than their id (a cluster worker's address → its name). */
  readonly workerNames = new Map<string, string>();

  get taskCount(): number {
    return this.prefix.length;
  }

  get phaseCount(): number {
    return this.phaseTask.length;
  }

  addRecord(record: TaskStreamRecord): void {
    const task = this.keys.push({ repr: record.key } satisfies KeyRepr) - 1;
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

  /** Where phase `phase`'s data came from (a transfer's peer worker, "redis"), if recorded. */
  sourceOf(phase: number): string | undefined {
    const source = this.phaseSource[phase];
    return source === undefined ? undefined : this.sources.list[source];
  }

  /** Task `task`'s key as Dask's task stream gives it: `str(key)`, a string key unquoted. */
  keyText(task: number): string {
    return (this.keys[task] as KeyRepr).repr;
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
}

/** Columns of `records`. */
export function taskStreamColumns(records: Iterable<TaskStreamRecord>): TaskStreamColumns {
  const columns = new TaskStreamColumns();
  for (const record of records) columns.addRecord(record);
  return columns;
}
