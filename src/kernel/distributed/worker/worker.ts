// A cluster worker process at run time: it registers with the scheduler, feeds the scheduler's
// messages and the outcomes of its tasks and fetches to the state machine (./state), and carries
// out what the state machine decides — tasks on threads (./execute), fetches from peers
// (./peers), data in the store with spilling (./store). It serves peers' get-data requests,
// heartbeats with its metrics, watches its memory, and removes its folder when it closes. What
// any worker has around its tasks (records, profiler, plugins, the view) is ./core's.

import { mkdirSync, rmSync } from "node:fs";
import type { Server } from "node:net";
import { hostname } from "node:os";
import { now as machineNow } from "../../clock";
import { nbytes as sizeOf } from "../../metrics/nbytes";
import { findUncloneable } from "../../execution/transfer";
import type { StartStop, WorkerStatus } from "../../../protocol/records";
import { checkProfilingOptions } from "../../profiling/hub";
import { decodeBatch, encodeBatches } from "../comm/batches";
import { Connection, listen } from "../comm/connection";
import { encodeValue } from "../comm/frames";
import {
  type FromWorker,
  type GatherMessage,
  type GetDataRequest,
  type HeartbeatReplyMessage,
  RETURNED_RESULT_BYTES,
  type RunMessage,
  type ToWorker,
  type WorkerAddress,
  type WorkerStartConfig,
} from "../messages";
import { WorkerClock, simulatedClockOffset } from "./clock";
import { WorkerCore } from "./core";
import { InstructionLedger, ExecuteLedger } from "./digests";
import { type RunningTask, type TaskRun, TaskRunner, failedRun } from "./execute";
import { MONITOR_INTERVAL_MS, memoryThresholds, spillTarget } from "./memory";
import { MemoryMonitor } from "./monitor";
import { computeFailedLine } from "./logs";
import { keyRepr, typeName } from "./names";
import { keySizes } from "./transfers";
import { type FetchResult, PeerClient, serveGather, serveGetData } from "./peers";
import { EventFeed, WorkerStateMachine, type WorkerEvent, type WorkerInstruction, type WorkerTask } from "./state";
import { DataStore, type StoreMeter } from "./store";

/** Seconds between heartbeats until the scheduler's first reply says otherwise (Dask: 0.5 s for small clusters). */
const DEFAULT_HEARTBEAT_INTERVAL = 0.5;

export class Worker {
  readonly address: WorkerAddress;
  /** Its clock, records, profiler, plugins and view: what any worker has around its tasks. */
  private readonly core: WorkerCore;
  private readonly clock: WorkerClock;
  private readonly state: WorkerStateMachine;
  private readonly store: DataStore;
  private readonly peers = new PeerClient();
  /** TSDASK_METRICS=off: tasks digest nothing (to measure what metrics cost, bench/cluster-fpm.ts). */
  private readonly metricsOn = process.env.TSDASK_METRICS !== "off";
  /** Spills the store and pauses the worker on process memory (Dask's memory thresholds). */
  private readonly monitor: MemoryMonitor;
  private readonly runner: TaskRunner;
  private readonly running = new Map<string, RunningTask>();
  private server: Server | undefined;
  private scheduler: Connection | undefined;
  private readonly peerConnections = new Set<Connection>();
  private outbox: FromWorker[] = [];
  private flushScheduled = false;
  private readonly feed: EventFeed;
  private heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
  /** Worker-clock time of the heartbeat awaiting its reply. */
  private heartbeatSentAt: number | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private monitorTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  /** Told when the worker has closed, once it has started. */
  private onClosed: (reason: string) => void = () => {};

  /** Starts a worker: its threads, its listener, its registration with the scheduler. */
  static async start(config: WorkerStartConfig, onClosed: (reason: string) => void = () => {}): Promise<Worker> {
    checkConfig(config);
    mkdirSync(config.localDirectory, { recursive: true, mode: 0o700 });
    const worker = new Worker(config);
    try {
      const globals = await worker.runner.ready();
      worker.server = await listen(config.listenPath, (connection) => worker.servePeer(connection));
      const scheduler = await Connection.connect(config.schedulerPath);
      worker.scheduler = scheduler;
      scheduler.on("message", (batch) => worker.onSchedulerBatch(batch));
      scheduler.on("close", (error) => void worker.close(`the scheduler connection closed${error ? ` (${error.message})` : ""}`));
      // The scheduler answers the registration as a heartbeat: its reply gives the first clock offset.
      worker.heartbeatSentAt = worker.clock.now();
      worker.send({
        op: "register",
        address: worker.address,
        name: config.name,
        host: hostname(),
        pid: process.pid,
        nthreads: config.nthreads,
        memoryLimit: config.memoryLimit,
        globals,
        now: worker.heartbeatSentAt,
        memory: process.memoryUsage.rss(),
      });
      worker.core.noteStart();
      worker.monitorTimer = setInterval(() => worker.monitor.check(), MONITOR_INTERVAL_MS);
      worker.monitorTimer.unref();
      worker.onClosed = onClosed;
    } catch (error) {
      await worker.close(`it could not start: ${(error as Error).message}`);
      throw error;
    }
    return worker;
  }

  private constructor(private readonly config: WorkerStartConfig) {
    this.address = `unix://${config.listenPath}`;
    this.clock = new WorkerClock(simulatedClockOffset(config.clockOffset));
    const thresholds = memoryThresholds(config.memoryThresholds);
    const limited = config.memoryLimit > 0 && Number.isFinite(config.memoryLimit);
    this.store = new DataStore(config.localDirectory, spillTarget(config.memoryLimit, thresholds));
    this.state = new WorkerStateMachine({
      address: this.address,
      nthreads: config.nthreads,
      transferBytesLimit: limited ? 0.1 * config.memoryLimit : Infinity,
    });
    this.feed = new EventFeed(
      this.state,
      (instruction) => this.carryOut(instruction),
      () => (this.state.slots = this.runner.capacity),
      () => this.state.recordTransitions && this.core.plugins.transitions(this.state.takeTransitions()),
    );
    // Last: nothing above may fail once threads exist.
    this.runner = new TaskRunner(config.nthreads, this.metricsOn);
    this.core = new WorkerCore({
      identity: { address: this.address, name: config.name, nthreads: config.nthreads, memoryLimit: config.memoryLimit, localDirectory: config.localDirectory },
      clock: this.clock,
      profile: config.profile,
      holdings: {
        layout: () => this.store.layout(),
        has: (key) => this.store.has(key),
        get: (key) => this.store.get(key),
        nbytes: (key) => this.store.nbytesOf(key),
        held: () => ({ managed: this.store.managedBytes, spilled: this.store.spilledBytes, spilledFileBytes: this.store.spilledDiskBytes }),
        reportedResultBytes: () => this.state.reportedResultBytes(),
        tasks: () => this.state.taskCounts(),
        executedCount: () => this.state.executedCount,
      },
      digestsInHeartbeats: true,
      print: (text) => process.stderr.write(`tsdask worker ${config.name} (${this.address}): ${text}\n`),
      watchTransitions: (on) => (this.state.recordTransitions = on),
    });
    this.monitor = new MemoryMonitor({
      store: this.store,
      memoryLimit: config.memoryLimit,
      thresholds,
      digests: this.core.digests,
      status: () => (this.closing === undefined ? this.core.status : "closing"),
      setStatus: (status) => this.setStatus(status),
      note: (line) => this.core.note("INFO", line),
    });
  }

  // ---- Messages from the scheduler -------------------------------------------------------------

  private onSchedulerBatch(batch: unknown): void {
    for (const message of decodeBatch(batch) as ToWorker[]) {
      try {
        this.onSchedulerMessage(message);
      } catch (error) {
        this.core.warn(`failed to handle a ${JSON.stringify(message?.op)} message: ${(error as Error).stack ?? error}`);
      }
    }
  }

  private onSchedulerMessage(message: ToWorker): void {
    switch (message.op) {
      case "compute-task":
        this.apply({ type: "compute-task", message });
        return;
      case "define-functions":
        this.runner.defineFunctions(message.functions);
        return;
      case "free-keys":
        this.apply({ type: "free-keys", keys: message.keys });
        return;
      case "steal-request":
        this.apply({ type: "steal-request", key: message.key, stimulusId: message.stimulusId });
        return;
      case "run":
        void this.runFunction(message);
        return;
      case "profile":
        void this.core.profileReply(message).then((reply) => this.send(reply));
        return;
      case "plugin-add":
      case "plugin-remove":
        void this.core.pluginReply(message).then((reply) => this.send(reply));
        return;
      case "heartbeat-reply":
        this.onHeartbeatReply(message);
        return;
      case "close":
        void this.close(`the scheduler asked it to (${message.reason})`);
        return;
      default:
        this.core.warn(`ignored a message with unknown op ${JSON.stringify((message as { op?: unknown }).op)}`);
    }
  }

  /** Feeds an event to the state machine and carries out its instructions (see EventFeed). */
  private apply(event: WorkerEvent): void {
    this.feed.apply(event);
  }

  private carryOut(instruction: WorkerInstruction): void {
    switch (instruction.op) {
      case "execute":
        this.execute(this.state.tasks.get(instruction.key)!);
        return;
      case "cancel-execute": {
        const name = this.state.tasks.get(instruction.key)?.name ?? keyRepr(instruction.key);
        this.running.get(instruction.key)?.cancel(new Error(`Task ${name} was cancelled: the scheduler released it`));
        return;
      }
      case "gather-dep":
        void this.gatherDep(instruction.worker, instruction.keys);
        return;
      case "release-data":
        this.store.delete(instruction.key);
        return;
      case "send":
        this.send(instruction.message);
        return;
    }
  }

  // ---- Running tasks -----------------------------------------------------------------------------

  private execute(task: WorkerTask): void {
    const opened = machineNow();
    const account = this.metricsOn ? new ExecuteLedger() : undefined;
    const inputs = new Map<string, unknown>();
    let diskRead: { start: number; stop: number } | undefined;
    const { key, spanId, prefix } = task;
    try {
      for (const dependency of task.dependencies) {
        if (this.store.isSpilled(dependency.key)) {
          const start = this.clock.now();
          inputs.set(dependency.key, this.store.get(dependency.key, account));
          diskRead = { start: diskRead?.start ?? start, stop: this.clock.now() };
        } else {
          inputs.set(dependency.key, this.store.get(dependency.key, account));
        }
      }
    } catch (error) {
      const reason = new Error(`Task ${task.name} cannot read its inputs on worker ${this.address}: ${(error as Error).message}`);
      this.taskDone(key, spanId, prefix, opened, account, diskRead, failedRun(reason, opened));
      return;
    }
    let finished = false;
    const request = { key, name: task.name, task: task.run!, inputs };
    const running = this.runner.run(
      request,
      (run) => {
        finished = true;
        this.taskDone(key, spanId, prefix, opened, account, diskRead, run);
      },
      opened,
    );
    if (!finished) this.running.set(key, running);
  }

  /**
   * A task's run is over: its result is stored, the state machine told, and (metrics on) what
   * it measured digested. `opened`: when `execute` began (machine clock, epoch s).
   */
  private taskDone(
    key: string,
    spanId: string,
    prefix: string,
    opened: number,
    account: ExecuteLedger | undefined,
    diskRead: { start: number; stop: number } | undefined,
    run: TaskRun,
  ): void {
    this.running.delete(key);
    const task = this.state.tasks.get(key);
    const cancelled = task?.state === "cancelled";
    const startstops: StartStop[] = [];
    if (diskRead !== undefined) startstops.push(this.core.phase("disk-read", diskRead.start, diskRead.stop));
    const compute = this.core.computePhase(run);
    if (compute !== undefined) startstops.push(compute);
    let event: WorkerEvent;
    let landedBytes = 0;
    if (run.ok) {
      const nbytes = sizeOf(run.value);
      const resultType = typeName(run.value);
      const keep = task !== undefined && (task.state === "executing" || (cancelled && task.dependents.size > 0));
      if (keep) {
        const start = this.clock.now();
        this.store.put(key, run.value, nbytes, resultType, account);
        if (this.store.isSpilled(key)) startstops.push(this.core.phase("disk-write", start, this.clock.now()));
        landedBytes = nbytes;
      }
      event = { type: "execute-success", key, nbytes, resultType, thread: run.thread, startstops };
    } else {
      event = { type: "execute-failure", key, error: run.error!, thread: run.thread, startstops };
      // Dask's worker logs every failed task (its key and exception, both the user's text).
      this.core.note("WARNING", computeFailedLine(key, run.error!));
    }
    // Digested before the state machine hears of it: the next task it starts is not this one's time.
    if (account !== undefined) {
      const elapsed = machineNow() - opened - run.queued;
      this.core.digests.addTask(spanId, prefix, account, run.metrics, elapsed, cancelled ? "cancelled" : run.ok ? undefined : "failed");
    }
    this.monitor.landed(landedBytes, () => this.apply(event));
  }

  // ---- Fetching from peers -----------------------------------------------------------------------

  private async gatherDep(worker: WorkerAddress, keys: readonly string[]): Promise<void> {
    const ledger = new InstructionLedger();
    let result: FetchResult;
    try {
      result = await this.peers.getData(worker, keys, this.address);
    } catch {
      this.core.digests.addAll(["gather-dep"], ledger.finalize("failed"));
      if (this.closing === undefined) this.apply({ type: "gather-dep-failure", worker, keys });
      return;
    }
    if (this.closing !== undefined) return;
    // Dask's gather-dep has no bytes of its own: they are in the transfer logs and the bandwidth.
    ledger.add("network", Math.max(0, result.stop - result.start - result.deserializeSeconds), "seconds");
    ledger.add("deserialize", result.deserializeSeconds, "seconds");
    const received: { key: string; nbytes: number; type: string }[] = [];
    const sizes: [keyId: string, bytes: number][] = [];
    const types = new Set<string>();
    let landedBytes = 0;
    for (const [key, value] of Object.entries(result.values)) {
      const nbytes = sizeOf(value);
      const type = typeName(value);
      received.push({ key, nbytes, type });
      sizes.push([key, nbytes]);
      types.add(type);
      // Only what is still awaited is kept; the rest was released while it travelled.
      if (this.state.tasks.get(key)?.state === "flight") {
        this.store.put(key, value, nbytes, type, ledger);
        landedBytes += nbytes;
      }
    }
    const start = this.clock.toScheduler(this.clock.fromMachine(result.start));
    const stop = this.clock.toScheduler(this.clock.fromMachine(result.stop));
    if (received.length > 0) this.core.transfers.received({ start, stop, who: worker, keys: keySizes(sizes), wireBytes: result.wireBytes, types: [...types] });
    // The reply is decoded once all its bytes are in, at the end of the fetch: that stretch is the grey "deserialize".
    const decoded = Math.max(start, stop - result.deserializeSeconds);
    const transfer: StartStop[] = [{ action: "transfer", start, stop: decoded, source: worker }];
    if (decoded < stop) transfer.push({ action: "deserialize", start: decoded, stop });
    this.monitor.landed(landedBytes, () => this.apply({ type: "gather-dep-success", worker, received, missing: result.missing, transfer }));
    // As Dask's: judged once the state machine has taken the values: a fetch none of whose keys
    // it kept (all released on the way) is "cancelled", one that brought none "missing".
    const kept = received.some(({ key }) => this.state.tasks.get(key)?.state === "memory");
    this.core.digests.addAll(["gather-dep"], ledger.finalize(kept ? undefined : received.length > 0 ? "cancelled" : "missing"));
  }

  // ---- Serving peers and the client --------------------------------------------------------------

  private servePeer(connection: Connection): void {
    this.peerConnections.add(connection);
    connection.setKeepsAlive(false);
    connection.on("close", () => this.peerConnections.delete(connection));
    connection.on("message", (message) => {
      try {
        this.onPeerMessage(message as GetDataRequest | GatherMessage, connection);
      } catch (error) {
        this.core.warn(`failed to serve a peer: ${(error as Error).stack ?? error}`);
        connection.destroy();
      }
    });
  }

  private onPeerMessage(message: GetDataRequest | GatherMessage, connection: Connection): void {
    switch (message?.op) {
      case "get-data":
        serveGetData(message, connection, { store: this.store, digests: this.core.digests, transfers: this.core.transfers, clock: this.clock });
        return;
      case "gather":
        serveGather(message, connection, this.store, this.meter("get-data"), (line) => this.core.warn(line));
        return;
      default:
        throw new Error(`unexpected message ${JSON.stringify((message as { op?: unknown } | null)?.op)}`);
    }
  }

  /** Runs a `client.run` function; a value the scheduler connection cannot carry is answered as an error. */
  private async runFunction(message: RunMessage): Promise<void> {
    const reply = await this.core.run(message);
    try {
      if (reply.ok) encodeValue(reply.value);
    } catch (error) {
      this.send(this.core.unsendable(message.requestId, error));
      return;
    }
    this.send(reply);
  }

  // ---- Sending to the scheduler ------------------------------------------------------------------

  /** Queues a message; the queue goes out as one batch at the end of this event-loop turn. */
  private send(message: FromWorker): void {
    const withResult = message.op === "task-finished" && this.state.tasks.get(message.key)?.returnsResult === true;
    this.outbox.push(withResult ? this.withResult(message) : message);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushNow);
  }

  /**
   * A task's report with its result, when that is small, in memory and can be written (a spilled
   * or unwritable one is left to gather, which reads it back or reports it missing).
   */
  private withResult(report: Extract<FromWorker, { op: "task-finished" }>): FromWorker {
    if (report.nbytes > RETURNED_RESULT_BYTES || !this.store.has(report.key) || this.store.isSpilled(report.key)) return report;
    const value = this.store.get(report.key);
    return findUncloneable(value) === undefined ? { ...report, value } : report;
  }

  private readonly flushNow = (): void => this.flush();

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.outbox;
    this.outbox = [];
    const scheduler = this.scheduler;
    if (batch.length === 0 || scheduler === undefined || scheduler.closed) return;
    for (const frames of encodeBatches(batch)) scheduler.sendFrames(frames);
  }

  // ---- Heartbeats and memory ---------------------------------------------------------------------

  private sendHeartbeat(): void {
    this.heartbeatTimer = undefined;
    if (this.heartbeatSentAt !== undefined || this.closing !== undefined) return;
    const now = this.clock.now();
    this.heartbeatSentAt = now;
    this.send({ op: "heartbeat", now, clockOffset: this.clock.offset, metrics: this.core.heartbeatMetrics() });
  }

  private onHeartbeatReply(reply: HeartbeatReplyMessage): void {
    const sent = this.heartbeatSentAt;
    this.heartbeatSentAt = undefined;
    const received = this.clock.now();
    if (sent !== undefined && Number.isFinite(reply.time)) this.clock.observe(sent, received, reply.time);
    if (Number.isFinite(reply.heartbeatInterval) && reply.heartbeatInterval > 0) this.heartbeatInterval = reply.heartbeatInterval;
    if (this.closing !== undefined || this.heartbeatTimer !== undefined) return;
    const wait = Math.max(0, (sent ?? received) + this.heartbeatInterval - received);
    this.heartbeatTimer = setTimeout(() => this.sendHeartbeat(), wait * 1000);
    this.heartbeatTimer.unref();
  }

  private setStatus(status: WorkerStatus): void {
    this.core.status = status;
    this.send({ op: "worker-status-change", status });
    if (status === "paused") this.apply({ type: "pause" });
    else if (status === "running") this.apply({ type: "unpause" });
  }

  private meter(context: "get-data"): StoreMeter {
    return { add: (activity, value, unit) => this.core.digests.add([context, activity, unit], value) };
  }

  // ---- Closing -----------------------------------------------------------------------------------

  /**
   * Stops everything and removes the worker's folder; `onClosed` is told why. Safe to call twice.
   * Tasks still running are stopped with their threads.
   */
  close(reason: string): Promise<void> {
    this.closing ??= this.shutDown(reason);
    return this.closing;
  }

  private async shutDown(reason: string): Promise<void> {
    await this.core.plugins.teardownAll();
    if (this.scheduler !== undefined && !this.scheduler.closed) {
      this.send({ op: "worker-status-change", status: "closing" });
      this.flush();
    }
    this.core.status = "closing";
    clearTimeout(this.heartbeatTimer);
    clearInterval(this.monitorTimer);
    this.core.close();
    this.runner.close();
    this.peers.close();
    for (const connection of this.peerConnections) connection.destroy();
    const server = this.server;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.store.close();
    rmSync(this.config.localDirectory, { recursive: true, force: true });
    this.scheduler?.close();
    this.core.status = "closed";
    this.onClosed(reason);
  }
}

/** Rejects a start config that cannot work, naming the field. */
function checkConfig(config: WorkerStartConfig): void {
  const fail = (field: string, wanted: string, value: unknown): never => {
    throw new TypeError(`WorkerStartConfig.${field} must be ${wanted}, got ${JSON.stringify(value)}`);
  };
  if (typeof config !== "object" || config === null) throw new TypeError(`A worker start config must be an object, got ${JSON.stringify(config)}`);
  if (typeof config.name !== "string" || config.name === "") fail("name", "a non-empty string", config.name);
  for (const field of ["schedulerPath", "listenPath", "localDirectory"] as const) {
    if (typeof config[field] !== "string" || config[field] === "") fail(field, "a path", config[field]);
  }
  if (!Number.isInteger(config.nthreads) || config.nthreads < 1) fail("nthreads", "a whole number ≥ 1", config.nthreads);
  if (typeof config.memoryLimit !== "number" || Number.isNaN(config.memoryLimit) || config.memoryLimit < 0) {
    fail("memoryLimit", "a number of bytes ≥ 0 (0: no limit)", config.memoryLimit);
  }
  if (config.profile !== undefined && config.profile !== false) {
    if (typeof config.profile !== "object" || config.profile === null) fail("profile", "false or { interval, cycle }", config.profile);
    checkProfilingOptions(config.profile, "WorkerStartConfig.profile option");
  }
}
