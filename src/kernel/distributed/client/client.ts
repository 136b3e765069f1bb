// The Client: the user's handle on a cluster (Dask's distributed.Client). While open it is the
// default scheduler of `get`, `compute`, `delayed(…).compute()` and arrays' `compute()`; it
// submits functions and collections as Futures, gathers results straight from the workers, runs
// functions on every worker or on the scheduler.

import { randomUUID } from "node:crypto";
import { Delayed, makeObject } from "../../collections/delayed";
import { ChunkedArray, type ComputedArray, assembleBlocks, blockIndices } from "../../collections/array/array";
import { tokenize } from "../../collections/tokenize";
import { type Key, formatKey, keyPrefix } from "../../graph/keys";
import { Graph, type GraphInput } from "../../graph/graph";
import { buildPlan } from "../../graph/plan";
import { quote } from "../../graph/spec";
import { currentSpan } from "../../metrics/spans";
import { type FpmPanel, type FpmPanelOptions, showArrivingPanel } from "../../diagnostics/fpm/panel";
import type { DisplayHandle } from "../../display";
import type { FpmData } from "../../../protocol/fpm";
import type { MetricRecord, SpanRecord } from "../../../protocol/records";
import { now } from "../../clock";
import { dashboardPublisher } from "../../dashboard/publisher";
import { registerMetricsSource } from "../../dashboard/server";
import { schedulerMetricsSource } from "../metrics-source";
import { type GetOptions, type GraphRun, type GraphScheduler, get, setDefaultGraphScheduler } from "../../scheduler/get";
import type { WireTask } from "../messages";
import type { Scheduler } from "../scheduler/scheduler";
import type { GraphSubmission, WorkerRestriction } from "../scheduler/state";
import type { WorkerView } from "../worker/view";
import { clusterFeed } from "../dashboard";
import { type ClusterSummary, ShownAsCard } from "../display";
import { LocalCluster, type LocalClusterOptions } from "../local/cluster";
import type { ProfileNode, TaskStreamRecord } from "../../../protocol/records";
import type { BandwidthDetail } from "../../diagnostics/bandwidth";
import { registerClusterSource } from "../../diagnostics/cluster-source";
import type { RedisClusterOptions } from "../redis/cluster";
import type { WorkerState } from "../scheduler/workers";
import { computeGraph } from "./computation";
import { SchedulerPlugin, WorkerPlugin, shipWorkerPlugin } from "../plugins";
import {
  type ClientBandwidthOptions,
  type ClientProfileOptions,
  type ClientTaskStreamOptions,
  ClusterDiagnostics,
  type PlottedBandwidth,
  type PlottedProfile,
  type PlottedTaskStream,
  asksForPlot,
  clientBandwidth,
  clientProfile,
  clientTaskStream,
  plotClientBandwidth,
  plotClientProfile,
  plotClientTaskStream,
} from "./diagnostics";
import { Future, FutureHold } from "./future";
import { PLACEMENT_OPTIONS, type PlacementOptions, restrictionOf, trailingOptions, workerNames } from "./placement-options";
import { checkSendable, planSpans, planSubmission } from "./submission";

/** What a Client connects to: a cluster whose scheduler runs in this process. */
export interface ClusterHandle {
  readonly scheduler: Scheduler;
  /** The dashboard's address as a link, or null when there is none. */
  readonly dashboardLink: string | null;
  /** For reprs and messages: "LocalCluster 'local'". */
  readonly description: string;
  summary(): ClusterSummary;
  close(): Promise<void>;
}

/** An argument of `submit`: the value, or a Future standing for its result. */
export type FutureOr<T> = T | Future<T>;
type FutureArgs<A extends unknown[]> = { [I in keyof A]: FutureOr<A[I]> };
type AnyFunction = (...args: never[]) => unknown;

/** Open clients, newest last: the newest is the default scheduler. */
const openClients: Client[] = [];

export class Client extends ShownAsCard implements GraphScheduler, AsyncDisposable {
  protected readonly cardTitle = "Client";
  /** Dask's client id: what scheduler plugins hear in addClient, removeClient and updateGraph. */
  readonly id = `Client-${randomUUID()}`;
  private readonly holds = new Set<FutureHold>();
  private closed = false;
  private readonly stopWatching: () => void;
  /** What seed 003's diagnostics read of the cluster (the default cluster for them while this client is open). */
  readonly diagnostics: ClusterDiagnostics;
  private readonly unregisterDiagnostics: () => void;
  /** Takes the cluster off the notebook's dashboard feed. */
  private readonly leaveDashboard: () => void;
  /** Stops serveDashboard()'s `/metrics` serving this cluster's metrics. */
  private readonly unregisterMetrics: () => void;

  private constructor(
    readonly cluster: ClusterHandle,
    /** Closed with the client (a cluster the client started itself). */
    private readonly ownsCluster: boolean,
  ) {
    super();
    this.stopWatching = cluster.scheduler.onClose(() => void this.close());
    openClients.push(this);
    setDefaultGraphScheduler(this);
    this.diagnostics = new ClusterDiagnostics(cluster.scheduler, this.description);
    this.unregisterDiagnostics = registerClusterSource(this.diagnostics);
    // While open, the cluster feeds the kernel's dashboard (the JupyterLab panels, serveDashboard()).
    this.leaveDashboard = clusterFeed(cluster).attach(dashboardPublisher, "Client");
    this.unregisterMetrics = registerMetricsSource(schedulerMetricsSource(cluster.scheduler));
    cluster.scheduler.addClient(this.id);
  }

  /**
   * Connects to `cluster`; with options (or nothing) instead, starts a LocalCluster of its own
   * (Dask's `Client()`), closed with the client. With a Redis address
   * (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS), the workers are those that
   * serve that Redis (`npx tsdask worker redis://…` on any machine); closing the client removes
   * everything it stored there.
   */
  static async connect(cluster?: ClusterHandle | LocalClusterOptions): Promise<Client>;
  static async connect(redisAddress: string, options?: RedisClusterOptions): Promise<Client>;
  static async connect(cluster?: ClusterHandle | LocalClusterOptions | string, options?: RedisClusterOptions): Promise<Client> {
    if (typeof cluster === "string") {
      // Loaded on first use: BullMQ and ioredis take a quarter of a second to load, and most notebooks never need them.
      const { RedisCluster } = require("../redis/cluster") as typeof import("../redis/cluster");
      return new Client(await RedisCluster.connect(cluster, options), true);
    }
    if (cluster !== undefined && isClusterHandle(cluster)) {
      if (cluster.scheduler.isClosed) throw new Error(`Cannot connect: ${cluster.description} is closed`);
      return new Client(cluster, false);
    }
    const started = await LocalCluster.start(cluster);
    return new Client(started, true);
  }

  get scheduler(): Scheduler {
    return this.cluster.scheduler;
  }

  get description(): string {
    return `Client(${this.cluster.description})`;
  }

  /** The dashboard's link (null: no dashboard). */
  get dashboardLink(): string | null {
    return this.cluster.dashboardLink;
  }

  get status(): "running" | "closed" {
    return this.closed ? "closed" : "running";
  }

  /** The workers connected now, by address (a Redis worker's address is its name). */
  get workers(): ReadonlyMap<string, WorkerState> {
    return this.scheduler.workers;
  }

  // ---- Futures ---------------------------------------------------------------------------------

  /**
   * Runs `fn(...args)` on a worker; Futures among the arguments (also inside arrays and plain
   * objects) stand for their results. The key is `<name>-<token of fn and args>`, so the same
   * call twice is one task (Dask's pure=True). Options may follow the arguments: `workers`,
   * `allowOtherWorkers` (Dask's workers=, allow_other_workers=); a last argument is taken as the
   * options when it is a plain object naming one of them.
   */
  submit<A extends unknown[], R>(fn: (...args: A) => R, ...args: FutureArgs<A>): Future<Awaited<R>>;
  submit<A extends unknown[], R>(fn: (...args: A) => R, ...argsAndOptions: [...FutureArgs<A>, SubmitOptions]): Future<Awaited<R>>;
  submit(fn: AnyFunction, ...args: unknown[]): Future {
    const options = trailingOptions<SubmitOptions>("client.submit", args, PLACEMENT_OPTIONS) ?? {};
    const restriction = restrictionOf("client.submit", options);
    return this.submitCalls(fn, [args], [`${fn.name || "lambda"}-${tokenize(fn, ...args)}`], restriction)[0];
  }

  /**
   * Dask's `client.map(fn, *iterables, key=, pure=)`: `fn(xs[i], ys[i], …)` for each i, as one
   * submission (zipped: as many calls as the shortest iterable has items). An options object
   * comes last; it is told from an iterable by not being iterable. `key`: the keys' prefix (each
   * key `<key>-<token>`), or one key per call; `pure: false`: fresh keys even for equal calls;
   * `workers`, `allowOtherWorkers`: as `submit`'s.
   */
  map<T, R>(fn: (item: T) => R, items: Iterable<FutureOr<T>>, options?: MapOptions): Future<Awaited<R>>[];
  map<A, B, R>(fn: (a: A, b: B) => R, as: Iterable<FutureOr<A>>, bs: Iterable<FutureOr<B>>, options?: MapOptions): Future<Awaited<R>>[];
  map<R>(fn: (...args: never[]) => R, ...iterables: (Iterable<unknown> | MapOptions)[]): Future<Awaited<R>>[];
  map(fn: AnyFunction, ...iterablesAndOptions: (Iterable<unknown> | MapOptions | undefined)[]): Future[] {
    const last = iterablesAndOptions[iterablesAndOptions.length - 1];
    const options: MapOptions = last === undefined || !isIterable(last) ? ((iterablesAndOptions.pop() as MapOptions | undefined) ?? {}) : {};
    checkOptionNames("client.map", options, MAP_OPTIONS);
    const iterables = iterablesAndOptions.map((iterable, i) => {
      if (!isIterable(iterable)) throw new TypeError(`client.map: argument ${i + 2} must be an iterable (only the last may be options), got ${describe(iterable)}`);
      return [...iterable];
    });
    if (iterables.length === 0) throw new TypeError("client.map needs at least one iterable");
    const count = Math.min(...iterables.map((items) => items.length));
    const calls = Array.from({ length: count }, (_, i) => iterables.map((items) => items[i]));
    const { key, pure = true } = options;
    const restriction = restrictionOf("client.map", options);
    if (Array.isArray(key)) {
      if (key.length !== count) throw new RangeError(`client.map: ${key.length} keys given for ${count} calls`);
      return this.submitCalls(fn, calls, key, restriction);
    }
    const prefix = key ?? (fn.name || "lambda");
    if (pure) return this.submitCalls(fn, calls, calls.map((args) => `${prefix}-${tokenize(fn, ...args)}`), restriction);
    const unique = randomUUID();
    return this.submitCalls(fn, calls, calls.map((_, i) => `${prefix}-${unique}-${i}`), restriction);
  }

  /**
   * Starts computing collections on the cluster and returns Futures at once: a Delayed value's
   * Future holds its result, an array's holds the whole array (as `array.compute()` returns it).
   * `workers`, `allowOtherWorkers`: every task of the collections, as `submit`'s.
   */
  compute<T>(collection: Delayed<T>, options?: PlacementOptions): Future<T>;
  compute(collection: ChunkedArray, options?: PlacementOptions): Future<ComputedArray>;
  compute(collections: readonly (Delayed | ChunkedArray)[], options?: PlacementOptions): Future[];
  compute(collection: Delayed | ChunkedArray | readonly (Delayed | ChunkedArray)[], options: PlacementOptions = {}): Future | Future[] {
    checkOptionNames("client.compute", options, PLACEMENT_OPTIONS);
    const restriction = restrictionOf("client.compute", options);
    if (Array.isArray(collection)) return collection.map((one) => this.computeOne(one as Delayed, restriction));
    return this.computeOne(collection as Delayed | ChunkedArray, restriction);
  }

  private computeOne(collection: Delayed | ChunkedArray, restriction: WorkerRestriction | undefined): Future {
    this.checkOpen();
    const one = collection as Delayed | ChunkedArray;
    let graph: Map<Key, unknown>;
    let key: Key;
    if (one instanceof ChunkedArray) {
      key = `finalize-${tokenize("finalize", one.name)}`;
      const blocks = blockIndices(one.numblocks).map((index) => one.blockKey(index));
      graph = new Map(one.dask);
      graph.set(key, [assembleBlocks, quote(one.chunks), quote(one.name), ...blocks]);
    } else if (one instanceof Delayed) {
      graph = one.dask as Map<Key, unknown>;
      key = one.key;
    } else {
      throw new TypeError(`client.compute takes Delayed values or tsdask/array arrays, got ${describe(collection)}`);
    }
    const plan = buildPlan(Graph.from(graph), key);
    const keyIds = plan.ids;
    const submission = { ...planSubmission(plan, keyIds, this.scheduler.functions, () => false), ...planSpans(plan), restriction, client: this.id };
    const slots = this.scheduler.submit(submission);
    const [output] = submission.wanted;
    return this.futureFor(plan.keys[output], keyIds[output], slots[output]);
  }

  /**
   * The results of Futures, in the same structure (a Future, an array or a plain object of
   * them). `errors: "skip"` (Dask's): an erred Future is left out of the outer array, and is
   * null elsewhere, instead of rejecting with its error.
   */
  gather<T>(future: Future<T>, options?: GatherOptions): Promise<T>;
  gather<T>(futures: readonly Future<T>[], options?: GatherOptions): Promise<T[]>;
  gather(futures: unknown, options?: GatherOptions): Promise<unknown>;
  async gather(futures: unknown, options: GatherOptions = {}): Promise<unknown> {
    this.checkOpen();
    checkOptionNames("client.gather", options, GATHER_OPTIONS);
    const { errors = "raise" } = options;
    if (errors !== "raise" && errors !== "skip") throw new RangeError(`client.gather: errors must be "raise" or "skip", got ${JSON.stringify(errors)}`);
    const found: Future[] = [];
    collectFutures(futures, found);
    const values = new Map<Future, unknown>();
    const skipped = new Set<Future>();
    await Promise.all(
      found.map(async (future) => {
        if (errors === "skip" && (await future.exception()) !== undefined) skipped.add(future);
        else values.set(future, await future.result());
      }),
    );
    if (Array.isArray(futures) && skipped.size > 0) return replaceFutures(futures.filter((item) => !skipped.has(item as Future)), values);
    return replaceFutures(futures, values);
  }

  // ---- Running functions -----------------------------------------------------------------------

  /**
   * `client.run(fn, ...args, { workers })` (Dask's client.run(function, *args, workers=)): runs a
   * self-contained function on every worker's main thread (or on `workers`, by address or name)
   * as `fn(...args, worker)`, `worker` a view of the worker (address, data, transfer logs,
   * digests…): `{ [address]: result }`. The last argument is the options when it is a plain
   * object naming `workers`.
   * `client.run({ graph, keys, callbacks, signal })`: computes a graph (how `get` uses a Client).
   */
  run<R>(fn: (worker: WorkerView) => R, options?: RunOptions): Promise<Record<string, Awaited<R>>>;
  run<R>(fn: (...argsThenWorker: never[]) => R, ...argsAndOptions: unknown[]): Promise<Record<string, Awaited<R>>>;
  run(request: GraphRun): Promise<unknown>;
  async run(what: AnyFunction | GraphRun, ...args: unknown[]): Promise<unknown> {
    this.checkOpen();
    if (typeof what === "function") {
      const { workers } = trailingOptions<RunOptions>("client.run", args, RUN_OPTIONS) ?? {};
      const targets = workers === undefined ? undefined : this.diagnostics.addressesOf(workerNames("client.run", workers));
      args.forEach((arg, i) => checkSendable(arg, "client.run", i + 1));
      const spec = this.scheduler.functions.specFor(what, "client.run");
      return this.scheduler.runOnWorkers(spec, targets, args);
    }
    return computeGraph(this.scheduler, what, this.id);
  }

  /**
   * Dask's `client.get(dsk, keys, workers=, allow_other_workers=)`: `get(dsk, keys)` on this
   * client, with the other options of `get` and the placement options of `compute`.
   */
  get(dsk: GraphInput, keys: Key | readonly unknown[], options: Omit<GetOptions, "scheduler"> = {}): Promise<unknown> {
    if ("scheduler" in options) throw new TypeError("client.get runs on its client: the scheduler option is not for it");
    return get(dsk, keys, { ...options, scheduler: this });
  }

  /** Runs `fn` with the scheduler object (in this process): its task stream, workers, metrics… */
  async runOnScheduler<R>(fn: (scheduler: Scheduler) => R): Promise<Awaited<R>> {
    this.checkOpen();
    return await fn(this.scheduler);
  }

  // ---- Plugins ---------------------------------------------------------------------------------

  /**
   * Dask's `client.register_plugin(plugin, name, idempotent)`: a SchedulerPlugin runs its `start`
   * and then hears the scheduler's events (a plugin whose `start` throws is not registered); a
   * WorkerPlugin goes to every worker, now and joining later, and runs its `setup` there (the first
   * setup error is thrown). `name` defaults to the plugin's own name, else its class name with a
   * random suffix.
   */
  async registerPlugin(plugin: SchedulerPlugin | WorkerPlugin, options: RegisterPluginOptions = {}): Promise<void> {
    this.checkOpen();
    checkOptionNames("registerPlugin", options, REGISTER_PLUGIN_OPTIONS);
    if (!(plugin instanceof SchedulerPlugin) && !(plugin instanceof WorkerPlugin)) {
      throw new TypeError(`registerPlugin takes a SchedulerPlugin or a WorkerPlugin (a class extending one), got ${describe(plugin)}`);
    }
    const name = options.name ?? plugin.name ?? `${plugin.constructor.name}-${randomUUID()}`;
    const idempotent = options.idempotent ?? plugin.idempotent ?? false;
    if (plugin instanceof SchedulerPlugin) await this.scheduler.plugins.register(plugin, name, idempotent);
    else await this.scheduler.addWorkerPlugin(shipWorkerPlugin(plugin, name, idempotent, this.scheduler.functions));
  }

  /** Dask's `client.unregister_worker_plugin(name)`: every worker runs its teardown; an unknown name is an error naming it. */
  async unregisterWorkerPlugin(name: string): Promise<void> {
    this.checkOpen();
    await this.scheduler.removeWorkerPlugin(name);
  }

  /** Dask's `client.unregister_scheduler_plugin(name)`; an unknown name is an error naming it. */
  async unregisterSchedulerPlugin(name: string): Promise<void> {
    this.checkOpen();
    this.scheduler.plugins.remove(name);
  }

  // ---- Diagnosing performance (seed 003) ---------------------------------------------------------

  /**
   * Dask's `client.get_task_stream(start, stop, count)`: the task-stream records the scheduler
   * holds (the last 100 000 by default), oldest first — every task's worker, thread, result size
   * and phases (compute, transfer from a peer, disk-read, disk-write, deserialize) on the
   * scheduler's clock. With `plot`, also the plot, shown in the calling cell at once (awaited or
   * not): the handle gives `{ data, table, figure }`.
   */
  getTaskStream(options?: ClientTaskStreamOptions & { readonly plot?: false }): Promise<TaskStreamRecord[]>;
  getTaskStream(options: ClientTaskStreamOptions & { readonly plot: true | "save" }): DisplayHandle<PlottedTaskStream>;
  getTaskStream(options?: ClientTaskStreamOptions): Promise<TaskStreamRecord[]> | DisplayHandle<PlottedTaskStream>;
  getTaskStream(options: ClientTaskStreamOptions = {}): Promise<TaskStreamRecord[]> | DisplayHandle<PlottedTaskStream> {
    if (!asksForPlot(options)) return this.whenOpen(() => clientTaskStream(this.scheduler, options));
    this.checkOpen();
    return plotClientTaskStream(this.scheduler, this.diagnostics, options);
  }

  /**
   * Dask's `client.profile(key, start, stop, workers, filename, plot)`: the workers' statistical
   * profile (Dask's tree, merged over workers and threads), of one task prefix or all, of a time
   * window (scheduler clock), compute (in tasks) or administrative; `filename` also writes the
   * interactive profile as an offline HTML page. `plot: true` shows it in the calling cell
   * (awaited or not; filled in once the workers have answered): the handle gives `{ data, figure }`.
   */
  profile(options?: ClientProfileOptions & { readonly plot?: false }): Promise<ProfileNode>;
  profile(options: ClientProfileOptions & { readonly plot: true }): DisplayHandle<PlottedProfile, undefined>;
  profile(options?: ClientProfileOptions): Promise<ProfileNode> | DisplayHandle<PlottedProfile, undefined>;
  profile(options: ClientProfileOptions = {}): Promise<ProfileNode> | DisplayHandle<PlottedProfile, undefined> {
    if (options?.plot !== true) return this.whenOpen(() => clientProfile(this.diagnostics, options));
    this.checkOpen();
    return plotClientProfile(this.diagnostics, options);
  }

  /**
   * Bandwidth by data type and by (source, destination) worker pair from the workers' transfer
   * logs (Dask's "Bandwidth Types" and "Bandwidth Workers"); `plot` draws both, shown in the
   * calling cell as `profile`'s: the handle gives `{ data, figure }`.
   */
  bandwidth(options?: ClientBandwidthOptions & { readonly plot?: false }): Promise<BandwidthDetail>;
  bandwidth(options: ClientBandwidthOptions & { readonly plot: true | "save" }): DisplayHandle<PlottedBandwidth, undefined>;
  bandwidth(options?: ClientBandwidthOptions): Promise<BandwidthDetail> | DisplayHandle<PlottedBandwidth, undefined>;
  bandwidth(options: ClientBandwidthOptions = {}): Promise<BandwidthDetail> | DisplayHandle<PlottedBandwidth, undefined> {
    if (!asksForPlot(options)) return this.whenOpen(() => clientBandwidth(this.diagnostics, options));
    this.checkOpen();
    return plotClientBandwidth(this.diagnostics, options);
  }

  /** Runs `fn` on an open client, as a promise: a closed client rejects, as every other async call's does. */
  private async whenOpen<R>(fn: () => Promise<R>): Promise<R> {
    this.checkOpen();
    return fn();
  }

  // ---- Fine performance metrics and spans --------------------------------------------------------
  // Workers send what they measure with their heartbeats (every 0.5 s); these calls first wait
  // for one from each worker, begun after the call, so everything measured before it is in.

  /**
   * The cluster's fine performance metrics, Dask's `cumulative_worker_metrics`: every worker's
   * digests summed since the cluster started, without span ids, as records
   * `{ context, prefix?, activity, unit, value }` — context "execute" (per task prefix),
   * "gather-dep" (fetching inputs from peers), "get-data" (serving them), "memory-monitor"
   * (spilling under memory pressure). Per worker, with span ids: `client.run((w) => w.digestsTotal)`.
   */
  async metrics(): Promise<MetricRecord[]> {
    this.checkOpen();
    await this.scheduler.syncMetrics();
    return this.scheduler.cumulativeWorkerMetrics();
  }

  /**
   * Every span (Dask's `Span`s, in creation order): id, name, parent and children, enqueued /
   * start / stop, done, task counts by state, `activeCpuSeconds` (wall × threads while active),
   * `nbytesTotal`, and the execute metrics of its subtree with the idle time as
   * ("N/A", "idle or other spans"). Tasks submitted outside any `span()` are in spans named ["default"].
   */
  async spans(): Promise<SpanRecord[]> {
    this.checkOpen();
    await this.scheduler.syncMetrics();
    return this.scheduler.spans();
  }

  /** Everything the Fine Performance Metrics panel draws, as of now (synchronised as above). */
  async metricsData(): Promise<FpmData> {
    this.checkOpen();
    await this.scheduler.syncMetrics();
    return this.metricsSnapshot();
  }

  /**
   * Shows Dask's Fine Performance Metrics panel for the cluster (the same as
   * `FinePerformanceMetrics.visualize()`, with "Send data, by activity" from the workers'
   * get-data): in a notebook, in the calling cell at once, from what the scheduler has; the same
   * output is brought up to date once every worker's next heartbeat is in (≤ 0.5 s). Elsewhere it
   * writes a standalone HTML file (`fpm.html`) from the up-to-date metrics. Awaiting the handle
   * gives the up-to-date FpmPanel.
   */
  visualizeMetrics(options?: FpmPanelOptions): DisplayHandle<FpmPanel> {
    this.checkOpen();
    return showArrivingPanel(this.metricsSnapshot(), this.metricsData(), options);
  }

  /** The panel's data from what the scheduler has now. */
  private metricsSnapshot(): FpmData {
    const { workers } = this.scheduler;
    let threads = 0;
    for (const ws of workers.values()) threads += ws.nthreads;
    const description = `${this.cluster.description}, ${workers.size} worker${workers.size === 1 ? "" : "s"}, ${threads} thread${threads === 1 ? "" : "s"}`;
    return {
      metrics: this.scheduler.cumulativeWorkerMetrics(),
      spans: this.scheduler.spans(),
      time: now(),
      source: { description, transfers: true },
    };
  }

  // ---- Lifetime --------------------------------------------------------------------------------

  /** Releases this client's Futures and stops being the default scheduler; closes a cluster it started. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWatching();
    this.unregisterDiagnostics();
    this.leaveDashboard();
    this.unregisterMetrics();
    this.scheduler.removeClient(this.id);
    for (const hold of [...this.holds]) hold.release();
    const at = openClients.indexOf(this);
    if (at >= 0) openClients.splice(at, 1);
    setDefaultGraphScheduler(openClients[openClients.length - 1] ?? null);
    if (this.ownsCluster) await this.cluster.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  protected cardSummary(): ClusterSummary {
    const summary = this.cluster.summary();
    return this.closed ? { ...summary, status: "closed" } : summary;
  }

  // ---- Submitting --------------------------------------------------------------------------------

  /** Submits `fn(...calls[i])` as key `keys[i]`, for each i. */
  private submitCalls(fn: AnyFunction, calls: readonly (readonly unknown[])[], keys: readonly string[], restriction: WorkerRestriction | undefined): Future[] {
    this.checkOpen();
    if (typeof fn !== "function") throw new TypeError(`client.submit takes a function, got ${describe(fn)}`);
    const state = this.scheduler.state;
    const calling = calls.map((args, i) => new CallBuilder(this.scheduler, fn, keys[i], args));
    // Entries: the calls, then the keys of the Futures they use.
    const referenced = [...new Set(calling.flatMap((call) => call.references))];
    const entryOf = new Map(referenced.map((ref, i) => [ref, calls.length + i]));
    const entries = [...calling.map((call) => call.key), ...referenced];
    const prefixes = entries.map((key, i) => (i < calls.length ? keyPrefix(key) : state.prefixOf(state.slotOf(key)!)));
    const dependencyStart = new Int32Array(entries.length + 1);
    const dependencies: number[] = [];
    calling.forEach((call, i) => {
      for (const ref of call.references) dependencies.push(entryOf.get(ref)!);
      dependencyStart[i + 1] = dependencies.length;
    });
    dependencyStart.fill(dependencies.length, calls.length + 1);
    const submission: GraphSubmission = {
      keys: entries,
      names: entries.map((key, i) => (i < calls.length ? formatKey(key) : state.nameOf(state.slotOf(key)!))),
      prefixes,
      groups: prefixes,
      tasks: [...calling.map((call) => call.task), ...referenced.map(() => undefined)],
      functions: [...calling.map((call) => call.functionIds), ...referenced.map(() => [])],
      dependencyStart,
      dependencies: Int32Array.from(dependencies),
      order: Int32Array.from(entries, (_, i) => i),
      wanted: calling.map((_, i) => i),
      span: currentSpan(),
      restriction,
      client: this.id,
    };
    const slots = this.scheduler.submit(submission);
    return calling.map((call, i) => this.futureFor(call.key, call.key, slots[i]));
  }

  private futureFor(key: Key, id: string, slot: number): Future {
    const hold = new FutureHold(this.scheduler, this, slot, id, (released) => this.holds.delete(released));
    this.holds.add(hold);
    return new Future(key, hold);
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`${this.description} is closed`);
  }
}

/** One `fn(...args)` call as a wire task: Futures among the arguments become references to their keys. */
class CallBuilder {
  readonly task: WireTask;
  readonly references: string[] = [];
  readonly functionIds: number[] = [];

  constructor(
    private readonly scheduler: Scheduler,
    fn: AnyFunction,
    readonly key: string,
    args: readonly unknown[],
  ) {
    this.functionIds.push(scheduler.functions.idFor(fn, key));
    args.forEach((arg, i) => checkSendable(arg, key, i + 1, isFuture));
    this.task = ["call", this.functionIds[0], ...args.map((arg) => this.wire(arg))];
  }

  private wire(arg: unknown): WireTask {
    if (arg instanceof Future) {
      const hold = Future.holdOf(arg);
      if (hold.scheduler !== this.scheduler) throw new Error(`Future ${formatKey(arg.key)} belongs to another cluster`);
      if (hold.released) throw new Error(`Future ${formatKey(arg.key)} was released: it cannot be an argument of ${formatKey(this.key)}`);
      if (!this.references.includes(hold.keyId)) this.references.push(hold.keyId);
      return ["ref", hold.keyId];
    }
    if (Array.isArray(arg) && arg.some(containsFuture)) return ["list", ...arg.map((item) => this.wire(item))];
    if (isPlainObject(arg) && containsFuture(arg)) {
      const id = this.scheduler.functions.idFor(makeObject, this.key);
      if (!this.functionIds.includes(id)) this.functionIds.push(id);
      const entries = Object.entries(arg);
      return ["call", id, ["lit", entries.map(([name]) => name)], ...entries.map(([, value]) => this.wire(value))];
    }
    return ["lit", arg];
  }
}

export interface MapOptions extends PlacementOptions {
  /** The keys' prefix (default: the function's name), or the key of each call. */
  readonly key?: string | readonly string[];
  /** Equal calls share a key and run once (default true, Dask's pure=True). */
  readonly pure?: boolean;
}
const MAP_OPTIONS = ["key", "pure", ...PLACEMENT_OPTIONS];

export type SubmitOptions = PlacementOptions;

export interface RunOptions {
  /** The workers to run on, by address or name (default: all); an unknown one is an error naming it. */
  readonly workers?: string | readonly string[];
}
const RUN_OPTIONS = ["workers"];

export interface RegisterPluginOptions {
  /** The name to register under (default: the plugin's `name`, else its class name and a random suffix). */
  readonly name?: string;
  /** Keep a plugin already registered under the name (default: the plugin's `idempotent`, else false: replace it). */
  readonly idempotent?: boolean;
}
const REGISTER_PLUGIN_OPTIONS = ["name", "idempotent"];

export interface GatherOptions {
  /** "raise" (default): an erred Future rejects the gather; "skip": it is left out. */
  readonly errors?: "raise" | "skip";
}
const GATHER_OPTIONS = ["errors"];

/** An option nothing reads is a mistake (a misspelling, another method's option): a TypeError naming it. */
function checkOptionNames(method: string, options: object, known: readonly string[]): void {
  if (options === null || typeof options !== "object") throw new TypeError(`${method} options must be an object, got ${describe(options)}`);
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) throw new TypeError(`Unknown ${method} option "${name}"; known: ${known.join(", ")}`);
  }
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return typeof value === "string" || (typeof value === "object" && value !== null && Symbol.iterator in value);
}

function isClusterHandle(value: unknown): value is ClusterHandle {
  return typeof value === "object" && value !== null && "scheduler" in value && typeof (value as ClusterHandle).summary === "function";
}

function isFuture(value: object): boolean {
  return value instanceof Future;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

function containsFuture(value: unknown): boolean {
  if (value instanceof Future) return true;
  if (Array.isArray(value)) return value.some(containsFuture);
  if (isPlainObject(value)) return Object.values(value).some(containsFuture);
  return false;
}

function collectFutures(value: unknown, into: Future[]): void {
  if (value instanceof Future) into.push(value);
  else if (Array.isArray(value)) for (const item of value) collectFutures(item, into);
  else if (isPlainObject(value)) for (const item of Object.values(value)) collectFutures(item, into);
}

/** `value` with each Future replaced by its value in `values` (null if it has none: skipped). */
function replaceFutures(value: unknown, values: ReadonlyMap<Future, unknown>): unknown {
  if (value instanceof Future) return values.has(value) ? values.get(value) : null;
  if (Array.isArray(value)) return value.map((item) => replaceFutures(item, values));
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceFutures(v, values)]));
  return value;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return `an object of class ${value.constructor?.name ?? "(none)"}`;
  return typeof value;
}
