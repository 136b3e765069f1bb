// The client side of a Redis cluster, as the scheduler's transport with "queue" placement: ready
// tasks become BullMQ jobs (lowest priority first) that any worker takes (./task-queue); a worker
// adds each task's outcome to the client's outcome stream, which the outcome reader (./outcomes)
// reports as worker messages; results stay in the client's namespace until the scheduler forgets
// them. Jobs that end without an outcome (failed by BullMQ) are found as the registry is read.
// client.run and profiles travel as requests (./requests). This file finds workers in the
// registry (./registry), reports them as they join and leave, and watches the connection.
//
// Faults: Redis not answering (connection lost and being retried, or the server frozen) for
// `connectionLostTimeout` seconds makes the transport fail (events.failed) with an error naming
// the server; after a reconnection it checks that Redis still holds the client's data, and fails
// naming the lost keys if it was restarted empty. Tasks wait in the queue while no worker is
// connected, with a notice after `noWorkersTimeout` seconds.

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import type { FromWorker, ToWorker, WorkerAddress } from "../messages";
import type { Transport, TransportEvents } from "../scheduler/transport";
import type { FnSpec } from "../../execution/wire";
import { WorkerClock } from "../worker/clock";
import { observeRedisTime } from "./clock";
import { PASSWORD_VARIABLE, type RedisTarget, redisTargetOf } from "./address";
import { connectRedis } from "./connection";
import { Namespace } from "./keys";
import { OutcomeReader } from "./outcomes";
import { DeadWorkers, REDIS_PROTOCOL, type RegisteredWorker, clientConnectionName, registerClient, registeredWorkers, unregisterClient, workersListening } from "./registry";
import { WorkerRequests } from "./requests";
import { HolderReader } from "./holders";
import { RedisStore } from "./store";
import { type QueuedTask, TaskQueue } from "./task-queue";
import { RedisConnectionLostError, RedisDataLostError, RedisProtocolError } from "./errors";
import { DEFAULT_PEER_TIMEOUT, type RedisTransportOptions } from "./options";

/** Longest wait for Redis while closing, ms. */
const CLOSE_TIMEOUT_MS = 5000;

/** How often, and how far apart, a request to a worker not listening (yet) is sent again. */
const REQUEST_RETRIES = 20;
const REQUEST_RETRY_MS = 100;

export class RedisTransport implements Transport {
  readonly placement = "queue" as const;
  readonly description: string;
  readonly namespace: Namespace;
  readonly store: RedisStore;
  /** This process's offset from Redis's clock: workers' times are converted with it. */
  private readonly clock = new WorkerClock();
  private readonly tasks: TaskQueue;
  private readonly requests: WorkerRequests;
  /** Reads results that workers keep, from those workers. */
  private readonly holders: HolderReader;
  private readonly workers = new Map<string, RegisteredWorker>();
  /** Which registered workers' processes died (./registry DeadWorkers). */
  private readonly deadWorkers: DeadWorkers;
  private events: TransportEvents | undefined;
  /** Messages for the scheduler, as from `worker` (outcomes, replies, tasks that could not be queued). */
  private readonly report = (worker: WorkerAddress, messages: readonly FromWorker[]): void => this.events?.received(worker, messages);
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
    this.requests = new WorkerRequests(redis, clientId, this.description, this.clock, this.report);
    this.deadWorkers = new DeadWorkers(redis);
    this.tasks = new TaskQueue(
      redis,
      this.store,
      this.namespace,
      this.report,
      () => this.stopped,
      (worker, keys) => this.requests.free(worker, keys),
      options.holdAbove,
      // A worker leaving (SIGTERM) gets no more tasks of its own.
      (worker) => (this.workers.get(worker)?.beat?.status === "closing" ? undefined : this.workers.get(worker)?.info.nthreads),
    );
    this.holders = new HolderReader(redis, this.store, options.tls, this.report, (message) => this.notice(message), options.peerTimeout ?? DEFAULT_PEER_TIMEOUT);
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
    const reader = new OutcomeReader(this.blocking, this.namespace, this.tasks, this.requests, this.clock, this.report, () => this.stopped, (error) => (this.lastError = error));
    void reader.run();
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
      if (message.op === "define-functions") this.tasks.defineFunctions(message.functions);
      else if (message.op === "run" || message.op === "plugin-add" || message.op === "plugin-remove") this.requests.run(worker, message);
      else if (message.op === "profile") this.requests.profile(worker, message);
    }
  }

  /**
   * Where specs of function ids not defined by messages are found: the scheduler's FunctionTable
   * (with queue placement the scheduler sends no define-functions; every job carries its specs).
   */
  resolveFunctionsWith(table: { spec(id: number): FnSpec }): void {
    this.tasks.resolveFunctionsWith(table);
  }

  /** Puts tasks whose inputs are all in the store on the queue, lowest priority first. */
  enqueue(tasks: readonly QueuedTask[]): void {
    this.checkUsable();
    this.tasks.enqueue(tasks);
  }

  /** The scheduler no longer wants these keys: their jobs leave the queue (unless running) and their values the store. */
  forget(keys: readonly string[]): void {
    if (this.stopped) return;
    this.tasks.forget(keys);
  }

  /**
   * Values of keys in the store, or from the workers that keep them; keys not there are absent
   * from the map (those whose worker is gone are reported lost, and recomputed).
   */
  async fetch(keys: readonly string[]): Promise<ReadonlyMap<string, unknown>> {
    this.checkUsable();
    const { values, located } = await this.tasks.fetch(keys);
    if (located.size > 0) for (const [key, value] of await this.holders.read(located)) values.set(key, value);
    return values;
  }

  // ---- The registry and the connection -------------------------------------------------------

  /** Every poll interval: the transport fails if Redis has not answered for too long; otherwise the registry is read. */
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

  /**
   * Reads the registry: joins, leaves, heartbeats; the no-worker notice; whether Redis still holds
   * our data; jobs that ended without an outcome.
   */
  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    try {
      const [found, alive] = await Promise.all([registeredWorkers(this.redis), this.redis.exists(this.namespace.alive)]);
      this.lastAnswer = performance.now();
      if (alive === 0) return this.fail(this.dataLost());
      await observeRedisTime(this.redis, this.clock);
      this.updateWorkers(this.deadWorkers.living(found, await workersListening(this.redis, found.map(({ info }) => info.name))));
      this.checkWaiting();
      const failed = await this.tasks.endedElsewhere();
      if (failed.length > 0 && !this.stopped) this.report("redis", failed);
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
      if (worker.info.protocol !== REDIS_PROTOCOL) {
        const { host, pid } = worker.info;
        return this.fail(new RedisProtocolError(this.description, name, worker.info.protocol, REDIS_PROTOCOL, `host ${host}, pid ${pid}`));
      }
      seen.add(name);
      const known = this.workers.get(name);
      this.workers.set(name, worker);
      if (known === undefined || known.info.started !== worker.info.started) {
        if (known !== undefined) this.left(name, "it restarted");
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
          ...(info.dataAddress === undefined ? {} : { dataAddress: info.dataAddress }),
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
      this.left(name, this.deadWorkers.dead(name) ? "its connections to Redis closed: its process died" : "it left, or stopped heartbeating (its registration in Redis expired)");
    }
  }

  /**
   * Worker `name` is gone (or restarted): the results it kept went with it, and are recomputed if
   * still needed, unless it handed them over as it left (./handoff: Redis says where they are
   * now); the tasks placed on it (for those results) are queued again once they are.
   */
  private left(name: string, reason: string): void {
    this.events?.workerLeft(name, reason);
    const placed = this.tasks.workerLeft(name);
    void this.tasks.relocate(name).then((lost) => {
      // A task placed there for an input that was handed over runs elsewhere, its input kept.
      const gone = new Set(lost);
      const messages: FromWorker[] = placed.map(({ task, input }) => (gone.has(input) ? { op: "missing-data", key: input, errantWorker: name, task } : { op: "reschedule", key: task }));
      messages.push(...lost.map((key) => ({ op: "missing-data", key, errantWorker: name }) as const));
      if (messages.length > 0 && !this.stopped) this.events?.received("redis", messages);
    });
  }

  /** A Redis-clock time on this process's clock. */
  private fromRedis(time: number): number {
    return time + this.clock.offset;
  }

  private checkWaiting(): void {
    if (this.workers.size > 0 || this.tasks.pendingCount === 0) {
      if (this.noticeGiven && this.workers.size > 0) this.notice(`A worker joined ${this.description}; the ${this.tasks.pendingCount} waiting task(s) are running`);
      this.noWorkersSince = undefined;
      this.noticeGiven = false;
      return;
    }
    const time = performance.now() / 1000;
    this.noWorkersSince ??= time;
    if (!this.noticeGiven && time - this.noWorkersSince >= this.options.noWorkersTimeout) {
      this.noticeGiven = true;
      this.notice(
        `No tsdask worker is connected to ${this.description}: ${this.tasks.pendingCount} task(s) wait in its queue. ` +
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
    this.tasks.queue.on("error", (error) => (this.lastError = error));
    for (const connection of [this.redis, this.blocking]) {
      connection.on("error", (error: Error) => (this.lastError = error));
      connection.on("ready", () => void this.poll());
      connection.on("connect", () => this.applyKeepAlive(connection));
    }
  }

  private dataLost(): RedisDataLostError {
    return new RedisDataLostError(this.description, this.tasks.names());
  }

  private fail(error: Error): void {
    if (this.stopped) return;
    this.failure = error;
    this.closing = this.shutDown();
    this.events?.failed?.(error);
  }

  /** Failed or closing: nothing more is queued, read or reported. */
  private get stopped(): boolean {
    return this.failure !== undefined || this.closing !== undefined;
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
    this.requests.close();
    this.holders.close();
    this.tasks.clear();
    // Only while Redis answers, and not for long: otherwise the workers sweep the namespace once
    // they notice this client's connections are gone.
    if (this.redis.status === "ready") {
      let timer: NodeJS.Timeout | undefined;
      const cleanUp = async (): Promise<void> => {
        await this.tasks.added();
        await unregisterClient(this.redis, this.clientId);
        await this.store.sweep();
      };
      const giveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([cleanUp().catch(() => {}), giveUp]);
      clearTimeout(timer);
    }
    this.blocking.disconnect();
    this.redis.disconnect();
    await this.tasks.close();
  }
}

