// The scheduler as a running thing: the pure ClusterState driven by a Transport. It feeds the
// transport's events into the state, sends the state's instructions once per event-loop turn,
// answers gather and run requests, and offers what diagnostics read (task stream, metrics,
// memory, bandwidth, workers). It lives in the client's process; `client.runOnScheduler` gets it.

import { EventEmitter } from "node:events";
import type { BandwidthSummary, ClusterMemory, MetricRecord, SpanRecord, SystemSample, TaskStateCounts, TaskStreamRecord, WorkerRecord } from "../../../protocol/records";
import { now } from "../../clock";
import { type FnSpec, type PackedError, unpackError } from "../../execution/wire";
import type {
  FromWorker,
  GatherReplyMessage,
  ProfileReplyMessage,
  RegisterMessage,
  RunReplyMessage,
  ShippedWorkerPlugin,
  ToWorker,
  WorkerAddress,
  WorkerMetrics,
} from "../messages";
import { DEFAULT_PROFILING } from "../../profiling/hub";
import { type ProfileWindow, unpackProfile } from "../../../protocol/profile";
import { type FunctionShipper, FunctionTable } from "../../execution/ship";
import { type Key, keyFromId } from "../../graph/keys";
import { type GraphUpdate, type PendingWorkerPlugin, SchedulerPlugins } from "./plugins";
import { ClusterState, type GraphSubmission, type SchedulerOptions, type TaskListener } from "./state";
import type { CollectOptions, TaskStreamRing } from "./task-stream";
import type { Transport, TransportEvents } from "./transport";
import type { WorkerState } from "./workers";

export type SchedulerSettings = Omit<SchedulerOptions, "placement" | "functionSpec">;

export interface SchedulerEvents {
  "worker-joined": [worker: WorkerState];
  "worker-left": [address: WorkerAddress, reason: string];
  /** Something the user should hear about while it lasts (the transport's notices: tasks waiting for a worker). */
  notice: [message: string];
  /** A graph was added: its columns and each entry's slot (the dashboard counts computations from it). */
  "graph-submitted": [graph: GraphSubmission, slots: Int32Array];
  /** A worker's heartbeat was taken in; `worker` holds the new figures. Emitted only while someone listens. */
  heartbeat: [worker: WorkerState, metrics: WorkerMetrics];
}

type Reply = RunReplyMessage | ProfileReplyMessage;

interface PendingRequest {
  readonly worker: WorkerAddress;
  readonly settle: (reply: Reply | Error) => void;
}

/** What the workers' profilers hold for a time range (see Scheduler.profileWindows). */
export interface ClusterProfile {
  /** One window per worker and cycle, named after the worker, on the scheduler's clock. */
  readonly windows: ProfileWindow[];
  /** Seconds between samples. */
  readonly interval: number;
  /** Workers that answered with their profile (a worker started without profiling does not). */
  readonly workers: WorkerAddress[];
}

/** Dask's `work-stealing-interval`: how often the state balances work between workers. */
const STEALING_INTERVAL_MS = 100;
/** How often gather looks for a key again after its holders lost it (it is being recomputed). */
const GATHER_ATTEMPTS = 20;
/**
 * A flush sends each worker this many of its instructions before any worker gets the rest (which
 * follow in slices of SEND_SLICE, every worker served each round). On a graph's first dispatch
 * every worker then starts on its first tasks within a millisecond, instead of the last one
 * waiting while thousands of the others' tasks are encoded and written.
 */
const FIRST_SEND = 64;
const SEND_SLICE = 512;
/** The longest a metrics sync waits for a worker's heartbeats (one that hangs or is paused in a debugger). */
const SYNC_TIMEOUT_MS = 5000;

/** A metrics sync under way: the heartbeat count each worker must reach. */
interface MetricsSync {
  readonly targets: Map<WorkerState, number>;
  readonly done: () => void;
  /** Resolves once done. */
  readonly settled: Promise<void>;
}

export class Scheduler extends EventEmitter<SchedulerEvents> {
  readonly state: ClusterState;
  readonly functions = new FunctionTable();
  private readonly requests = new Map<number, PendingRequest>();
  private nextRequestId = 1;
  private flushQueued = false;
  /** Computations and requests under way: while any, the transport keeps the process alive. */
  private holds = 0;
  private closed = false;
  private closing: Promise<void> | undefined;
  private failure: Error | undefined;
  /** Told when the scheduler closes (computations and Futures waiting on it): a Set, so thousands of waiters cost O(1) each. */
  private readonly closeWatchers = new Set<() => void>();
  private readonly syncs = new Set<MetricsSync>();
  private stealingTimer: NodeJS.Timeout | undefined;
  /** Scheduler plugins (Dask's SchedulerPlugin), by name: see ./plugins. */
  readonly plugins: SchedulerPlugins<Scheduler>;
  /**
   * Worker plugins by name (Dask's worker_plugins): every worker runs them, those joining later
   * too. Pending ones were registered before any worker joined and are shipped when one does.
   */
  readonly workerPlugins = new Map<string, ShippedWorkerPlugin | PendingWorkerPlugin>();
  /** The ids of the clients connected now (Dask's `clients`). */
  readonly clients = new Set<string>();
  /** Dask's totals since the scheduler started, for its Prometheus metrics. */
  readonly totals = { workersAdded: 0, workersRemoved: 0, clientsAdded: 0, clientsRemoved: 0 };
  /** Results that came with their task's report (small ones a client holds), until gathered or let go. */
  private readonly returned = new ReturnedResults();

  constructor(
    readonly transport: Transport,
    settings: SchedulerSettings = {},
  ) {
    super();
    this.state = new ClusterState({
      ...settings,
      placement: transport.placement,
      functionSpec: (id) => this.functions.spec(id),
      listenerFailed: (error) => this.listenerFailed("A task listener", error),
    });
    this.plugins = new SchedulerPlugins<Scheduler>(this, this.state, (who, error) => this.listenerFailed(who, error));
  }

  async start(): Promise<void> {
    const events: TransportEvents = {
      workerJoined: (registration) => this.workerJoined(registration),
      received: (worker, messages) => this.received(worker, messages),
      workerLeft: (worker, reason) => this.workerLeft(worker, reason),
      failed: (error) => void this.fail(error),
      notice: (message) => this.tell("notice", message),
    };
    await this.transport.start(events);
    this.transport.setKeepsAlive(false);
    if (this.state.workStealing) {
      this.stealingTimer = setInterval(() => this.balance(), STEALING_INTERVAL_MS);
      // Balancing matters only while work is under way, and that keeps the process alive itself.
      this.stealingTimer.unref();
    }
  }

  /** One round of work stealing; its steal requests go out at once. */
  private balance(): void {
    if (this.closed) return;
    const before = this.state.stealRequests;
    this.state.balance();
    if (this.state.stealRequests !== before) this.scheduleFlush();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Why the scheduler closed by itself (its transport failed), or undefined. */
  get closedBy(): Error | undefined {
    return this.failure;
  }

  /** Calls `fn` when the scheduler closes (at once if it has); returns a function that stops watching. */
  onClose(fn: () => void): () => void {
    if (this.closed) {
      fn();
      return () => {};
    }
    this.closeWatchers.add(fn);
    return () => this.closeWatchers.delete(fn);
  }

  // ---- Diagnostics' view -----------------------------------------------------------------------

  /** The task-stream ring (records of finished and erred tasks, bounded, with an append index). */
  get taskStream(): TaskStreamRing {
    return this.state.taskStream;
  }
  /** Task-stream records, oldest first (see TaskStreamRing.collect). */
  getTaskStream(options?: CollectOptions): TaskStreamRecord[] {
    return this.state.taskStream.collect(options);
  }
  /**
   * Dask's cumulative_worker_metrics: every worker digest since start, without span ids, as the
   * workers' heartbeats brought them (see syncMetrics).
   */
  cumulativeWorkerMetrics(): MetricRecord[] {
    return this.state.cumulativeMetrics.records();
  }
  /**
   * Every span (Dask's spans extension), in creation order, each with its subtree's execute
   * metrics (idle included as ("N/A", "idle or other spans")) as the heartbeats brought them.
   */
  spans(): SpanRecord[] {
    return this.state.spans.records(now());
  }

  /**
   * Resolves once every worker has sent a heartbeat begun after this call, so the metrics above
   * hold everything digested before it (a worker that leaves meanwhile is not waited for; one
   * that stays silent for 5 s neither). A worker starts a heartbeat when the reply to its
   * previous one arrives: the second heartbeat from now is such a one, and the reply to the
   * first asks for it at once. Takes up to a heartbeat interval (0.5 s), a round trip more.
   */
  syncMetrics(): Promise<void> {
    if (this.closed || this.state.workers.size === 0) return Promise.resolve();
    let resolveSync!: () => void;
    const settled = new Promise<void>((resolve) => (resolveSync = resolve));
    const release = this.hold();
    const timer = setTimeout(() => sync.done(), SYNC_TIMEOUT_MS);
    const sync: MetricsSync = {
      targets: new Map([...this.state.workers.values()].map((ws) => [ws, ws.heartbeats + 2])),
      done: () => {
        this.syncs.delete(sync);
        clearTimeout(timer);
        release();
        resolveSync();
      },
      settled,
    };
    for (const ws of sync.targets.keys()) ws.hurried = true;
    this.syncs.add(sync);
    return settled;
  }
  /** Dask's MemoryState summed over the workers, from their last heartbeats. */
  memory(): ClusterMemory {
    return this.state.memory();
  }
  bandwidth(): BandwidthSummary {
    return this.state.bandwidth.summary();
  }
  /** The cluster's CPU and memory over [start, stop] (scheduler clock), one sample per heartbeat. */
  systemHistory(start?: number, stop?: number): SystemSample[] {
    return this.state.system.between(start, stop);
  }
  workerRecords(): WorkerRecord[] {
    return [...this.state.workers.values()].map((ws) => ws.record());
  }
  taskCounts(): TaskStateCounts {
    return this.state.stateCounts();
  }
  get workers(): ReadonlyMap<WorkerAddress, WorkerState> {
    return this.state.workers;
  }

  // ---- Client requests -------------------------------------------------------------------------

  submit(graph: GraphSubmission, listener?: TaskListener): Int32Array {
    this.checkOpen();
    const slots = this.state.submit(graph, listener, now());
    // The first tasks leave now, before listeners and plugins hear of the graph and the client
    // sets up its bookkeeping: the workers start on them meanwhile (no worker report can be
    // waiting to be answered in the same flush: nothing of this graph ran yet).
    this.flush();
    this.tell("graph-submitted", graph, slots);
    if (this.plugins.names.length > 0) this.plugins.updateGraph(graphUpdate(graph, slots, this.state));
    return slots;
  }

  /** A client connected (Dask's add_client): plugins hear it. */
  addClient(id: string): void {
    this.clients.add(id);
    this.totals.clientsAdded++;
    this.plugins.addClient(id);
  }

  /** A client disconnected (Dask's remove_client). */
  removeClient(id: string): void {
    if (!this.clients.delete(id)) return;
    this.totals.clientsRemoved++;
    this.plugins.removeClient(id);
  }

  want(slot: number): void {
    this.state.want(slot);
    this.scheduleFlush();
  }

  unwant(slot: number): void {
    this.unwantAll([slot]);
  }

  /** `unwant` for each of `slots`, in one event of the state. */
  unwantAll(slots: readonly number[]): void {
    if (this.closed) return;
    for (const slot of slots) this.returned.drop(this.state.keyOf(slot));
    this.state.unwantAll(slots);
    this.scheduleFlush();
  }

  /** Keeps the process alive until the returned function is called (a computation or request under way). */
  hold(): () => void {
    if (++this.holds === 1) this.transport.setKeepsAlive(true);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds === 0 && !this.closed) this.transport.setKeepsAlive(false);
    };
  }

  /**
   * The values of keys in memory, fetched straight from the workers holding them (or the store).
   * A key whose holders lost it is looked for again once it is recomputed.
   */
  async gather(keys: readonly string[]): Promise<Map<string, unknown>> {
    this.checkOpen();
    const release = this.hold();
    try {
      if (this.transport.placement === "queue") return await this.fetchFromStore(keys);
      const transport = this.transport;
      if (transport.gather === undefined) throw new Error(`The transport (${transport.description}) places tasks by locality but cannot gather results`);
      const gatherFrom = (worker: WorkerAddress, workerKeys: readonly string[]): Promise<Pick<GatherReplyMessage, "values" | "missing"> | Error> =>
        transport.gather!(worker, workerKeys).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      const values = new Map<string, unknown>();
      let wanted: string[] = [];
      for (const key of keys) {
        const slot = this.state.slotOf(key);
        if (slot !== undefined && this.state.stateOf(slot) === "memory" && this.returned.take(key, values)) continue;
        wanted.push(key);
      }
      for (let attempt = 0; wanted.length > 0; attempt++) {
        if (attempt >= GATHER_ATTEMPTS) throw new Error(`Cannot gather ${wanted.length} key(s) (first: ${this.describeKey(wanted[0])}): no worker holds them`);
        const byWorker = new Map<WorkerAddress, string[]>();
        const waitFor: string[] = [];
        for (const key of wanted) {
          const slot = this.state.slotOf(key);
          if (slot === undefined) throw new Error(`Cannot gather ${this.describeKey(key)}: the scheduler no longer knows it`);
          const failure = this.state.failureOf(slot);
          if (failure !== undefined) throw new Error(`Cannot gather ${this.state.nameOf(slot)}: it failed`);
          const holder = this.state.whoHas(slot)[0];
          if (holder === undefined) {
            waitFor.push(key);
            continue;
          }
          const workerKeys = byWorker.get(holder.address);
          if (workerKeys === undefined) byWorker.set(holder.address, [key]);
          else workerKeys.push(key);
        }
        const replies = await Promise.all([...byWorker].map(([worker, workerKeys]) => gatherFrom(worker, workerKeys)));
        const missing: string[] = [...waitFor];
        [...byWorker].forEach(([worker, workerKeys], i) => {
          const reply = replies[i];
          if (reply instanceof Error) {
            missing.push(...workerKeys);
            return;
          }
          for (const [key, value] of Object.entries(reply.values)) values.set(key, value);
          for (const key of reply.missing) {
            missing.push(key);
            this.state.replicaMissing(worker, key);
          }
        });
        if (missing.length > 0) {
          this.scheduleFlush();
          await this.untilInMemory(missing);
        }
        wanted = missing;
      }
      return values;
    } finally {
      release();
    }
  }

  /** Runs `fn(...args, worker)` on each of `workers` (default: all), on its main thread with a view of the worker: address → result. */
  async runOnWorkers(fn: FnSpec, workers?: readonly WorkerAddress[], args: readonly unknown[] = []): Promise<Record<WorkerAddress, unknown>> {
    this.checkOpen();
    const release = this.hold();
    try {
      const targets = workers ?? [...this.state.workers.keys()];
      const replies = await Promise.all(targets.map((worker) => this.request(worker, (requestId) => ({ op: "run", requestId, fn, ...(args.length > 0 ? { args } : {}) }))));
      const results: Record<WorkerAddress, unknown> = {};
      targets.forEach((worker, i) => {
        const reply = replies[i] as RunReplyMessage | Error;
        if (reply instanceof Error) throw reply;
        if (!reply.ok) throw unpackError(reply.error as PackedError);
        results[worker] = reply.value;
      });
      return results;
    } finally {
      release();
    }
  }

  /**
   * Dask's register_worker_plugin: every worker adds `plugin` and runs its setup; workers that join
   * later add it when they register. An idempotent plugin under a taken name changes nothing. The
   * first setup error of a worker there now is thrown (the plugin stays registered, as in Dask).
   */
  async addWorkerPlugin(plugin: ShippedWorkerPlugin | PendingWorkerPlugin): Promise<void> {
    this.checkOpen();
    if (this.workerPlugins.has(plugin.name) && plugin.idempotent) return;
    this.workerPlugins.set(plugin.name, plugin);
    // A pending plugin: no worker has joined yet, so there is nobody to ask.
    if ("ship" in plugin) return;
    await this.requestEveryWorker((requestId) => ({ op: "plugin-add", requestId, plugin }));
  }

  /** Dask's unregister_worker_plugin: every worker tears it down; an unknown name is an error naming it. */
  async removeWorkerPlugin(name: string): Promise<void> {
    this.checkOpen();
    if (!this.workerPlugins.delete(name)) {
      const known = [...this.workerPlugins.keys()].map((n) => JSON.stringify(n)).join(", ") || "none";
      throw new Error(`Could not find worker plugin ${JSON.stringify(name)} among the current worker plugins (${known})`);
    }
    await this.requestEveryWorker((requestId) => ({ op: "plugin-remove", requestId, name }));
  }

  /**
   * Sends a request to every worker; throws the first worker's error once all have answered. A
   * worker that left meanwhile does not count: what it would have done no longer matters.
   */
  private async requestEveryWorker(build: (requestId: number) => ToWorker): Promise<void> {
    const release = this.hold();
    try {
      const targets = [...this.state.workers.values()];
      const replies = await Promise.all(targets.map((ws) => this.request(ws.address, build)));
      for (const [i, reply] of replies.entries()) {
        if (this.state.workers.get(targets[i].address) !== targets[i]) continue;
        if (reply instanceof Error) throw reply;
        if (reply.op === "run-reply" && !reply.ok) throw unpackError(reply.error as PackedError);
      }
    } finally {
      release();
    }
  }

  /**
   * The workers' statistical profiles (Dask's get_profile): every window overlapping [start, stop)
   * (scheduler clock) from each of `workers` (default: all). A worker that leaves meanwhile is left out.
   */
  async profileWindows(range: { readonly start?: number; readonly stop?: number } = {}, workers?: readonly WorkerAddress[]): Promise<ClusterProfile> {
    this.checkOpen();
    const release = this.hold();
    try {
      const targets = workers ?? [...this.state.workers.keys()];
      const replies = await Promise.all(targets.map((worker) => this.request(worker, (requestId) => ({ op: "profile", requestId, start: range.start, stop: range.stop }))));
      const windows: ProfileWindow[] = [];
      const profiled: WorkerAddress[] = [];
      let interval: number | undefined;
      targets.forEach((worker, i) => {
        const reply = replies[i];
        if (reply instanceof Error || reply.op !== "profile-reply" || !reply.enabled) return;
        profiled.push(worker);
        interval ??= reply.profile.interval;
        windows.push(...unpackProfile(reply.profile));
      });
      return { windows, interval: interval ?? DEFAULT_PROFILING.interval, workers: profiled };
    } finally {
      release();
    }
  }

  /** Closes once: a second call gets the first one's promise. */
  close(): Promise<void> {
    return (this.closing ??= this.shutDown());
  }

  private async shutDown(): Promise<void> {
    // A metrics sync asked for before the close still gets every worker's next heartbeat (each
    // sync is bounded by SYNC_TIMEOUT_MS): a panel shown in the cell before `cluster.close()`
    // then has that cell's tasks, not the figures from before them.
    if (this.syncs.size > 0) await Promise.all([...this.syncs].map((sync) => sync.settled));
    this.closed = true;
    clearInterval(this.stealingTimer);
    for (const [id, request] of this.requests) {
      this.requests.delete(id);
      request.settle(this.failure ?? new Error("The scheduler closed"));
    }
    for (const watcher of [...this.closeWatchers]) watcher();
    this.closeWatchers.clear();
    for (const sync of [...this.syncs]) sync.done();
    // Dask closes plugins after telling the workers to go and before the comms close.
    await this.plugins.close();
    await this.transport.close();
  }

  // ---- Transport events ------------------------------------------------------------------------

  private workerJoined(registration: RegisterMessage): void {
    if (this.closed) return;
    const shipper = this.functions.setWorkerGlobals(registration.globals);
    const ws = this.state.addWorker(registration, now());
    this.totals.workersAdded++;
    // Its plugins before its first tasks. Nobody waits for the replies: a failing setup is the worker's to log, as in Dask.
    const plugins = this.shippedWorkerPlugins(shipper).map((plugin): ToWorker => ({ op: "plugin-add", requestId: 0, plugin }));
    if (plugins.length > 0) this.transport.send(ws.address, plugins);
    this.flush();
    this.tell("worker-joined", ws);
    this.plugins.addWorker(ws.address);
  }

  private received(worker: WorkerAddress, messages: readonly FromWorker[]): void {
    if (this.closed) return;
    let forState: FromWorker[] | undefined;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      if (message.op === "run-reply" || message.op === "profile-reply") {
        forState ??= messages.slice(0, i);
        const request = this.requests.get(message.requestId);
        if (request !== undefined) {
          this.requests.delete(message.requestId);
          request.settle(message);
        }
      } else {
        if (message.op === "task-finished" && "value" in message) this.returned.add(message.key, message.value, message.nbytes);
        forState?.push(message);
      }
    }
    this.state.handle(worker, forState ?? messages, now());
    this.scheduleFlush();
    if (this.syncs.size > 0) this.checkSyncs();
    // One check per batch while nobody listens; the dashboard listens while it is shown.
    if (this.listenerCount("heartbeat") > 0) this.reportHeartbeats(worker, messages);
  }

  /**
   * The worker plugins, shipped: pending ones (registered before any worker joined) are shipped
   * once a worker said which globals shipped code may use. One that cannot travel is dropped and
   * reported, as a setup failing on a joining worker is in Dask: nobody is waiting to be told.
   */
  private shippedWorkerPlugins(shipper: FunctionShipper): ShippedWorkerPlugin[] {
    const shipped: ShippedWorkerPlugin[] = [];
    for (const [name, plugin] of this.workerPlugins) {
      if (!("ship" in plugin)) {
        shipped.push(plugin);
        continue;
      }
      try {
        const ready = plugin.ship(shipper);
        this.workerPlugins.set(name, ready);
        shipped.push(ready);
      } catch (error) {
        this.workerPlugins.delete(name);
        process.stderr.write(`tsdask: worker plugin ${JSON.stringify(name)} cannot travel to the workers and was dropped: ${(error as Error).message}\n`);
      }
    }
    return shipped;
  }

  /** Metrics syncs whose workers have all sent their heartbeats (or left) are done. */
  private checkSyncs(): void {
    for (const sync of [...this.syncs]) {
      let waiting = false;
      for (const [ws, target] of sync.targets) {
        if (ws.heartbeats < target && this.state.workers.get(ws.address) === ws) waiting = true;
      }
      if (!waiting) sync.done();
    }
  }

  private reportHeartbeats(worker: WorkerAddress, messages: readonly FromWorker[]): void {
    const ws = this.state.workers.get(worker);
    if (ws === undefined) return;
    for (const message of messages) if (message.op === "heartbeat") this.tell("heartbeat", ws, message.metrics);
  }

  private workerLeft(worker: WorkerAddress, reason: string): void {
    if (this.closed) return;
    this.state.removeWorker(worker, reason, now());
    for (const [id, request] of this.requests) {
      if (request.worker !== worker) continue;
      this.requests.delete(id);
      request.settle(new Error(`Worker ${worker} left: ${reason}`));
    }
    this.totals.workersRemoved++;
    this.flush();
    if (this.syncs.size > 0) this.checkSyncs();
    this.tell("worker-left", worker, reason);
    this.plugins.removeWorker(worker, reason);
  }

  // ---- Listeners -------------------------------------------------------------------------------

  /**
   * Emits `event` (always once the state change it reports is complete) to each listener in turn:
   * one that throws is reported and the others still hear it. A listener's bug never reaches the
   * transport, whose connection to a worker it would break.
   */
  private tell<K extends keyof SchedulerEvents>(event: K, ...args: SchedulerEvents[K]): void {
    for (const listener of this.rawListeners(event)) {
      try {
        (listener as (...args: SchedulerEvents[K]) => void).apply(this, args);
      } catch (error) {
        this.listenerFailed(`A "${event}" listener`, error);
      }
    }
  }

  /** Where listeners' errors go: the process's error output, as the scheduler carries on without them. */
  private listenerFailed(who: string, error: unknown): void {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`tsdask: ${who} of the scheduler failed (the scheduler carries on): ${detail}\n`);
  }

  // ---- Sending ---------------------------------------------------------------------------------

  /** Sends at the end of this event-loop turn, so reports from all workers read in it are answered together. */
  private scheduleFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => this.flush());
  }

  /** Sends everything the state has for each worker (one message per worker). */
  private flush(): void {
    this.flushQueued = false;
    if (this.closed) return;
    if (this.transport.placement === "queue") {
      for (const instruction of this.state.takeQueueInstructions()) {
        if (instruction.op === "enqueue") this.transport.enqueue!(instruction.tasks);
        else this.transport.forget!(instruction.keys);
      }
    }
    let outboxes = this.state.takeMessages();
    for (let from = 0, size = FIRST_SEND; outboxes.length > 0; from += size, size = SEND_SLICE) {
      for (const [ws, messages] of outboxes) this.transport.send(ws.address, from === 0 && messages.length <= size ? messages : messages.slice(from, from + size));
      outboxes = outboxes.filter(([, messages]) => messages.length > from + size);
    }
  }

  private request(worker: WorkerAddress, build: (requestId: number) => ToWorker): Promise<Reply | Error> {
    return new Promise((resolve) => {
      if (!this.state.workers.has(worker)) {
        resolve(new Error(`Worker ${worker} is not connected`));
        return;
      }
      const requestId = this.nextRequestId++;
      this.requests.set(requestId, { worker, settle: resolve });
      // What the state has for the worker goes first: a request never overtakes an instruction.
      this.flush();
      this.transport.send(worker, [build(requestId)]);
    });
  }

  /** Resolves once each key is in memory again (or failed, or forgotten: gather then reports it). */
  private untilInMemory(keys: readonly string[]): Promise<void> {
    let pending = 0;
    return new Promise((resolve) => {
      const listener: TaskListener = {
        finished: (slot) => done(slot),
        erred: (slot) => done(slot),
      };
      const done = (slot: number): void => {
        this.state.removeListener(slot, listener);
        if (--pending === 0) resolve();
      };
      for (const key of keys) {
        const slot = this.state.slotOf(key);
        if (slot === undefined) continue;
        const state = this.state.stateOf(slot);
        if (state === "memory" && this.state.whoHas(slot).length > 0) continue;
        if (state === "erred" || state === "released" || state === "forgotten") continue;
        pending++;
        this.state.addListener(slot, listener);
      }
      if (pending === 0) resolve();
    });
  }

  private async fetchFromStore(keys: readonly string[]): Promise<Map<string, unknown>> {
    const values = new Map<string, unknown>();
    let wanted = keys;
    for (let attempt = 0; wanted.length > 0; attempt++) {
      const found = await this.transport.fetch!(wanted);
      const lost: string[] = [];
      for (const key of wanted) {
        if (found.has(key)) {
          values.set(key, found.get(key));
          continue;
        }
        // The transport found the worker that kept it gone and reported it lost: it is being recomputed.
        const slot = this.state.slotOf(key);
        const recomputing = slot !== undefined && this.state.stateOf(slot) !== "memory" && this.state.failureOf(slot) === undefined;
        if (!recomputing || attempt + 1 >= GATHER_ATTEMPTS) throw new Error(`Cannot gather ${this.describeKey(key)}: it is not in the store`);
        lost.push(key);
      }
      if (lost.length > 0) {
        this.scheduleFlush();
        await this.untilInMemory(lost);
      }
      wanted = lost;
    }
    return values;
  }

  private describeKey(key: string): string {
    const slot = this.state.slotOf(key);
    return slot === undefined ? JSON.stringify(key) : this.state.nameOf(slot);
  }

  private checkOpen(): void {
    if (this.closed) throw this.failure ?? new Error("The scheduler is closed");
  }

  /** The transport failed for good: everything pending fails with its error. */
  private async fail(error: Error): Promise<void> {
    if (this.closed) return;
    this.failure = error;
    await this.close();
  }
}

/** What plugins' updateGraph hears of a submission: the client, wanted keys, every key, priorities. */
function graphUpdate(graph: GraphSubmission, slots: Int32Array, state: ClusterState): GraphUpdate {
  const tasks = graph.keys.map(keyFromId);
  const priority = new Map<Key, readonly [number, number]>();
  slots.forEach((slot, entry) => {
    const [submission, order] = state.priorityOf(slot);
    priority.set(tasks[entry], [submission, order]);
  });
  return { client: graph.client ?? "unknown", keys: new Set(graph.wanted.map((entry) => tasks[entry])), tasks, priority };
}

/** Returned results the scheduler keeps at most (bytes, count); the oldest go first (gather then reads them from their worker). */
const RETURNED_KEPT_BYTES = 64 * 1024 * 1024;
const RETURNED_KEPT_COUNT = 100_000;

/** Results that travelled with their reports, by key, oldest first. */
class ReturnedResults {
  private readonly results = new Map<string, { readonly value: unknown; readonly nbytes: number }>();
  private bytes = 0;

  add(key: string, value: unknown, nbytes: number): void {
    this.drop(key);
    this.results.set(key, { value, nbytes });
    this.bytes += nbytes;
    for (const [oldest] of this.results) {
      if (this.bytes <= RETURNED_KEPT_BYTES && this.results.size <= RETURNED_KEPT_COUNT) break;
      this.drop(oldest);
    }
  }

  /** Moves `key`'s result into `into`; false when there is none. */
  take(key: string, into: Map<string, unknown>): boolean {
    const result = this.results.get(key);
    if (result === undefined) return false;
    into.set(key, result.value);
    this.drop(key);
    return true;
  }

  drop(key: string): void {
    const result = this.results.get(key);
    if (result === undefined) return;
    this.results.delete(key);
    this.bytes -= result.nbytes;
  }
}
