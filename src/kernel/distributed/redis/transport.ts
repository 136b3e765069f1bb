// The client side of a Redis cluster, as the scheduler's transport with "queue" placement: ready
// tasks become BullMQ jobs (lowest priority first) that any worker takes; a worker completes each
// job with the task's outcome, which BullMQ puts in the job's "completed" event, and this
// transport reads the queue's event stream and reports the outcomes as worker messages; results
// stay in the client's namespace until the scheduler forgets them. Workers are found in the
// registry (./registry) and reported as they join and leave.
//
// Faults: Redis not answering (connection lost and being retried, or the server frozen) for
// `connectionLostTimeout` seconds makes the transport fail (events.failed) with an error naming
// the server; after a reconnection it checks that Redis still holds the client's data, and fails
// naming the lost keys if it was restarted empty. Tasks wait in the queue while no worker is connected, with a notice after
// `noWorkersTimeout` seconds.

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Socket } from "node:net";
import { type JobsOptions, PRIORITY_LIMIT, Queue } from "bullmq";
import type { ChainableCommander, Redis } from "ioredis";
import type { MetricRecord, StartStop, TransferLogEntry } from "../../../protocol/records";
import { type PackedProfile, packProfile } from "../../../protocol/profile";
import { DEFAULT_PROFILING } from "../../profiling/hub";
import { type FnSpec, packError } from "../../execution/wire";
import type {
  ComputeTaskMessage,
  FromWorker,
  ProfileReplyMessage,
  ProfileRequestMessage,
  TaskErredMessage,
  TaskFinishedMessage,
  ToWorker,
  WireTask,
  WorkerAddress,
} from "../messages";
import { staticOrderOf } from "../scheduler/state";
import type { Transport, TransportEvents } from "../scheduler/transport";
import { WorkerClock } from "../worker/clock";
import { observeRedisTime } from "./clock";
import { PASSWORD_VARIABLE, type RedisTarget, redisTargetOf } from "./address";
import { type ConnectOptions, connectRedis } from "./connection";
import { type OutcomeEntry, type Publication, type ReplyEntry, type TaskJobData, type WorkerRequest, carryFrames, decodeCarried, decodeOutcome, decodeReply, encodeTask, taskJobId } from "./jobs";
import { Namespace, TASK_QUEUE, registry } from "./keys";
import { type RegisteredWorker, clientConnectionName, registerClient, registeredWorkers, unregisterClient } from "./registry";
import { RedisStore } from "./store";
import { RedisConnectionLostError, RedisDataLostError } from "./errors";

export interface RedisTransportOptions extends ConnectOptions {
  /** The client's name in the registry (default "tsdask-client"). */
  readonly name?: string;
  /** Largest Redis string a stored value is cut into, bytes (default 64 MiB). */
  readonly partSize?: number;
  /** Seconds tasks may wait with no worker connected before a notice says so (default 10). */
  readonly noWorkersTimeout?: number;
  /** Seconds the connection to Redis may stay lost before the transport fails (default 20). */
  readonly connectionLostTimeout?: number;
  /** Seconds between reads of the worker registry (default 1). */
  readonly pollInterval?: number;
}

/** A task for the queue; `functions` defines function ids the transport has not been told of yet. */
export type QueuedTask = ComputeTaskMessage & { readonly functions?: readonly (readonly [number, FnSpec])[] };

/** A task's report with the read of its inputs from Redis, as the worker logged it (an optional addition). */
export type RedisTaskFinished = TaskFinishedMessage & { readonly transfer?: TransferLogEntry };


/** A result in the store, as the client keeps it. */
interface Held {
  /** The key's repr, to name it if Redis loses it. */
  readonly name: string;
  /** Its frames (base64) when small enough to carry in the jobs that use it (see CARRIED_VALUE_BYTES). */
  readonly carried?: readonly string[];
}

interface Pending {
  readonly jobId: string;
  readonly name: string;
  /** Token of the stored spec, for a task too large to travel in its job. */
  readonly specToken?: string;
}

/** Longest wait for Redis while closing, ms. */
const CLOSE_TIMEOUT_MS = 5000;
/** Jobs added per BullMQ addBulk (one MULTI). */
const ADD_SLICE = 1000;
/** Entries of each stream read per round trip (a job makes four or five events, one of them its outcome). */
const OUTCOME_BATCH = 4000;
/**
 * BullMQ trims a queue's event stream to a length kept in the queue's metadata as it adds jobs:
 * this client trims what it has read instead, so a client that falls behind loses no outcome.
 */
const EVENTS_MAX_LEN = 2 ** 31;
const COMPLETED = Buffer.from("completed");
const FAILED = Buffer.from("failed");
/** Most bytes of small results (base64) the client keeps to carry in jobs; beyond it results are read from Redis. */
const CARRIED_BUDGET = 4 * 1024 * 1024;
/**
 * Seconds a worker has to answer a profile request (its profiler waits at most 2 s for a busy
 * thread): a worker that is frozen, or died since its last heartbeat, is then left out of
 * client.profile rather than holding it until its registration expires.
 */
const PROFILE_REPLY_TIMEOUT = 5;

/** How often, and how far apart, a request to a worker not listening (yet) is sent again. */
const REQUEST_RETRIES = 20;
const REQUEST_RETRY_MS = 100;

export class RedisTransport implements Transport {
  readonly placement = "queue" as const;
  readonly description: string;
  readonly namespace: Namespace;
  readonly store: RedisStore;
  private readonly queue: Queue<TaskJobData, string>;
  private readonly clock = new WorkerClock();
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
  /** From a batch of outcomes read until the outcome loop's next read, which carries the deletions they made. */
  private outcomesInHand = false;
  private readonly workers = new Map<string, RegisteredWorker>();
  /** Profile requests sent and not answered yet: requestId → what gives up on them. */
  private readonly profileTimers = new Map<number, NodeJS.Timeout>();
  private events: TransportEvents | undefined;
  private nextJob = 0;
  private adding: Promise<void> = Promise.resolve();
  private pollTimer: NodeJS.Timeout | undefined;
  private noWorkersSince: number | undefined;
  private noticeGiven = false;
  private polling = false;
  /** When Redis last answered a registry read (performance.now() ms). */
  private lastAnswer = performance.now();
  private lastTick = performance.now();
  private lastError: Error | undefined;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  private keepsAlive = true;
  private readonly options: Required<Pick<RedisTransportOptions, "noWorkersTimeout" | "connectionLostTimeout" | "pollInterval">>;

  private constructor(
    readonly target: RedisTarget,
    private readonly redis: Redis,
    private readonly blocking: Redis,
    clientId: string,
    options: RedisTransportOptions,
  ) {
    this.description = target.display;
    this.namespace = new Namespace(clientId);
    this.store = new RedisStore(redis, this.namespace, { partSize: options.partSize });
    this.queue = new Queue<TaskJobData, string>(TASK_QUEUE, { connection: redis, prefix: this.namespace.queuePrefix, streams: { events: { maxLen: EVENTS_MAX_LEN } } });
    this.options = {
      noWorkersTimeout: options.noWorkersTimeout ?? 10,
      connectionLostTimeout: options.connectionLostTimeout ?? 20,
      pollInterval: options.pollInterval ?? 1,
    };
  }

  /**
   * Connects and registers the client; a RedisConnectError naming the host (refused, wrong
   * password, timeout…). Without a password in the address, TSDASK_REDIS_PASSWORD's is used.
   */
  static async connect(url: string, options: RedisTransportOptions = {}): Promise<RedisTransport> {
    const target = redisTargetOf(url);
    const clientId = randomBytes(6).toString("hex");
    const connectOptions = { ...options, connectionName: clientConnectionName(clientId) };
    const redis = await connectRedis(target, connectOptions);
    let blocking: Redis | undefined;
    try {
      blocking = await connectRedis(target, connectOptions);
      const transport = new RedisTransport(target, redis, blocking, clientId, options);
      await registerClient(redis, clientId, { name: options.name ?? "tsdask-client", host: hostname(), pid: process.pid });
      await observeRedisTime(redis, transport.clock);
      return transport;
    } catch (error) {
      blocking?.disconnect();
      redis.disconnect();
      throw error;
    }
  }

  get clientId(): string {
    return this.namespace.clientId;
  }

  /** The workers registered now. */
  get registeredWorkers(): readonly RegisteredWorker[] {
    return [...this.workers.values()];
  }

  /** Starts reporting to `events`: the workers registered now, then outcomes and heartbeats as they come. */
  async start(events: TransportEvents): Promise<void> {
    this.events = events;
    this.watchConnection();
    await this.poll();
    this.pollTimer = setInterval(() => this.tick(), this.options.pollInterval * 1000);
    void this.readOutcomes();
    this.setKeepsAlive(this.keepsAlive);
  }

  // ---- Scheduler → workers -------------------------------------------------------------------

  /**
   * Messages for one worker. With the queue, tasks reach workers through `enqueue`; here function
   * definitions (kept for the jobs that need them) and requests (client.run, profiles) matter. A worker
   * computes its own clock offset against Redis, so heartbeat replies are not needed; freeing a
   * key a worker is running is done by `forget` when its outcome arrives.
   */
  send(worker: WorkerAddress, messages: readonly ToWorker[]): void {
    for (const message of messages) {
      if (message.op === "define-functions") this.defineFunctions(message.functions);
      else if (message.op === "run") this.request(worker, message);
      else if (message.op === "profile") this.requestProfile(worker, message);
      else if (message.op === "plugin-add" || message.op === "plugin-remove") this.request(worker, message);
    }
  }

  /**
   * Asks `worker` for its profile windows of a time range, both ways on the Redis server's clock.
   * It answers within PROFILE_REPLY_TIMEOUT, or is left out (an empty reply, as from a worker that
   * does not profile).
   */
  private requestProfile(worker: WorkerAddress, message: ProfileRequestMessage): void {
    const toRedis = (time: number | undefined): number | undefined => (time === undefined ? undefined : time - this.clock.offset);
    const timer = setTimeout(() => this.unansweredProfile(worker, message.requestId), PROFILE_REPLY_TIMEOUT * 1000);
    timer.unref();
    this.profileTimers.set(message.requestId, timer);
    this.request(worker, { ...message, start: toRedis(message.start), stop: toRedis(message.stop) });
  }

  private unansweredProfile(worker: WorkerAddress, requestId: number): void {
    clearTimeout(this.profileTimers.get(requestId));
    if (!this.profileTimers.delete(requestId)) return;
    this.events?.received(worker, [{ op: "profile-reply", requestId, profile: packProfile([], DEFAULT_PROFILING.interval), enabled: false }]);
  }

  /** A worker's profile reply with its windows on this process's clock; undefined if it came too late. */
  private receivedProfile(reply: ProfileReplyMessage): ProfileReplyMessage | undefined {
    const timer = this.profileTimers.get(reply.requestId);
    if (timer === undefined) return undefined;
    clearTimeout(timer);
    this.profileTimers.delete(reply.requestId);
    const profile: PackedProfile = {
      ...reply.profile,
      windows: reply.profile.windows.map((window) => ({ ...window, time: this.fromRedis(window.time), stop: this.fromRedis(window.stop) })),
    };
    return { ...reply, profile };
  }

  /** Asks `worker` through its request channel; it answers on this client's reply stream. */
  private request(worker: WorkerAddress, message: WorkerRequest["message"], attempt = 0): void {
    const request: WorkerRequest = { client: this.clientId, message };
    const unanswered = (reason: string): void => {
      if (message.op === "profile") return this.unansweredProfile(worker, message.requestId);
      const error = packError(new Error(`Worker ${worker} cannot be asked through ${this.description}: ${reason}`));
      this.events?.received(worker, [{ op: "run-reply", requestId: message.requestId, ok: false, error }]);
    };
    // A worker subscribes to its channel just after it registers: one that has only just joined
    // (and is told its plugins at once) is asked again for a moment before the request fails.
    const retry = (): void => void setTimeout(() => this.request(worker, message, attempt + 1), REQUEST_RETRY_MS).unref();
    this.redis.publish(registry.requests(worker), JSON.stringify(request)).then(
      (listeners) => listeners === 0 && (attempt < REQUEST_RETRIES ? retry() : unanswered("it is not listening (it left, or lost its connection)")),
      (error: Error) => unanswered(error.message),
    );
  }

  defineFunctions(functions: readonly (readonly [number, FnSpec])[]): void {
    for (const [id, spec] of functions) this.functions.set(id, spec);
  }

  /**
   * Where specs of function ids not defined by messages are found: the scheduler's FunctionTable
   * (with queue placement the scheduler sends no define-functions; every job carries its specs).
   */
  resolveFunctionsWith(table: { spec(id: number): FnSpec }): void {
    this.functionTable = table;
  }

  /** Puts tasks whose inputs are all in the store on the queue, lowest priority first. */
  enqueue(tasks: readonly QueuedTask[]): void {
    this.checkUsable();
    const batch: { task: QueuedTask; jobId: string }[] = [];
    for (const task of tasks) {
      if (task.functions !== undefined) this.defineFunctions(task.functions);
      const jobId = taskJobId(this.nextJob++);
      this.pending.set(task.key, { jobId, name: task.name });
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
        this.pending.delete(task.key);
        erred.push(taskErred(task.key, error));
      }
    }
    if (erred.length > 0) this.events?.received("redis", erred);
    if (jobs.length === 0) return;
    try {
      // One job (a chain's next step) goes without addBulk's MULTI; when no other task of this
      // client is queued or running, without a priority too: there is nothing to order it
      // against, and BullMQ's prioritised path costs Redis a counter and a sorted set each way.
      if (jobs.length === 1) {
        const [{ name, data, opts }] = jobs;
        await this.queue.add(name, data, this.pending.size === 1 ? { ...opts, priority: undefined } : opts);
      } else {
        await this.queue.addBulk(jobs);
      }
    } catch (error) {
      if (this.failure !== undefined || this.closing !== undefined) return;
      const lost = jobs.map((job) => job.data.key).filter((key) => this.pending.delete(key));
      this.events?.received("redis", lost.map((key) => taskErred(key, error)));
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
    };
  }

  /** The scheduler no longer wants these keys: their jobs leave the queue (unless running) and their values the store. */
  forget(keys: readonly string[]): void {
    if (this.failure !== undefined || this.closing !== undefined) return;
    for (const key of keys) {
      const job = this.pending.get(key);
      if (job !== undefined) {
        // A running job cannot be removed (0): its outcome is dropped when it arrives.
        this.queue.remove(job.jobId).catch(() => {});
        this.ended(key, job);
      }
      this.release(key);
    }
    this.deleteValues(keys);
  }

  private hold(key: string, value: Held): void {
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

  /**
   * Deletes stored values, in one command per turn of the event loop: after the jobs the same
   * outcomes made ready were added, so the next task of a chain does not wait behind it. Deletions
   * that handling outcomes made leave in the same write as the outcome loop's next read: a write,
   * and a wake-up of Redis and of this process, fewer per task. A key queued again meanwhile waits
   * for its old value to be gone (see enqueue).
   */
  private deleteValues(keys: readonly string[]): void {
    if (keys.length === 0) return;
    this.toDelete.push(...keys);
    if (this.deletion === undefined) {
      let settle!: () => void;
      const answered = new Promise<void>((resolve) => (settle = resolve));
      this.deletion = { answered, settle };
      setImmediate(() => {
        // The outcome loop's read took them along, or is about to.
        if (this.outcomesInHand || this.deletion?.answered !== answered) return;
        const pipeline = this.redis.pipeline();
        this.queueDeletions(pipeline);
        pipeline.exec().catch(() => {});
      });
    }
    for (const key of keys) this.deleting.set(key, this.deletion.answered);
  }

  /** Adds the pending deletions to `pipeline`. */
  private queueDeletions(pipeline: ChainableCommander): void {
    const deletion = this.deletion;
    if (deletion === undefined) return;
    const batch = this.toDelete;
    this.toDelete = [];
    this.deletion = undefined;
    this.store.queueDelete(pipeline, batch, () => {
      deletion.settle();
      for (const key of batch) if (this.deleting.get(key) === deletion.answered) this.deleting.delete(key);
    });
  }

  /** Values of keys in the store; keys not there are absent from the map. */
  async fetch(keys: readonly string[]): Promise<ReadonlyMap<string, unknown>> {
    this.checkUsable();
    // Small values came with their outcomes: only the others are read.
    const values = new Map<string, unknown>();
    const toRead: string[] = [];
    for (const key of keys) {
      const frames = this.held.get(key)?.carried;
      if (frames !== undefined) values.set(key, decodeCarried(frames));
      else toRead.push(key);
    }
    if (toRead.length > 0) for (const [key, value] of (await this.store.get(toRead)).values) values.set(key, value);
    return values;
  }

  // ---- Workers → scheduler -------------------------------------------------------------------

  /**
   * Reads task outcomes from the task queue's event stream (the "completed" and "failed" events of
   * jobs; BullMQ's other events are passed over) and workers' replies from the reply stream, past
   * the last entries handled. What was handled is removed in the same write as the next read
   * (events up to the last one read, replies one by one). That write waits for the next turn of
   * the event loop, after the jobs these outcomes made ready were added: a chain's next task does
   * not wait behind it.
   */
  private async readOutcomes(): Promise<void> {
    // BullMQ's stream of the queue's events: a job's "completed" event holds the task's outcome.
    const taskEvents = this.queue.keys.events;
    const { replies } = this.namespace;
    let lastEvent = "0-0";
    let lastReply = "0-0";
    let eventsRead = false;
    let handledReplies: string[] = [];
    while (this.failure === undefined && this.closing === undefined) {
      let reply: unknown;
      try {
        const read = this.blocking.pipeline();
        this.queueDeletions(read);
        this.outcomesInHand = false;
        if (eventsRead) read.xtrim(taskEvents, "MINID", nextStreamId(lastEvent));
        if (handledReplies.length > 0) read.xdel(replies, ...handledReplies);
        read.callBuffer("XREAD", "COUNT", String(OUTCOME_BATCH), "BLOCK", "1000", "STREAMS", taskEvents, replies, lastEvent, lastReply);
        const results = (await read.exec()) ?? [];
        eventsRead = false;
        handledReplies = [];
        const [error, value] = results[results.length - 1] ?? [new Error("no reply")];
        if (error !== null) throw error;
        reply = value;
      } catch (error) {
        if (this.failure !== undefined || this.closing !== undefined) return;
        // The connection dropped: it reconnects by itself (tick() bounds how long); unread entries wait.
        this.lastError = error as Error;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (reply === null) continue;
      const read = streamsRead(reply);
      const events = read.get(taskEvents) ?? [];
      const replyEntries = read.get(replies) ?? [];
      if (events.length > 0) {
        lastEvent = events[events.length - 1][0].toString();
        eventsRead = true;
      }
      if (replyEntries.length > 0) {
        handledReplies = replyEntries.map(([id]) => id.toString());
        lastReply = handledReplies[handledReplies.length - 1];
      }
      this.outcomesInHand = true;
      this.handleOutcomes(events, replyEntries);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Deletions left for a read that will not come.
    if (this.outcomesInHand) {
      this.outcomesInHand = false;
      const pipeline = this.redis.pipeline();
      this.queueDeletions(pipeline);
      pipeline.exec().catch(() => {});
    }
  }

  private handleOutcomes(events: readonly StreamEntry[], replies: readonly StreamEntry[]): void {
    const byWorker = new Map<string, FromWorker[]>();
    const deliver = (worker: string, messages: readonly FromWorker[]): void => {
      const list = byWorker.get(worker) ?? [];
      byWorker.set(worker, list);
      list.push(...messages);
    };
    for (const [, fields] of replies) {
      let entry: ReplyEntry;
      try {
        entry = decodeReply(fields[1]);
      } catch {
        continue; // written by something other than a tsdask worker: skipped, the loop goes on
      }
      const reply = entry.reply.op === "profile-reply" ? this.receivedProfile(entry.reply) : entry.reply;
      if (reply !== undefined) deliver(entry.worker, [reply]);
    }
    const orphans: string[] = [];
    for (const [, fields] of events) {
      // Fields: "event", its name, "jobId", the id, then the event's own (see BullMQ's scripts).
      const event = fields[1];
      const jobId = fields[3]?.toString() ?? "";
      if (event.equals(FAILED)) {
        const reason = eventField(fields, "failedReason")?.toString() ?? "no reason given";
        const failure = this.failedJob(jobId, (name) => lostTaskMessage(name, reason));
        if (failure !== undefined) deliver("redis", [failure]);
        continue;
      }
      if (!event.equals(COMPLETED)) continue;
      let outcome: ReturnType<typeof decodeOutcome>;
      try {
        outcome = decodeOutcome(eventField(fields, "returnvalue") ?? Buffer.alloc(0));
      } catch (error) {
        // Not a tsdask worker's report (another program completing jobs of this queue?): its task errs.
        const failure = this.failedJob(jobId, (name) => `Task ${name} was completed with a report this client cannot read: ${(error as Error).message}`);
        if (failure !== undefined) deliver("redis", [failure]);
        continue;
      }
      const { publication, entry } = outcome;
      const job = this.pending.get(entry.key);
      if (job === undefined) {
        // The scheduler forgot the key: a value published for nobody goes.
        if (publication === "published" && !this.held.has(entry.key)) orphans.push(entry.key);
        continue;
      }
      // An earlier job of a key queued again: the current job reports too, and its value is the stored one.
      if (job.jobId !== entry.jobId) continue;
      this.ended(entry.key, job);
      deliver(entry.worker, this.toMessages(entry, job, publication));
    }
    if (orphans.length > 0) this.deleteValues(orphans);
    for (const [worker, messages] of byWorker) this.events?.received(worker, messages);
  }

  /**
   * A job that ended without a report (BullMQ failed it: it stalled too often), or with one that
   * cannot be read: its task errs with `message(its name)`, if it is still wanted.
   */
  private failedJob(jobId: string, message: (name: string) => string): TaskErredMessage | undefined {
    for (const [key, job] of this.pending) {
      if (job.jobId !== jobId) continue;
      this.ended(key, job);
      return taskErred(key, new Error(message(job.name)));
    }
    return undefined;
  }

  /** `key`'s job is over (reported, failed or forgotten): it leaves `pending`, and its spec the store. */
  private ended(key: string, job: Pending): void {
    this.pending.delete(key);
    if (job.specToken !== undefined) this.store.deleteTask(key, job.specToken).catch(() => {});
  }

  private toMessages(entry: OutcomeEntry, job: Pending, publication: Publication): FromWorker[] {
    switch (entry.status) {
      case "finished": {
        // Frames are carried only when they are the stored value: a re-run that found a value
        // stored (perhaps another, should the task not be deterministic) sent its own.
        const carried = publication === "published" && entry.frames !== undefined ? carryFrames(entry.frames) : undefined;
        this.hold(entry.key, { name: job.name, carried });
        const finished: RedisTaskFinished = {
          op: "task-finished",
          key: entry.key,
          nbytes: entry.nbytes,
          type: entry.type,
          thread: entry.thread,
          startstops: entry.startstops.map((startstop) => this.fromRedisStartStop(startstop)),
          digests: entry.metrics,
          transfer: entry.transfer === undefined ? undefined : this.fromRedisTransfer(entry.transfer),
        };
        return [finished];
      }
      case "erred": {
        const erred: TaskErredMessage = {
          op: "task-erred",
          key: entry.key,
          error: entry.error,
          thread: entry.thread,
          startstops: entry.startstops.map((startstop) => this.fromRedisStartStop(startstop)),
          digests: entry.metrics,
        };
        return [erred];
      }
      case "missing":
        return entry.missing.map((key) => ({ op: "missing-data", key, errantWorker: "redis", task: entry.key }));
    }
  }

  /** A Redis-clock time on this process's clock. */
  private fromRedis(time: number): number {
    return time + this.clock.offset;
  }

  private fromRedisStartStop(startstop: StartStop): StartStop {
    return { ...startstop, start: this.fromRedis(startstop.start), stop: this.fromRedis(startstop.stop) };
  }

  private fromRedisTransfer(entry: TransferLogEntry): TransferLogEntry {
    return { ...entry, start: this.fromRedis(entry.start), stop: this.fromRedis(entry.stop), middle: this.fromRedis(entry.middle) };
  }

  private tick(): void {
    const time = performance.now();
    // This process stood still (a long synchronous cell): Redis gets a fresh window to answer.
    if (time - this.lastTick > 2 * this.options.pollInterval * 1000) this.lastAnswer = Math.max(this.lastAnswer, time - this.options.pollInterval * 1000);
    this.lastTick = time;
    if (time - this.lastAnswer >= this.options.connectionLostTimeout * 1000) {
      const reason = this.lastError?.message ?? "no reply";
      this.fail(new RedisConnectionLostError(`Redis at ${this.description} has not answered for ${this.options.connectionLostTimeout} s (${reason}); pending tasks are given up`));
      return;
    }
    void this.poll();
  }

  /** Reads the registry: joins, leaves, heartbeats; the no-worker notice; whether Redis still holds our data. */
  private async poll(): Promise<void> {
    if (this.polling || this.failure !== undefined || this.closing !== undefined) return;
    this.polling = true;
    try {
      const [found, alive] = await Promise.all([registeredWorkers(this.redis), this.redis.exists(this.namespace.alive)]);
      this.lastAnswer = performance.now();
      if (alive === 0) return this.fail(this.dataLost());
      await observeRedisTime(this.redis, this.clock);
      this.updateWorkers(found);
      this.checkWaiting();
    } catch (error) {
      // Redis unreachable: the connection retries, and tick() decides when that is fatal.
      this.lastError = error as Error;
    } finally {
      this.polling = false;
    }
  }

  private updateWorkers(found: readonly RegisteredWorker[]): void {
    const events = this.events;
    if (events === undefined) return;
    const seen = new Set<string>();
    for (const worker of found) {
      const name = worker.info.name;
      seen.add(name);
      const known = this.workers.get(name);
      this.workers.set(name, worker);
      if (known === undefined || known.info.started !== worker.info.started) {
        if (known !== undefined) events.workerLeft(name, "it restarted");
        const { info } = worker;
        events.workerJoined({
          op: "register",
          address: name,
          name,
          host: info.host,
          pid: info.pid,
          nthreads: info.nthreads,
          memoryLimit: info.memoryLimit,
          globals: info.globals,
          now: this.fromRedis(info.started),
        });
      }
      if (worker.beat !== undefined && worker.beat.seq !== known?.beat?.seq) {
        // The worker's offset from Redis's clock, and this process's: its offset from this process's clock.
        const clockOffset = worker.beat.clockOffset - this.clock.offset;
        events.received(name, [{ op: "heartbeat", now: this.fromRedis(worker.beat.time), clockOffset, metrics: worker.beat.metrics }]);
      }
    }
    for (const name of [...this.workers.keys()]) {
      if (seen.has(name)) continue;
      this.workers.delete(name);
      events.workerLeft(name, "it left, or stopped heartbeating (its registration in Redis expired)");
    }
  }

  private checkWaiting(): void {
    if (this.workers.size > 0 || this.pending.size === 0) {
      if (this.noticeGiven && this.workers.size > 0) this.notice(`A worker joined ${this.description}; the ${this.pending.size} waiting task(s) are running`);
      this.noWorkersSince = undefined;
      this.noticeGiven = false;
      return;
    }
    const time = performance.now() / 1000;
    this.noWorkersSince ??= time;
    if (!this.noticeGiven && time - this.noWorkersSince >= this.options.noWorkersTimeout) {
      this.noticeGiven = true;
      this.notice(
        `No tsdask worker is connected to ${this.description}: ${this.pending.size} task(s) wait in its queue. ` +
          `Start one on any machine that reaches it: npx tsdask worker ${this.description}` +
          (this.target.hasPassword ? ` (with the password in ${PASSWORD_VARIABLE} or --password-file)` : ""),
      );
    }
  }

  private notice(message: string): void {
    if (this.events?.notice !== undefined) this.events.notice(message);
    else process.emitWarning(message, "TsdaskNotice");
  }

  // ---- Faults --------------------------------------------------------------------------------

  /** Connection errors are retried by ioredis (tick() bounds for how long); back again, Redis must still hold our data. */
  private watchConnection(): void {
    // BullMQ reports the shared connection's errors again (it prints them when nobody listens).
    this.queue.on("error", (error) => (this.lastError = error));
    for (const connection of [this.redis, this.blocking]) {
      connection.on("error", (error: Error) => (this.lastError = error));
      connection.on("ready", () => void this.poll());
      connection.on("connect", () => this.applyKeepAlive(connection));
    }
  }

  private dataLost(): RedisDataLostError {
    return new RedisDataLostError(this.description, [...[...this.held.values()].map((value) => value.name), ...[...this.pending.values()].map((job) => job.name)]);
  }

  private fail(error: Error): void {
    if (this.failure !== undefined || this.closing !== undefined) return;
    this.failure = error;
    this.closing = this.shutDown();
    this.events?.failed?.(error);
  }

  private checkUsable(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.closing !== undefined) throw new Error(`The Redis transport to ${this.description} is closed`);
  }

  // ---- Lifetime ------------------------------------------------------------------------------

  /** Whether this transport's connections and timers may keep the process alive. */
  setKeepsAlive(keep: boolean): void {
    this.keepsAlive = keep;
    this.applyKeepAlive(this.redis);
    this.applyKeepAlive(this.blocking);
    if (keep) this.pollTimer?.ref();
    else this.pollTimer?.unref();
  }

  private applyKeepAlive(connection: Redis): void {
    // ioredis has no ref/unref of its own; its current socket is `stream` (a new one after a reconnection).
    const socket = (connection as unknown as { stream?: Socket }).stream;
    if (this.keepsAlive) socket?.ref();
    else socket?.unref();
  }

  /** Unregisters (workers then write nothing more here), removes every key of the namespace, disconnects. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    clearInterval(this.pollTimer);
    for (const timer of this.profileTimers.values()) clearTimeout(timer);
    this.profileTimers.clear();
    this.pending.clear();
    this.held.clear();
    this.carriedBytes = 0;
    // Only while Redis answers, and not for long: otherwise the workers sweep the namespace once
    // they notice this client's connections are gone.
    if (this.redis.status === "ready") {
      let timer: NodeJS.Timeout | undefined;
      const cleanUp = async (): Promise<void> => {
        await this.adding;
        await unregisterClient(this.redis, this.clientId);
        await this.store.sweep();
      };
      const giveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([cleanUp().catch(() => {}), giveUp]);
      clearTimeout(timer);
    }
    this.blocking.disconnect();
    this.redis.disconnect();
    await this.queue.close().catch(() => {});
  }
}

function jobOptions(jobId: string, priority: number): JobsOptions {
  // BullMQ runs prioritised jobs lowest first (1 … PRIORITY_LIMIT); 0 would jump ahead of them all.
  // Its range holds a graph's static order, not the submission before it: ready tasks of
  // successive submissions interleave by their order in their own graph (beyond the range, FIFO).
  const order = staticOrderOf(priority);
  return { jobId, priority: 1 + Math.min(Math.max(0, Math.trunc(order)), PRIORITY_LIMIT - 1), removeOnComplete: true, removeOnFail: true };
}

type StreamEntry = [id: Buffer, fields: Buffer[]];

/** The entries of XREAD's reply by stream: `[[key, entries], …]` in RESP2, `[key, entries, …]` as ioredis flattens RESP3's map. */
function streamsRead(reply: unknown): Map<string, StreamEntry[]> {
  const items = reply as unknown[];
  const pairs = Buffer.isBuffer(items[0]) ? items.flatMap((item, i) => (i % 2 === 0 ? [[item, items[i + 1]]] : [])) : items;
  return new Map((pairs as [Buffer, StreamEntry[]][]).map(([key, entries]) => [key.toString(), entries]));
}

/** The value of a stream entry's field `name`. */
function eventField(fields: readonly Buffer[], name: string): Buffer | undefined {
  for (let i = 0; i < fields.length - 1; i += 2) if (fields[i].toString() === name) return fields[i + 1];
  return undefined;
}

/** The smallest stream id after `id` ("<ms>-<seq>"): XTRIM MINID with it removes `id` and all before. */
function nextStreamId(id: string): string {
  const dash = id.indexOf("-");
  return `${id.slice(0, dash)}-${BigInt(id.slice(dash + 1)) + 1n}`;
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

function taskErred(key: string, error: unknown): TaskErredMessage {
  return { op: "task-erred", key, error: packError(error), thread: 0, startstops: [] };
}
