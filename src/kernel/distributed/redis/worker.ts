// A worker of a Redis cluster (`tsdask worker redis://…`): registers and heartbeats in Redis,
// serves every client connected to that Redis through the client's BullMQ task queue (a job per
// thread, more when tasks are tiny), reads each task's inputs from the client's store, runs the
// task on its threads, stores the result, adding the task's outcome to the client's outcome
// stream in the same script (./store), and completes the job. A result larger than
// `holdAbove` stays in this worker's memory instead (./held), and Redis records where it lives;
// peers that need it fetch it from this worker's data listener (./inputs, ./data-listener). Around its tasks it
// has the runtime a LocalCluster worker has (../worker/core): its clock, records, statistical
// profiler, plugins and the view `client.run` functions see; it answers a client that asks on
// its request channel.
//
// A job that a dead worker held is taken over by another worker once BullMQ's lock on it lapses
// (`lockDuration`) and a stalled check runs (`stalledInterval`): seconds, not BullMQ's default
// half-minute. A result is stored once per job (see ./store): a re-run after a takeover that
// finds the first run's value leaves it alone and its outcome says so; the client counts the
// first outcome of a job and passes over any later one (a worker thought dead that comes back).

import { hostname } from "node:os";
import type { Socket } from "node:net";
import { type Job, Worker as QueueWorker } from "bullmq";
import type { Redis } from "ioredis";
import type { MetricRecord, StartStop, TransferLogEntry } from "../../../protocol/records";
import { now } from "../../clock";
import { nbytes as sizeOf } from "../../metrics/nbytes";
import { DEFAULT_PROFILING, type ProfilingOptions, checkProfilingOptions } from "../../profiling/hub";
import { packError } from "../../execution/wire";
import type { RunMessage, RunReplyMessage, WireTask } from "../messages";
import { WorkerClock, simulatedClockOffset } from "../worker/clock";
import type { Metric } from "../../metrics/context-meter";
import { WorkerCore } from "../worker/core";
import { InstructionLedger } from "../worker/digests";
import { type TaskRun, TaskRunner } from "../worker/execute";
import { InlinePolicy, InlineRunner } from "./inline";
import type { RedisConnectionLostError } from "./errors";
import { watchOutages } from "./outage";
import { QUEUE_CLOSE_GRACE_SECONDS, closeQueueWorkers } from "./queue-close";
import { type RedisWorkerOptions, type WorkerSettings, workerSettings } from "./worker-options";
import { keySizes } from "../worker/transfers";
import { KeptValues, workerFolder } from "./held";
import { type HandoffWorker, acquireHeld, retire } from "./handoff";
import { InFlightValues } from "./in-flight";
import { InputGatherer, type TaskInputs } from "./inputs";
import { observeRedisTime } from "./clock";
import { type RedisTarget, redisTargetOf } from "./address";
import { connectRedis } from "./connection";
import { DataListener, planDataListener } from "./data-listener";
import { FunctionGate, WorkerCannotRunError } from "./functions";
import {
  CARRIED_VALUE_BYTES,
  type OutcomeEntry,
  type ReplyEntry,
  type TaskJobData,
  type WorkerRequest,
  decodeInlineTask,
  encodeOutcome,
  encodeReply,
  taskJobNumber,
} from "./jobs";
import { Namespace, TASK_QUEUE, registry, workerTaskQueue } from "./keys";
import { REDIS_PROTOCOL, WorkerRegistration, connectedClients, registeredClients, unregisterClient } from "./registry";
import { type PublishOutcome, RedisStore, encodeStored, sweepNamespace, typeName } from "./store";


/** A client whose task queues this worker serves. */
interface ServedClient {
  readonly namespace: Namespace;
  readonly store: RedisStore;
  /** The shared queue, and the queue of the tasks the client places on this worker. */
  queues: readonly ServedQueue[];
}

/** What every outcome of a job names: the job, its task's key, this worker. */
type OutcomeBase = Pick<OutcomeEntry, "jobId" | "key" | "worker">;

interface ServedQueue {
  readonly worker: QueueWorker<TaskJobData, void>;
  /**
   * Whether the client queued more jobs at once than this worker has threads (see jobsAtOnce);
   * the queue running dry ends it.
   */
  backlog: boolean;
}

/** Most jobs a worker holds per thread (see RedisWorker.jobsAtOnce); a crash hands them all to other workers. */
const MAX_JOBS_PER_THREAD = 16;

/** Seconds between looks at which registered clients still have connections open (CLIENT LIST). */
const DEAD_CLIENT_CHECK_INTERVAL = 5;

export class RedisWorker {
  readonly name: string;
  readonly target: RedisTarget;
  private readonly served = new Map<string, ServedClient>();
  private readonly missingSince = new Map<string, number>();
  private lastConnectionCheck = 0;
  private readonly gate: FunctionGate;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private seq = 0;
  private closing: Promise<void> | undefined;
  private givenUpWith: (error: RedisConnectionLostError) => void = () => {};
  /** Settles if Redis stayed unreachable for the death timeout and the worker left (see abandon). */
  readonly givenUp = new Promise<RedisConnectionLostError>((resolve) => (this.givenUpWith = resolve));
  private refreshing: Promise<void> = Promise.resolve();
  /** The heartbeat in flight: leaving waits for it, or it would register the worker again. */
  private beating: Promise<void> = Promise.resolve();
  /** Tasks handed to the runner whose outcome has not come back. */
  private executing = 0;
  /** Tasks run to an outcome on a thread since the worker started (Dask's executed_count). */
  private executed = 0;
  private fetching = 0;
  /** Jobs taken from a queue whose outcome is not out yet, and who waits for there to be none. */
  private jobsInHand = 0;
  private readonly waitingForNoJobs: (() => void)[] = [];
  /** Queue workers whose close was given up on (see closeQueues): not waited for again. */
  private readonly leftBehind = new Set<QueueWorker<TaskJobData, void>>();
  /** The socket whose writes holdWrites holds until the next turn of the event loop. */
  private heldSocket: Socket | undefined;
  private readonly held = new InFlightValues();
  /** Big results it keeps for peers and clients (see ./held). */
  private readonly kept: KeptValues;
  /** Gets tasks' inputs from Redis and from the peers that keep them. */
  private readonly inputs: InputGatherer;
  /** Whether it said in its log that it published kept values for a peer that cannot reach it. */
  private toldPublished = false;
  /** What handing results over to peers needs of it, leaving or taking (./handoff). */
  private readonly handoff: HandoffWorker;
  /** Tiny tasks run on this thread (see ./inline), which prefixes qualify. */
  private readonly inline = new InlineRunner();
  private readonly inlinePolicy = new InlinePolicy();
  /**
   * Its clock, records, profiler, plugins and the view `client.run` functions see. Its transfer
   * logs hold reads of inputs from Redis (incoming, peer "redis") and writes of results to it
   * (outgoing); each task's digests also travel with its outcome. A Redis worker has no task state
   * machine, so its plugins' transition hook is not called.
   */
  private readonly core: WorkerCore;

  private constructor(
    private readonly options: WorkerSettings,
    name: string,
    target: RedisTarget,
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly runner: TaskRunner,
    private readonly registration: WorkerRegistration,
    /** This worker's clock, and its estimate of the Redis server's (the cluster's reference). */
    private readonly clock: WorkerClock,
    /** The statistical profiler's options: it samples the task threads (compute) and the main thread (administrative). */
    profile: ProfilingOptions | false,
    /** Where its log lines are printed (the `log` option, else stderr). */
    print: (line: string) => void,
    /** Where peers fetch values it holds; undefined with --no-listen. */
    private readonly listener: DataListener | undefined,
  ) {
    this.name = name;
    this.target = target;
    this.gate = new FunctionGate({ worker: name, host: hostname(), allowSource: options.allowSource, moduleRoots: options.moduleRoots });
    const folder = workerFolder();
    this.core = new WorkerCore({
      identity: { address: name, name, nthreads: options.nthreads, memoryLimit: options.memoryLimit, localDirectory: folder },
      clock,
      profile,
      holdings: {
        layout: () => this.kept.layout(),
        has: (key) => this.kept.find(key).found,
        get: (key) => this.kept.find(key).value,
        nbytes: (key) => this.kept.find(key).nbytes,
        held: () => {
          const kept = this.kept.held();
          return { ...kept, managed: kept.managed + this.held.total };
        },
        // A Redis cluster's scheduler counts no results per worker: their locations are in Redis.
        reportedResultBytes: () => 0,
        tasks: () => this.taskCounts(),
        executedCount: () => this.executed,
      },
      digestsInHeartbeats: false,
      print,
      warningPrefix: `tsdask worker ${name}: `,
    });
    this.kept = new KeptValues(folder, {
      memoryLimit: options.memoryLimit,
      digests: this.core.digests,
      status: () => this.core.status,
      setStatus: (status) => this.setStatus(status),
      note: (line) => this.core.note("INFO", line),
    });
    this.inputs = new InputGatherer(
      { name, clock, transfers: this.core.transfers, kept: this.kept, digest: (metrics) => this.digest(["gather-dep"], metrics), warn: (line) => this.core.warn(line) },
      redis,
      options.tls,
      options.peerTimeout,
    );
    const [kept, status, log] = [this.kept, () => this.core.status, (line: string) => this.core.warn(line)];
    const meter = { add: (activity: string, value: number, unit: string) => this.core.digests.add(["gather-dep", activity, unit], value) };
    this.handoff = { name, address: listener?.address, redis, kept, status, log, meter, storeOf: (id) => this.served.get(id)?.store, fetch: (...args) => this.inputs.fetchHeld(...args) };
    this.core.noteStart();
    listener?.attach({ held: (clientId) => this.kept.of(clientId), digests: this.core.digests, transfers: this.core.transfers, clock, log: (line) => this.core.warn(line) });
  }

  /** Connects, starts the threads and registers; a clear error if Redis cannot be reached or the name is taken. */
  static async start(options: RedisWorkerOptions): Promise<RedisWorker> {
    const target = redisTargetOf(options.url);
    const settings = workerSettings(options);
    const plan = planDataListener(options);
    const clock = new WorkerClock(simulatedClockOffset(options.clockOffset));
    const profiling = options.profile === false ? false : checkProfilingOptions(options.profile ?? DEFAULT_PROFILING, "Redis worker profile option");
    const name = options.name ?? `${hostname()}-${process.pid}`;
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const connectOptions = { tls: options.tls, connectionName: `tsdask-worker-${name.replace(/\s/g, "_")}` };
    const redis = await connectRedis(target, connectOptions);
    let subscriber: Redis | undefined;
    let runner: TaskRunner | undefined;
    let worker: RedisWorker | undefined;
    let listener: DataListener | undefined;
    try {
      if (plan !== undefined) listener = await DataListener.start(plan, options, redis);
      subscriber = await connectRedis(target, connectOptions);
      runner = new TaskRunner(settings.nthreads);
      const globals = await runner.ready();
      await observeRedisTime(redis, clock);
      const registration = new WorkerRegistration(
        redis,
        {
          name,
          protocol: REDIS_PROTOCOL,
          host: hostname(),
          pid: process.pid,
          nthreads: settings.nthreads,
          memoryLimit: settings.memoryLimit,
          globals,
          allowSource: settings.allowSource,
          started: clock.schedulerNow(),
          ...(listener === undefined ? {} : { dataAddress: listener.address }),
        },
        settings.ttl * 1000,
      );
      await registration.register();
      worker = new RedisWorker(settings, name, target, redis, subscriber, runner, registration, clock, profiling, log, listener);
      await worker.begin();
      return worker;
    } catch (error) {
      worker?.core.close();
      await listener?.close();
      runner?.close();
      subscriber?.disconnect();
      redis.disconnect();
      throw error;
    }
  }

  private async begin(): Promise<void> {
    watchOutages(this.redis, this.target.display, this.options.deathTimeout, { warn: (line) => this.core.warn(line), givenUp: (error) => void this.abandon(error) });
    this.subscriber.on("error", () => {});
    const requests = registry.requests(this.name);
    this.subscriber.on("message", (channel: string, message: string) => {
      if (channel === requests) void this.answer(message);
      else if (message.startsWith("client-")) this.refreshClients();
    });
    await this.subscriber.subscribe(registry.announcements, requests);
    await this.heartbeat();
    this.refreshClients();
    await this.refreshing;
    this.heartbeatTimer = setInterval(() => {
      this.beating = this.heartbeat();
      this.refreshClients();
    }, this.options.heartbeatInterval * 1000);
    // What anyone who can write to this Redis can make it run, for the operator to check.
    this.core.warn(
      this.options.allowSource
        ? "runs any function, shipped source included (--allow-source)"
        : `runs exports of modules under ${this.options.moduleRoots.join(", ")} (node_modules below them excepted; --module-root adds a folder) and side-effect-free built-ins`,
    );
    this.core.warn(
      `serving ${this.target.display} with ${this.options.nthreads} thread(s)` +
        (this.options.allowSource ? " (shipped source allowed)" : ""),
    );
  }

  // ---- Clients -----------------------------------------------------------------------------

  /** Serves clients that joined, stops serving those that left, sweeps those that died. One pass at a time. */
  private refreshClients(): void {
    this.refreshing = this.refreshing.then(() => this.refreshClientsNow()).catch((error: unknown) => {
      if (this.closing === undefined) this.core.warn(`cannot read the client registry: ${(error as Error).message}`);
    });
  }

  private async refreshClientsNow(): Promise<void> {
    if (this.closing !== undefined) return;
    const registered = await registeredClients(this.redis);
    const live = new Set(registered);
    const time = now();
    if (time - this.lastConnectionCheck >= DEAD_CLIENT_CHECK_INTERVAL) {
      this.lastConnectionCheck = time;
      const connected = await connectedClients(this.redis);
      for (const id of registered) {
        if (connected.has(id)) {
          this.missingSince.delete(id);
          continue;
        }
        const since = this.missingSince.get(id) ?? time;
        this.missingSince.set(id, since);
        if (time - since < this.options.deadClientGrace) continue;
        // Registered, but none of its connections open for a while: it died without closing.
        this.missingSince.delete(id);
        live.delete(id);
        this.core.warn(`client ${id} is gone without closing; removing its data`);
        await unregisterClient(this.redis, id);
        if (!this.served.has(id)) await sweepNamespace(this.redis, new Namespace(id));
      }
    }
    for (const id of live) if (!this.served.has(id)) this.serve(id);
    for (const id of [...this.served.keys()]) if (!live.has(id)) await this.stopServing(id, true);
  }

  /** Serves a client's shared task queue, and the queue of the tasks it places on this worker (./placement). */
  private serve(clientId: string): void {
    const namespace = new Namespace(clientId);
    const store = new RedisStore(this.redis, namespace, { partSize: this.options.partSize });
    const served: ServedClient = { namespace, store, queues: [] };
    served.queues = [TASK_QUEUE, workerTaskQueue(this.name)].map((name) => this.openQueue(served, name));
    this.served.set(clientId, served);
  }

  private openQueue(client: ServedClient, name: string): ServedQueue {
    const worker: QueueWorker<TaskJobData, void> = new QueueWorker<TaskJobData, void>(name, (job) => this.takeJob(client, served, job), {
      // This worker's own connection: results are stored on it, and BullMQ completes their jobs
      // after them on it (it opens a connection of its own for its blocking waits).
      connection: this.redis,
      prefix: client.namespace.queuePrefix,
      name: this.name,
      concurrency: this.options.nthreads,
      lockDuration: this.options.lockDuration * 1000,
      stalledInterval: this.options.stalledInterval * 1000,
      maxStalledCount: this.options.maxStalledCount,
      // Failed jobs stay (the jobs' own option): the client reads why, then removes them.
      removeOnComplete: { count: 0 },
    });
    const served: ServedQueue = { worker, backlog: false };
    // Failures decided by BullMQ rather than by a task (a job that stalled too often) reach the
    // client as the job left in the queue's failed set (see TaskQueue.endedElsewhere).
    worker.on("error", (error) => {
      if (this.closing === undefined) this.core.warn(`task queue of client ${client.namespace.clientId}: ${error.message}`);
    });
    worker.on("drained", () => {
      served.backlog = false;
      worker.concurrency = this.jobsAtOnce(served);
    });
    if (this.core.status === "paused") this.pauseQueue(worker, true);
    return served;
  }

  /**
   * Jobs taken at once: one per thread while tasks are long, or come one at a time (a chain: each
   * look for a further job would cost Redis commands and find none). When tasks are so short that
   * the trips to Redis between jobs would leave the threads waiting, and more are queued, as many
   * as a thread takes in one batch (TaskRunner.capacity: about half a millisecond of work), at
   * most MAX_JOBS_PER_THREAD so that long tasks following short ones do not pile up here while
   * other workers idle.
   */
  private jobsAtOnce(queue: ServedQueue): number {
    if (!queue.backlog) return this.options.nthreads;
    return Math.max(this.options.nthreads, Math.min(this.runner.capacity, this.options.nthreads * MAX_JOBS_PER_THREAD));
  }

  private async stopServing(clientId: string, sweep: boolean): Promise<void> {
    const client = this.served.get(clientId);
    if (client === undefined) return;
    this.served.delete(clientId);
    this.kept.dropClient(clientId);
    this.inputs.forgetClient(clientId);
    await this.closeQueues(client.queues.map((queue) => queue.worker));
    // The queue may have touched its keys since the client swept them; the client is gone, so nothing else will.
    if (sweep) await sweepNamespace(this.redis, client.namespace);
  }

  // ---- Running tasks ----------------------------------------------------------------------

  /**
   * Runs a job, its outcome on the client's outcome stream before BullMQ completes the job; while
   * the client queues more jobs than threads, takes further jobs before this one is done.
   */
  private async takeJob({ store }: ServedClient, queue: ServedQueue, job: Job<TaskJobData, void>): Promise<void> {
    if ((job.data.queuedWith ?? 1) > this.options.nthreads) queue.backlog = true;
    queue.worker.concurrency = this.jobsAtOnce(queue);
    try {
      return await this.runJob(store, queue.backlog, job);
    } finally {
      // The threads' batch size follows the tasks' durations.
      queue.worker.concurrency = this.jobsAtOnce(queue);
    }
  }

  private async runJob(store: RedisStore, backlog: boolean, job: Job<TaskJobData, void>): Promise<void> {
    const data = job.data;
    const base = { jobId: job.id ?? "", key: data.key, worker: this.name };
    const held = this.held.hold();
    this.jobsInHand++;
    try {
      await this.execute(store, data, base, taskJobNumber(base.jobId), held, backlog);
    } catch (error) {
      // Redis failed us midway, or the task's data could not be read: the task errs, naming this
      // worker. Should Redis not take that either, the job fails, and the client hears of it so.
      await this.pushFailure(store, base, data.name, error);
    } finally {
      held.release();
      if (--this.jobsInHand === 0) for (const resume of this.waitingForNoJobs.splice(0)) resume();
    }
  }

  /**
   * Gets the inputs, runs the task and stores its result (a big one stays here, see ./held), its
   * outcome going on the client's outcome stream in the same script (./store). A re-run (its job
   * stalled on a worker that died or froze, which never completed it) runs the task again: that
   * run may have stored its result, which then stays, and the outcome says so.
   */
  private async execute(
    store: RedisStore,
    data: TaskJobData,
    base: OutcomeBase,
    jobNumber: number,
    held: { add(bytes: number): void },
    backlog: boolean,
  ): Promise<void> {
    let gathered: TaskInputs;
    this.fetching++;
    try {
      gathered = await this.inputs.gather(store, data.inputs, new Map(data.carried));
    } finally {
      this.fetching--;
    }
    if (gathered.missing.length > 0) return this.report(store, data.name, { ...base, status: "missing", missing: gathered.missing });
    const { inputs } = gathered;
    held.add(gathered.bytes);
    const task = "frames" in data.task ? decodeInlineTask(data.task.frames) : ((await store.getTask(data.key, data.task.stored)) as WireTask);
    const startstops: StartStop[] = [...gathered.startstops];
    const metrics: MetricRecord[] = [...gathered.metrics];
    const execute = new InstructionLedger();
    // Dask's worker reads a task's inputs from its memory, where fetched ones landed first.
    if (inputs.size > 0) {
      execute.add("memory-read", inputs.size, "count");
      execute.add("memory-read", gathered.bytes, "bytes");
    }
    const executeMetrics = (coarse?: string): MetricRecord[] => this.digest(["execute", data.spanId, data.prefix], execute.finalize(coarse));

    const functions = this.gate.admit(data.functions, `task ${data.name}`);
    if (functions instanceof WorkerCannotRunError) {
      this.core.warn(`refused ${functions.message}`);
      return this.report(store, data.name, { ...base, status: "erred", error: packError(functions), thread: 0, startstops, metrics: [...metrics, ...executeMetrics("failed")] });
    }
    // A tiny task runs here rather than on a thread while it is the only one (a chain's step);
    // tasks queued together keep the threads busy in batches instead.
    const inline = !backlog && this.executing === 0 && this.inlinePolicy.wants(data.prefix, inputs);
    this.executing++;
    let run: TaskRun;
    try {
      run = await new Promise<TaskRun>((resolve) => {
        const request = { key: data.key, name: data.name, task, inputs, givenInputs: gathered.given };
        if (inline) {
          this.inline.run(request, functions, resolve);
          return;
        }
        this.runner.defineFunctions(functions);
        this.runner.run(request, resolve);
      });
    } finally {
      this.executing--;
    }
    this.executed++;
    if (run.ranOnThread) this.inlinePolicy.ran(data.prefix, run.end - run.start);
    const thread = Math.max(0, run.thread);
    // A task whose thread died before reporting has no compute phase to show.
    const compute = this.core.computePhase(run);
    if (compute !== undefined) startstops.push(compute);
    if (!run.ok) {
      return this.report(store, data.name, { ...base, status: "erred", error: run.error!, thread, startstops, metrics: [...metrics, ...executeMetrics("failed")] });
    }
    for (const [activity, value, unit] of run.metrics) execute.add(activity, value, unit);
    // Dask's nbytes is the value's size in memory (what the local workers report), not its stored size.
    const nbytes = sizeOf(run.value);
    const finished = { ...base, status: "finished", nbytes, thread, startstops, transfer: gathered.transfer } as const;
    if (this.listener !== undefined && nbytes > (data.holdAbove ?? this.options.holdAbove)) {
      const type = typeName(run.value);
      const clientId = store.namespace.clientId;
      const disk = this.clock.now();
      this.kept.keep(clientId, data.key, jobNumber, run.value, nbytes, type, execute);
      if (this.kept.isSpilled(clientId, data.key)) startstops.push(this.core.phase("disk-write", disk, this.clock.now()));
      const entry: OutcomeEntry = { ...finished, type, metrics: [...metrics, ...executeMetrics()], heldAt: this.listener.address };
      this.holdWrites();
      const { result } = store.publishLocation(data.key, { holder: this.name, address: this.listener.address, nbytes, type }, jobNumber, "", encodeOutcome(entry));
      // Another run's record stands (or the client left): this copy is nobody's.
      const recorded = result.then((outcome) => outcome !== "published" && this.kept.drop(clientId, [data.key]));
      return this.issued(store, recorded, base, data.name);
    }
    // Held here until stored (a kept one counts among the kept values instead).
    held.add(nbytes);
    const serializing = this.clock.now();
    const value = encodeStored(run.value);
    const serialized = this.clock.now();
    const { info } = value;
    execute.add("serialize", serialized - serializing, "seconds");
    this.core.transfers.sent({ start: this.toRedis(serializing), stop: this.toRedis(serialized), who: "redis", keys: keySizes([[data.key, info.nbytes]]), wireBytes: info.nbytes, types: [info.type] });
    const entry: OutcomeEntry = {
      ...finished,
      type: info.type,
      metrics: [...metrics, ...executeMetrics()],
      frames: info.nbytes <= CARRIED_VALUE_BYTES ? value.frames : undefined,
    };
    this.holdWrites();
    const { issued, result } = store.publishResult(data.key, value, jobNumber, encodeOutcome(entry));
    // A value too large for one command is in, and its outcome out, before the job completes.
    if (issued) return this.issued(store, result, base, data.name);
    await result;
  }

  /** A task's outcome with no value to store, on the client's outcome stream (see issued). */
  private report(store: RedisStore, name: string, entry: OutcomeEntry): void {
    this.holdWrites();
    this.issued(store, store.pushOutcome(encodeOutcome(entry)), entry, name);
  }

  /**
   * A task's result (or its location, or no value) and its outcome, written in one command. BullMQ
   * completes the job on the same connection after it (see serve), so the task needs no round
   * trip of its own: Redis runs the two in order, and they leave in one write (holdWrites). Should
   * that command fail, the job completes all the same, with no outcome for the client to wait
   * on: the task's failure goes out instead (the client counts a job's first outcome only).
   */
  private issued(store: RedisStore, written: Promise<unknown>, base: OutcomeBase, name: string): void {
    written.catch((error: Error) => {
      this.core.warn(`cannot store the outcome of ${name}: ${error.message}`);
      this.pushFailure(store, base, name, error).catch(() => {});
    });
  }

  /** Task `name` erred on this worker with `error` (before, while or after it ran): its outcome says so. */
  private pushFailure(store: RedisStore, base: OutcomeBase, name: string, error: unknown): Promise<PublishOutcome> {
    const reason = error instanceof Error ? error.message : String(error);
    const failure = packError(new Error(`Task ${name} failed on worker ${this.name} before or after it ran: ${reason}`));
    return store.pushOutcome(encodeOutcome({ ...base, status: "erred", error: failure, thread: 0, startstops: [], metrics: [] }));
  }

  /**
   * Holds this worker's writes to Redis until the callbacks of this turn of the event loop have
   * run: a task's result and BullMQ's completion of its job (issued once the job's processor
   * returns, after a few promise steps) then leave in one write, which wakes Redis once rather
   * than twice. Commands stay in order; on a busy machine each wake-up costs a context switch.
   */
  private holdWrites(): void {
    // ioredis's current socket is `stream` (see RedisTransport.applyKeepAlive).
    const socket = (this.redis as unknown as { stream?: Socket }).stream;
    if (this.heldSocket !== undefined || socket === undefined) return;
    this.heldSocket = socket;
    socket.cork();
    setImmediate(() => {
      this.heldSocket = undefined;
      socket.uncork();
    });
  }

  /** Digests `metrics` under `prefix` here (for `client.run`), and returns them as records for the task's outcome. */
  private digest(prefix: readonly ["execute", string, string] | readonly ["gather-dep"], metrics: readonly Metric[]): MetricRecord[] {
    this.core.digests.addAll(prefix, metrics);
    if (prefix[0] === "execute") {
      const [context, span, taskPrefix] = prefix;
      return metrics.map(([activity, value, unit]) => ({ context, span, prefix: taskPrefix, activity, unit, value }));
    }
    return metrics.map(([activity, value, unit]) => ({ context: "gather-dep", activity, unit, value }));
  }

  /** A time on this worker's clock, on the Redis server's. */
  private toRedis(workerSeconds: number): number {
    return this.clock.toScheduler(workerSeconds);
  }

  // ---- Requests (client.run) -----------------------------------------------------------------

  /** A client's request on this worker's channel; the reply goes on that client's reply stream. */
  private async answer(text: string): Promise<void> {
    let request: WorkerRequest;
    try {
      request = JSON.parse(text) as WorkerRequest;
    } catch {
      this.core.warn("an unreadable request on its channel was ignored");
      return;
    }
    const { message } = request;
    if (message.op === "free-keys") return this.kept.drop(request.client, message.keys);
    if (message.op === "publish-held") return this.publishKept(request.client, message.keys);
    if (message.op === "acquire-held") return acquireHeld(this.handoff, request.client, message);
    const reply =
      message.op === "profile"
        ? await this.core.profileReply(message)
        : message.op === "run"
          ? await this.run(message)
          : await this.core.pluginReply(message, (plugin) => {
              const admitted = this.gate.admitPlugin(plugin);
              if (admitted instanceof WorkerCannotRunError) {
                this.core.warn(`refused ${admitted.message}`);
                throw admitted;
              }
              return admitted;
            });
    const store = this.served.get(request.client)?.store ?? new RedisStore(this.redis, new Namespace(request.client), { partSize: this.options.partSize });
    let encoded: Buffer;
    try {
      encoded = encodeReply({ status: "reply", worker: this.name, reply } satisfies ReplyEntry);
    } catch (error) {
      encoded = encodeReply({ status: "reply", worker: this.name, reply: this.core.unsendable(reply.requestId, error) });
    }
    await store.pushReply(encoded).catch((error: Error) => this.core.warn(`cannot answer client ${request.client}: ${error.message}`));
  }

  /**
   * Puts values it keeps for `clientId` into Redis, for a peer (or the client) that cannot reach
   * its data listener (./fallback); a value it no longer has loses its location, so that the asker
   * finds it missing rather than waiting.
   */
  private async publishKept(clientId: string, keys: readonly string[]): Promise<void> {
    const store = this.served.get(clientId)?.store;
    if (store === undefined) return;
    const published = await this.kept.publish(store, keys, this.name).catch((error: Error) => {
      this.core.warn(`cannot publish kept values of client ${clientId} to Redis: ${error.message}`);
      return 0;
    });
    if (published > 0 && !this.toldPublished) {
      this.toldPublished = true;
      this.core.warn(`a peer of client ${clientId} cannot reach this worker's data listener: the values it asks for go through Redis (further ones are not logged)`);
    }
  }

  /** Runs a `client.run` function with this worker's view, if this worker allows the function. */
  private async run(message: RunMessage): Promise<RunReplyMessage> {
    const functions = this.gate.admit([[0, message.fn]], "client.run");
    if (functions instanceof WorkerCannotRunError) {
      this.core.warn(`refused ${functions.message}`);
      return { op: "run-reply", requestId: message.requestId, ok: false, error: packError(functions) };
    }
    return this.core.run(message, functions[0][1]);
  }

  /** Paused (memory past Dask's pause threshold, see ./held): it takes no more jobs until it resumes. */
  private setStatus(status: "running" | "paused"): void {
    this.core.status = status;
    for (const { queues } of this.served.values()) for (const queue of queues) this.pauseQueue(queue.worker, status === "paused");
  }

  /** Closes BullMQ queue workers; one still closing QUEUE_CLOSE_GRACE_SECONDS after this worker's last job is left behind (see ./queue-close). */
  private async closeQueues(queues: readonly QueueWorker<TaskJobData, void>[]): Promise<void> {
    const open = queues.filter((queue) => !this.leftBehind.has(queue));
    const noJobs = this.jobsInHand === 0 ? Promise.resolve() : new Promise<void>((resume) => this.waitingForNoJobs.push(resume));
    if (!(await closeQueueWorkers(open, noJobs))) {
      for (const queue of open) this.leftBehind.add(queue);
      this.core.warn(`a task queue was still closing ${QUEUE_CLOSE_GRACE_SECONDS} s after the last job here (BullMQ waiting on its Redis connection): left behind`);
    }
  }

  private pauseQueue(queue: QueueWorker<TaskJobData, void>, pause: boolean): void {
    // Jobs running go on; only the taking of new ones stops.
    if (pause) void queue.pause(true).catch(() => {});
    else queue.resume();
  }

  /** Tasks handed to the runner beyond one per thread wait there for a thread: Dask's "ready", not "executing". */
  private taskCounts(): Record<string, number> {
    const executing = Math.min(this.executing, this.options.nthreads);
    return { executing, ready: this.executing - executing, fetching: this.fetching };
  }

  // ---- Heartbeats and leaving ---------------------------------------------------------------

  private async heartbeat(): Promise<void> {
    try {
      await observeRedisTime(this.redis, this.clock);
      const metrics = this.core.heartbeatMetrics();
      await this.registration.beat({ time: this.clock.schedulerNow(), seq: ++this.seq, status: this.core.status, clockOffset: this.clock.offset, metrics });
    } catch (error) {
      // Redis unreachable: the connection's reconnection is logged; the next beat tries again.
      void error;
    }
  }

  /** Stops taking jobs, lets running ones finish, hands over what it keeps, leaves the registry and disconnects. */
  close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  /**
   * Redis stayed silent for the whole death timeout: leaves without it (nothing can be handed over
   * or stored there), freeing everything here. Its jobs' locks lapse, so other workers take them
   * over once Redis is back, and clients compute again what it kept.
   */
  private async abandon(error: RedisConnectionLostError): Promise<void> {
    if (this.closing !== undefined) return;
    this.core.warn(`${error.message}: leaving, its running tasks and kept results given up`);
    this.closing = (async () => {
      this.core.status = "closing";
      clearInterval(this.heartbeatTimer);
      // First, so that whatever BullMQ still sends fails at once instead of waiting for Redis.
      this.subscriber.disconnect();
      this.redis.disconnect();
      // Forced (their jobs wait for Redis, which is gone) and bounded (see ./queue-close).
      const queues = [...this.served.values()].flatMap(({ queues }) => queues.map(({ worker }) => ({ close: () => worker.close(true).catch(() => {}) })));
      await closeQueueWorkers(queues, Promise.resolve());
      await this.listener?.close();
      this.freeLocalResources();
      this.givenUpWith(error);
    })();
    await this.closing;
  }

  private freeLocalResources(): void {
    this.inputs.close();
    this.kept.close();
    this.core.close();
    this.runner.close();
    this.core.status = "closed";
  }

  private async closeNow(): Promise<void> {
    this.core.status = "closing";
    await this.core.plugins.teardownAll();
    // This heartbeat tells clients it is leaving: they place no more tasks on it. It beats on while it hands over.
    this.beating = this.beating.then(() => this.heartbeat());
    // The shared queue first, then its own (see serve), whose tasks run here before it hands over what it keeps.
    const queues = [...this.served.values()].map(({ namespace, queues: [shared, own] }) => ({
      namespace,
      shared: { close: () => this.closeQueues([shared.worker]) },
      own: { close: () => this.closeQueues([own.worker]) },
    }));
    await retire(this.handoff, queues, this.options.handoffTimeout);
    clearInterval(this.heartbeatTimer);
    await this.beating;
    await this.refreshing;
    await Promise.all([...this.served.keys()].map((id) => this.stopServing(id, false)));
    await this.registration.leave().catch(() => {});
    await this.listener?.close();
    this.freeLocalResources();
    await Promise.all([this.subscriber.quit().catch(() => {}), this.redis.quit().catch(() => {})]);
    this.core.warn("closed");
  }
}
