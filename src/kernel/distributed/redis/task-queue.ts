// The queue side of the Redis transport: ready tasks become BullMQ jobs (lowest priority first)
// carrying their function specs and, when small, their inputs; results are known by key while
// the scheduler wants them, and leave the store once it forgets them. The outcome reader
// (./outcomes) reports what became of each job and tells this side through `ended` and `hold`.
// A big result stays with the worker that computed it (./held): Redis has its location, and
// forgetting it tells that worker to drop it. A task whose inputs workers keep goes to the queue
// of the worker keeping most of their bytes, unless it is busy (./placement).

import { type JobsOptions, PRIORITY_LIMIT, Queue } from "bullmq";
import type { Redis } from "ioredis";
import { type FnSpec, packError } from "../../execution/wire";
import type { ComputeTaskMessage, FromWorker, TaskErredMessage, WireTask, WorkerAddress } from "../messages";
import { staticOrderOf } from "../scheduler/state";
import { type TaskJobData, decodeCarried, encodeTask, foreignCompletion, taskJobId, taskJobNumber } from "./jobs";
import { type Namespace, TASK_QUEUE, workerTaskQueue } from "./keys";
import { placeByData } from "./placement";
import type { RedisStore, Unlinker, ValueLocation } from "./store";

/** A task for the queue; `functions` defines function ids the transport has not been told of yet. */
export type QueuedTask = ComputeTaskMessage & { readonly functions?: readonly (readonly [number, FnSpec])[] };

/** A result in the store, as the client keeps it. */
export interface Held {
  /** The key's repr, to name it if Redis loses it. */
  readonly name: string;
  /** Its frames (base64) when small enough to carry in the jobs that use it (see CARRIED_VALUE_BYTES). */
  readonly carried?: readonly string[];
  /** The worker that keeps it, when it is not in Redis (see ./held). */
  readonly holder?: string;
  /** Its size in the holder's memory, for placement. */
  readonly nbytes?: number;
  /** The number of the job that computed it (see computedAfter). */
  readonly job?: number;
}

/** A task's job, queued or running. */
export interface Pending {
  readonly jobId: string;
  readonly name: string;
  /** Token of the stored spec, for a task too large to travel in its job. */
  readonly specToken?: string;
  /** The worker whose own queue has the job (./placement), and an input it keeps; else the shared queue. */
  readonly placed?: { readonly worker: string; readonly input: string };
}

/** Jobs added per BullMQ addBulk (one MULTI). */
const ADD_SLICE = 1000;
/** Jobs of each queue's failed and completed sets looked at per endedElsewhere. */
const ENDED_BATCH = 100;
/** Most bytes of small results (base64) the client keeps to carry in jobs; beyond it results are read from Redis. */
const CARRIED_BUDGET = 4 * 1024 * 1024;

export class TaskQueue {
  /** The shared queue, which every worker takes from. */
  readonly queue: Queue<TaskJobData, void>;
  /** Each worker's own queue, by worker name, made when a task is first placed there. */
  private readonly workerQueues = new Map<string, Queue<TaskJobData, void>>();
  /** Jobs in each worker's own queue, not yet reported. */
  private readonly placedOn = new Map<string, number>();
  private readonly functions = new Map<number, FnSpec>();
  private functionTable: { spec(id: number): FnSpec } | undefined;
  /** Tasks in the queue or running: keyId → the job. Finished tasks leave it. */
  private readonly pending = new Map<string, Pending>();
  /** Deletions of stored values under way, by key. */
  private readonly deleting = new Map<string, Promise<void>>();
  /** Results in the store, by keyId. */
  private readonly held = new Map<string, Held>();
  /** Bytes of the `carried` frames in `held`. */
  private carriedBytes = 0;
  /** Keys whose stored values are deleted in the next turn of the event loop (see forget). */
  private toDelete: string[] = [];
  /** The deletion of `toDelete`: settled once Redis answered it. */
  private deletion: { readonly answered: Promise<void>; readonly settle: () => void } | undefined;
  /**
   * Set by the outcome reader while it holds outcomes read and not yet followed by its next read,
   * which carries the deletions they made (see deleteValues).
   */
  outcomesInHand = false;
  private nextJob = 0;
  private adding: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: Redis,
    private readonly store: RedisStore,
    private readonly namespace: Namespace,
    /** Reports messages as if from `worker` (tasks that could not be queued err this way). */
    private readonly report: (worker: WorkerAddress, messages: readonly FromWorker[]) => void,
    /** Whether the transport has stopped (failed or closing): nothing more is queued or reported. */
    private readonly stopped: () => boolean,
    /** Tells a worker to drop values it keeps that the scheduler forgot. */
    private readonly freeKept: (worker: WorkerAddress, keys: readonly string[]) => void,
    /** The client's holdAbove option, passed on in every job when given (see TaskJobData). */
    private readonly holdAbove: number | undefined,
    /** A registered worker's threads; undefined for one not registered. */
    private readonly threadsOf: (worker: string) => number | undefined,
  ) {
    this.queue = this.makeQueue(TASK_QUEUE);
  }

  private makeQueue(name: string): Queue<TaskJobData, void> {
    return new Queue<TaskJobData, void>(name, { connection: this.redis, prefix: this.namespace.queuePrefix });
  }

  private queueOf(job: Pending): Queue<TaskJobData, void> {
    return job.placed === undefined ? this.queue : this.workerQueues.get(job.placed.worker)!;
  }

  /** Tasks queued or running. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The names of the tasks queued or running and of the results held: what a Redis that lost its data lost. */
  names(): string[] {
    return [...[...this.held.values()].map((value) => value.name), ...[...this.pending.values()].map((job) => job.name)];
  }

  /** Resolves once every job given so far was added (or failed to be). */
  added(): Promise<void> {
    return this.adding;
  }

  defineFunctions(functions: readonly (readonly [number, FnSpec])[]): void {
    for (const [id, spec] of functions) this.functions.set(id, spec);
  }

  /** See RedisTransport.resolveFunctionsWith. */
  resolveFunctionsWith(table: { spec(id: number): FnSpec }): void {
    this.functionTable = table;
  }

  /** Puts tasks whose inputs are all in the store on the queue, lowest priority first. */
  enqueue(tasks: readonly QueuedTask[]): void {
    const batch: { task: QueuedTask; jobId: string }[] = [];
    for (const task of tasks) {
      if (task.functions !== undefined) this.defineFunctions(task.functions);
      const jobId = taskJobId(this.nextJob++);
      this.pending.set(task.key, { jobId, name: task.name, ...this.place(task) });
      batch.push({ task, jobId });
    }
    // Adds stay in order (a large spec is stored before its job is added). A key forgotten a
    // moment ago must lose its old value before its new job can run and publish the new one.
    const deletions = batch.map(({ task }) => this.deleting.get(task.key)).filter((deletion) => deletion !== undefined);
    this.adding = this.adding.then(async () => {
      if (deletions.length > 0) await Promise.all(deletions);
      await this.addJobs(batch);
    });
  }

  /** Where a task goes (see ./placement): a worker's own queue, counted against its load, or the shared one. */
  private place(task: QueuedTask): Pick<Pending, "placed"> {
    const kept: { holder: string; nbytes: number; key: string }[] = [];
    for (const { key } of task.dependencies) {
      const held = this.held.get(key);
      if (held?.holder !== undefined) kept.push({ holder: held.holder, nbytes: held.nbytes ?? 0, key });
    }
    if (kept.length === 0) return {};
    const worker = placeByData(kept, (name) => {
      const nthreads = this.threadsOf(name);
      return nthreads === undefined ? undefined : { nthreads, placed: this.placedOn.get(name) ?? 0 };
    });
    if (worker === undefined) return {};
    this.placedOn.set(worker, (this.placedOn.get(worker) ?? 0) + 1);
    if (!this.workerQueues.has(worker)) this.workerQueues.set(worker, this.makeQueue(workerTaskQueue(worker)));
    return { placed: { worker, input: kept.find((input) => input.holder === worker)!.key } };
  }

  /** `key`'s job leaves `pending` (its worker's count too). */
  private settle(key: string): void {
    const worker = this.pending.get(key)?.placed?.worker;
    if (worker !== undefined) this.placedOn.set(worker, this.placedOn.get(worker)! - 1);
    this.pending.delete(key);
  }

  /**
   * `worker` left: the jobs placed in its own queue go. Returns their tasks, each with the input
   * it was placed for: the caller tells the scheduler to queue them again once it knows whether
   * that input went with the worker or was handed over (see relocate).
   */
  workerLeft(worker: string): { readonly task: string; readonly input: string }[] {
    const placed: { task: string; input: string }[] = [];
    for (const [key, job] of [...this.pending]) {
      if (job.placed?.worker !== worker) continue;
      this.queueOf(job).remove(job.jobId).catch(() => {});
      this.ended(key, job);
      placed.push({ task: key, input: job.placed.input });
    }
    return placed;
  }

  /** Adds jobs a slice at a time: the first run while later ones are still being added, and memory stays bounded. */
  private async addJobs(batch: readonly { task: QueuedTask; jobId: string }[]): Promise<void> {
    for (let i = 0; i < batch.length; i += ADD_SLICE) await this.addSlice(batch.slice(i, i + ADD_SLICE));
  }

  private async addSlice(batch: readonly { task: QueuedTask; jobId: string }[]): Promise<void> {
    const jobs: { name: string; data: TaskJobData; opts: JobsOptions }[] = [];
    const erred: FromWorker[] = [];
    for (const { task, jobId } of batch) {
      if (this.pending.get(task.key)?.jobId !== jobId) continue; // forgotten meanwhile
      try {
        jobs.push({ name: task.prefix, data: await this.jobData(task, jobId, batch.length), opts: jobOptions(jobId, task.priority) });
      } catch (error) {
        this.settle(task.key);
        erred.push(taskErred(task.key, error));
      }
    }
    if (erred.length > 0) this.report("redis", erred);
    const byQueue = new Map<Queue<TaskJobData, void>, typeof jobs>();
    for (const job of jobs) {
      const queue = this.queueOf(this.pending.get(job.data.key)!);
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), job]);
    }
    await Promise.all([...byQueue].map(([queue, queueJobs]) => this.addTo(queue, queueJobs)));
  }

  private async addTo(queue: Queue<TaskJobData, void>, jobs: readonly { name: string; data: TaskJobData; opts: JobsOptions }[]): Promise<void> {
    try {
      // One job (a chain's next step) goes without addBulk's MULTI; when no other task of this
      // client is queued or running, without a priority too: there is nothing to order it
      // against, and BullMQ's prioritised path costs Redis a counter and a sorted set each way.
      if (jobs.length === 1) {
        const [{ name, data, opts }] = jobs;
        await queue.add(name, data, this.pending.size === 1 ? { ...opts, priority: undefined } : opts);
      } else {
        await queue.addBulk([...jobs]);
      }
    } catch (error) {
      if (this.stopped()) return;
      const lost = jobs.map((job) => job.data.key).filter((key) => this.pending.has(key));
      for (const key of lost) this.settle(key);
      this.report("redis", lost.map((key) => taskErred(key, error)));
    }
  }

  private async jobData(task: QueuedTask, jobId: string, queuedWith: number): Promise<TaskJobData> {
    const functions: [number, FnSpec][] = [];
    for (const id of functionIds(task.task)) {
      const spec = this.functions.get(id) ?? this.functionTable?.spec(id);
      if (spec === undefined) throw new Error(`Task ${task.name} calls function ${id}, which was never defined (define-functions)`);
      functions.push([id, spec]);
    }
    const { frames, inline } = encodeTask(task.task);
    let spec: TaskJobData["task"];
    if (inline) {
      spec = { frames: frames.map((frame) => frame.toString("base64")) };
    } else {
      await this.store.putTask(task.key, jobId, frames);
      this.pending.set(task.key, { jobId, name: task.name, specToken: jobId });
      spec = { stored: jobId };
    }
    const carried: [string, readonly string[]][] = [];
    for (const { key } of task.dependencies) {
      const frames = this.held.get(key)?.carried;
      if (frames !== undefined) carried.push([key, frames]);
    }
    return {
      key: task.key,
      name: task.name,
      prefix: task.prefix,
      spanId: task.spanId,
      task: spec,
      functions,
      inputs: task.dependencies.map((dependency) => dependency.key),
      carried: carried.length > 0 ? carried : undefined,
      queuedWith,
      ...(this.holdAbove === undefined ? {} : { holdAbove: this.holdAbove }),
    };
  }

  /** The scheduler no longer wants these keys: their jobs leave the queue (unless running) and their values the store. */
  forget(keys: readonly string[]): void {
    const kept = new Map<string, string[]>();
    for (const key of keys) {
      const holder = this.held.get(key)?.holder;
      if (holder !== undefined) kept.set(holder, [...(kept.get(holder) ?? []), key]);
      const job = this.pending.get(key);
      if (job !== undefined) {
        // A running job cannot be removed (0): its outcome is dropped when it arrives.
        this.queueOf(job).remove(job.jobId).catch(() => {});
        this.ended(key, job);
      }
      this.release(key);
    }
    this.deleteValues(keys);
    for (const [worker, workerKeys] of kept) this.freeKept(worker, workerKeys);
  }

  /**
   * Values of keys in the store, and where those a worker keeps live; keys in neither are absent
   * from both maps.
   */
  async fetch(keys: readonly string[]): Promise<{ values: Map<string, unknown>; located: ReadonlyMap<string, ValueLocation> }> {
    // Small values came with their outcomes: only the others are read.
    const values = new Map<string, unknown>();
    const toRead: string[] = [];
    for (const key of keys) {
      const frames = this.held.get(key)?.carried;
      if (frames !== undefined) values.set(key, decodeCarried(frames));
      else toRead.push(key);
    }
    if (toRead.length === 0) return { values, located: new Map() };
    const read = await this.store.get(toRead);
    for (const [key, value] of read.values) values.set(key, value);
    return { values, located: read.located };
  }

  /**
   * `worker` left: the results it kept that it handed over (./handoff) get their new place, from
   * their records in Redis; resolves with the others, which are lost (all of them if Redis cannot
   * be read).
   */
  async relocate(worker: WorkerAddress): Promise<string[]> {
    const kept = [...this.held].filter(([, value]) => value.holder === worker).map(([key]) => key);
    if (kept.length === 0) return [];
    const places = await this.store.whereAre(kept).catch(() => kept.map(() => undefined));
    const lost: string[] = [];
    kept.forEach((key, i) => {
      const held = this.held.get(key);
      const place = places[i];
      if (held?.holder !== worker) return; // forgotten, or computed again, meanwhile
      if (place === undefined || place.holder === worker) lost.push(key);
      else this.held.set(key, { ...held, holder: place.holder });
    });
    return lost;
  }

  // ---- What the outcome reader tells ---------------------------------------------------------

  /** The job of `key` queued or running, if the scheduler still wants it. */
  jobOf(key: string): Pending | undefined {
    return this.pending.get(key);
  }

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /**
   * Whether `key`'s result in the store was computed by a job queued after `jobId`: a report from
   * that job that the key is missing was about an older copy, lost and computed again meanwhile.
   */
  computedAfter(key: string, jobId: string): boolean {
    const job = this.held.get(key)?.job;
    return job !== undefined && job > taskJobNumber(jobId);
  }

  /** `key`'s result is in the store (`value.carried`: its frames, kept while the budget allows). */
  hold(key: string, value: Held): void {
    this.release(key);
    if (value.carried !== undefined) {
      const bytes = value.carried.reduce((sum, frame) => sum + frame.length, 0);
      if (this.carriedBytes + bytes > CARRIED_BUDGET) value = { name: value.name };
      else this.carriedBytes += bytes;
    }
    this.held.set(key, value);
  }

  private release(key: string): void {
    const frames = this.held.get(key)?.carried;
    if (frames !== undefined) this.carriedBytes -= frames.reduce((sum, frame) => sum + frame.length, 0);
    this.held.delete(key);
  }

  /** `key`'s job is over (reported, failed or forgotten): it leaves `pending`, and its spec the store. */
  ended(key: string, job: Pending): void {
    this.settle(key);
    if (job.specToken !== undefined) this.store.deleteTask(key, job.specToken).catch(() => {});
  }

  /**
   * Tasks whose jobs ended without an outcome (one round trip while there are none): BullMQ failed
   * them (they stalled too often), or a program other than a tsdask worker completed them (tsdask
   * workers leave no completed job behind, see ./worker). Each such job is removed and its task
   * errs, if it is still wanted.
   */
  async endedElsewhere(): Promise<TaskErredMessage[]> {
    const queues = [this.queue, ...this.workerQueues.values()];
    const listed = this.redis.pipeline();
    const last = String(ENDED_BATCH - 1);
    for (const queue of queues) listed.zrange(queue.keys.failed, "0", last).zrange(queue.keys.completed, "0", last);
    const ids = ((await listed.exec()) ?? []).map(([error, found]) => (error === null ? (found as string[]) : []));
    const ended = queues.flatMap((queue, i) => [...ids[2 * i].map((jobId) => ({ queue, jobId, failed: true })), ...ids[2 * i + 1].map((jobId) => ({ queue, jobId, failed: false }))]);
    if (ended.length === 0) return [];
    const read = this.redis.pipeline();
    for (const { queue, jobId, failed } of ended) read.hget(queue.toKey(jobId), failed ? "failedReason" : "returnvalue");
    const fields = ((await read.exec()) ?? []).map(([, field]) => (typeof field === "string" ? field : ""));
    const messages: TaskErredMessage[] = [];
    ended.forEach(({ queue, jobId, failed }, i) => {
      queue.remove(jobId).catch(() => {});
      const reason = fields[i];
      const message = failed
        ? (name: string) => lostTaskMessage(name, reason || "no reason given")
        : (name: string) => `Task ${name} was completed with a report this client cannot read: ${foreignCompletion(reason)}`;
      const erred = this.failedJob(jobId, message);
      if (erred !== undefined) messages.push(erred);
    });
    return messages;
  }

  /** A job that ended without an outcome (see endedElsewhere): its task errs with `message(its name)`, if it is still wanted. */
  private failedJob(jobId: string, message: (name: string) => string): TaskErredMessage | undefined {
    for (const [key, job] of this.pending) {
      if (job.jobId !== jobId) continue;
      this.ended(key, job);
      return taskErred(key, new Error(message(job.name)));
    }
    return undefined;
  }

  /**
   * Deletes stored values, in one command per turn of the event loop: after the jobs the same
   * outcomes made ready were added, so the next task of a chain does not wait behind it. Deletions
   * that handling outcomes made leave in the same write as the outcome loop's next read: a write,
   * and a wake-up of Redis and of this process, fewer per task. A key queued again meanwhile waits
   * for its old value to be gone (see enqueue).
   */
  deleteValues(keys: readonly string[]): void {
    if (keys.length === 0) return;
    this.toDelete.push(...keys);
    if (this.deletion === undefined) {
      let settle!: () => void;
      const answered = new Promise<void>((resolve) => (settle = resolve));
      this.deletion = { answered, settle };
      setImmediate(() => {
        // The outcome loop's read took them along, or is about to.
        if (this.outcomesInHand || this.deletion?.answered !== answered) return;
        this.flushDeletions();
      });
    }
    for (const key of keys) this.deleting.set(key, this.deletion.answered);
  }

  /** Whether deletions wait for the outcome loop's next read (see deleteValues). */
  get deletionsPending(): boolean {
    return this.deletion !== undefined;
  }

  /** Sends the pending deletions on `via` (a pipeline, or the outcome loop's connection). */
  queueDeletions(via: Unlinker): void {
    const deletion = this.deletion;
    if (deletion === undefined) return;
    const batch = this.toDelete;
    this.toDelete = [];
    this.deletion = undefined;
    this.store.queueDelete(via, batch, () => {
      deletion.settle();
      for (const key of batch) if (this.deleting.get(key) === deletion.answered) this.deleting.delete(key);
    });
  }

  /** Sends the pending deletions on their own. */
  flushDeletions(): void {
    const pipeline = this.redis.pipeline();
    this.queueDeletions(pipeline);
    pipeline.exec().catch(() => {});
  }

  /** Closes every queue's connection use (the transport is closing). */
  async close(): Promise<void> {
    await Promise.all([this.queue, ...this.workerQueues.values()].map((queue) => queue.close().catch(() => {})));
  }

  /** Forgets every job and result (the transport is closing). */
  clear(): void {
    this.pending.clear();
    this.placedOn.clear();
    this.held.clear();
    this.carriedBytes = 0;
  }
}

function jobOptions(jobId: string, priority: number): JobsOptions {
  // BullMQ runs prioritised jobs lowest first (1 … PRIORITY_LIMIT); 0 would jump ahead of them all.
  // Its range holds a graph's static order, not the submission before it: ready tasks of
  // successive submissions interleave by their order in their own graph (beyond the range, FIFO).
  const order = staticOrderOf(priority);
  // A job a tsdask worker completes goes (the worker's option); one another program completed, or
  // that failed, stays for endedElsewhere to find.
  return { jobId, priority: 1 + Math.min(Math.max(0, Math.trunc(order)), PRIORITY_LIMIT - 1), removeOnFail: false };
}

function lostTaskMessage(name: string, reason: string): string {
  if (/stalled more than allowable limit/.test(reason)) {
    return `Task ${name} was running on workers that died or stopped answering, more times than they allow (tsdask worker --allowed-failures): it is given up (Dask's KilledWorker)`;
  }
  return `Task ${name} failed in its queue: ${reason}`;
}

/** Function ids a task calls. */
function functionIds(task: WireTask, into = new Set<number>()): Set<number> {
  if (task[0] === "call") {
    into.add(task[1]);
    for (let i = 2; i < task.length; i++) functionIds(task[i] as WireTask, into);
  } else if (task[0] === "list") {
    for (let i = 1; i < task.length; i++) functionIds(task[i] as WireTask, into);
  }
  return into;
}

export function taskErred(key: string, error: unknown): TaskErredMessage {
  return { op: "task-erred", key, error: packError(error), thread: 0, startstops: [] };
}
