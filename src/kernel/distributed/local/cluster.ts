// LocalCluster: Dask's LocalCluster for Node — a scheduler in this process and worker processes
// forked from it, over Unix sockets. `await LocalCluster.start({ nWorkers, threadsPerWorker,
// memoryLimit, dashboardAddress })`, `cluster.workers`, `cluster.scale(n)`, `await cluster.close()`.

import { readFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { DEFAULT_PROFILING, checkProfilingOptions } from "../../profiling/hub";
import { DashboardPublisher } from "../../dashboard/publisher";
import { schedulerMetricsSource } from "../metrics-source";
import { DEFAULT_DASHBOARD_ADDRESS, type DashboardServer, parseDashboardAddress, serveDashboard } from "../../dashboard/server";
import { clusterFeed } from "../dashboard";
import type { WorkerStartConfig } from "../messages";
import { ClusterCard } from "../display";
import { Scheduler, type SchedulerSettings } from "../scheduler/scheduler";
import type { WorkerState } from "../scheduler/workers";
import { makeOwnedFolder, sweepStaleFolders } from "../worker/folders";
import { parseBytes } from "./sizes";
import { LocalTransport } from "./transport";
import type { WorkerProcess } from "./worker-process";

export interface LocalClusterOptions {
  /** Worker processes. Default: with threadsPerWorker, Dask's split of the available cores. */
  readonly nWorkers?: number;
  /** Task threads per worker. Default: see nWorkers (workers × threads = available cores). */
  readonly threadsPerWorker?: number;
  /**
   * Each worker's memory limit: bytes, or a size such as "2 GiB"; "auto" (default): the machine's
   * memory (or its cgroup limit) / nWorkers; 0 or null: no limit. Workers spill at 60–70 % of it,
   * pause at 80 %, and are restarted at 95 %.
   */
  readonly memoryLimit?: number | string | null;
  /**
   * Where the dashboard page serves ("host:port", ":port" or a port; loopback unless a host is
   * named); null: no dashboard. Default "127.0.0.1:8787"; a port in use falls back to a free one,
   * with a warning, as in Dask.
   */
  readonly dashboardAddress?: string | number | null;
  /**
   * Starting a cluster closes an open one of the same name started in this process, so
   * re-running the notebook cell that starts it never leaks the old one's processes. Default "local".
   */
  readonly name?: string;
  /** Dask's worker-saturation (root tasks in flight per thread); Infinity: no queuing. Default 1.1. */
  readonly workerSaturation?: number;
  /** Dask's allowed-failures: deaths a task may cause before it fails with KilledWorkerError. Default 3. */
  readonly allowedFailures?: number;
  /** Dask's `distributed.scheduler.work-stealing`: move tasks queued on busy workers to idle ones (default true). */
  readonly workStealing?: boolean;
  /** Dask's worker memory fractions (target, spill, pause; false turns one off). Defaults 0.6, 0.7, 0.8. */
  readonly memoryThresholds?: WorkerStartConfig["memoryThresholds"];
  /** For tests of clock correction: seconds added to each worker's clock, by worker number. */
  readonly simulatedClockOffsets?: readonly number[];
  /**
   * The workers' statistical profiler (Dask's distributed.worker.profile): on by default, sampling
   * every `interval` seconds (0.01) in windows of `cycle` seconds (1); false turns it off.
   */
  readonly profile?: boolean | { readonly interval?: number; readonly cycle?: number };
  /** Task-stream records the scheduler keeps (Dask's task-stream-length). Default 100 000. */
  readonly taskStreamLength?: number;
}

const OPTION_NAMES = new Set([
  "nWorkers",
  "threadsPerWorker",
  "memoryLimit",
  "dashboardAddress",
  "name",
  "workerSaturation",
  "allowedFailures",
  "workStealing",
  "memoryThresholds",
  "simulatedClockOffsets",
  "profile",
  "taskStreamLength",
]);

/** How long start waits for its workers to register. */
const START_TIMEOUT_MS = 60_000;

/** Clusters started in this process, by name (see LocalClusterOptions.name). */
const byName = new Map<string, LocalCluster>();

export class LocalCluster extends ClusterCard implements AsyncDisposable {
  protected readonly cardTitle = "LocalCluster";
  private closing: Promise<void> | undefined;
  /** The dashboard page and how to take the cluster off its feed, while served. */
  private dashboard: { readonly server: DashboardServer; readonly leave: () => void } | undefined;

  private constructor(
    readonly name: string,
    readonly scheduler: Scheduler,
    private readonly transport: LocalTransport,
    readonly threadsPerWorker: number,
    /** Bytes per worker; 0: no limit. */
    readonly memoryLimit: number,
  ) {
    super();
  }

  /** Starts the scheduler and the workers; resolves once every worker has registered. */
  static async start(options: LocalClusterOptions = {}): Promise<LocalCluster> {
    const settings = checkOptions(options);
    const earlier = byName.get(settings.name);
    if (earlier !== undefined) {
      process.stdout.write(`Closing the earlier ${earlier} (a LocalCluster of the same name started in this process)\n`);
      await earlier.close();
    }
    sweepStaleFolders("tsdask-cluster-");
    const transport = new LocalTransport(makeOwnedFolder("tsdask-cluster-"), {
      nthreads: settings.threadsPerWorker,
      memoryLimit: settings.memoryLimit,
      memoryThresholds: options.memoryThresholds,
      clockOffsets: options.simulatedClockOffsets,
      profile: settings.profile,
    });
    const scheduler = new Scheduler(transport, settings.scheduler);
    const cluster = new LocalCluster(
      settings.name,
      scheduler,
      transport,
      settings.threadsPerWorker,
      settings.memoryLimit,
    );
    byName.set(settings.name, cluster);
    try {
      await scheduler.start();
      if (settings.dashboardAddress !== null) await cluster.serveDashboard(settings.dashboardAddress);
      await cluster.scale(settings.nWorkers);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** The workers registered now, as the scheduler sees them. */
  get workers(): ReadonlyMap<string, WorkerState> {
    return this.scheduler.workers;
  }

  /** The worker processes (pids, exit status), for tests and tools. */
  get processes(): readonly WorkerProcess[] {
    return this.transport.processes;
  }

  /** The cluster's temporary folder (sockets, spill folders). */
  get folder(): string {
    return this.transport.folder;
  }

  get status(): "running" | "closed" {
    return this.closing === undefined ? "running" : "closed";
  }

  /** The dashboard page's link (`http://127.0.0.1:8787/status`), or null when there is none. */
  get dashboardLink(): string | null {
    return this.dashboard === undefined ? null : `${this.dashboard.server.url}status`;
  }

  /** "host:port" the dashboard serves on (another port than asked if that one was taken), or null. */
  get dashboardAddress(): string | null {
    if (this.dashboard === undefined) return null;
    const { host, port } = this.dashboard.server;
    return `${host.includes(":") ? `[${host}]` : host}:${port}`;
  }

  get description(): string {
    return `LocalCluster '${this.name}'`;
  }

  /** Runs `n` workers: starts new ones (resolving once they registered) or retires the newest. */
  async scale(n: number): Promise<void> {
    if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`cluster.scale takes a whole number of workers ≥ 0, got ${n}`);
    if (this.closing !== undefined) throw new Error(`${this.description} is closed`);
    const joined = this.untilWorkers(n);
    this.transport.scaleTo(n);
    await joined;
  }

  /** Stops every worker process, the scheduler and its socket, and removes the cluster's folder. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (byName.get(this.name) === this) byName.delete(this.name);
      const dashboard = this.dashboard;
      this.dashboard = undefined;
      dashboard?.leave();
      await Promise.all([this.scheduler.close(), dashboard?.server.close()]);
    })();
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  protected get transportDescription(): string {
    return this.transport.description;
  }

  /**
   * Serves the dashboard page, fed by this cluster alone (its own publisher: several clusters in
   * one process each show their own). It builds snapshots only while a page is open.
   */
  private async serveDashboard(address: string | number): Promise<void> {
    const publisher = new DashboardPublisher({ notebook: false });
    const server = await serveDashboard(address, publisher, { metrics: schedulerMetricsSource(this.scheduler) });
    if (this.closing !== undefined) {
      await server.close();
      return;
    }
    this.dashboard = { server, leave: clusterFeed(this).attach(publisher, this.description) };
  }

  /** Resolves when `n` workers are registered; rejects if a worker fails to start. */
  private untilWorkers(n: number): Promise<void> {
    const scheduler = this.scheduler;
    return new Promise((resolve, reject) => {
      const release = scheduler.hold();
      const timer = setTimeout(() => done(new Error(`${this.description}: only ${scheduler.workers.size} of ${n} workers registered within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
      const check = (): void => {
        if (scheduler.workers.size >= n) done();
      };
      const done = (error?: Error): void => {
        clearTimeout(timer);
        scheduler.off("worker-joined", check);
        this.transport.onStartFailure = () => {};
        release();
        if (error === undefined) resolve();
        else reject(error);
      };
      this.transport.onStartFailure = (name, why) => done(new Error(`${this.description}: worker ${name} could not start: ${why}`));
      scheduler.on("worker-joined", check);
      // Scaling down: the retired workers leave the scheduler as their processes exit.
      if (n < scheduler.workers.size) {
        const left = (): void => {
          if (scheduler.workers.size <= n) {
            scheduler.off("worker-left", left);
            done();
          }
        };
        scheduler.on("worker-left", left);
      } else {
        queueMicrotask(check);
      }
    });
  }
}

interface Settings {
  readonly name: string;
  readonly nWorkers: number;
  readonly threadsPerWorker: number;
  readonly memoryLimit: number;
  readonly dashboardAddress: string | number | null;
  readonly scheduler: SchedulerSettings;
  readonly profile: WorkerStartConfig["profile"];
}

/** Dask's defaults and checks; a bad option is an error naming it. */
function checkOptions(options: LocalClusterOptions): Settings {
  if (options === null || typeof options !== "object") throw new TypeError(`LocalCluster options must be an object, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw new TypeError(`Unknown LocalCluster option "${name}"; known: ${[...OPTION_NAMES].join(", ")}`);
  }
  const wholeNumber = (name: "nWorkers" | "threadsPerWorker", least: number): number | undefined => {
    const value = options[name];
    if (value === undefined) return undefined;
    if (!(Number.isInteger(value) && value >= least)) throw new RangeError(`Option ${name} must be a whole number ≥ ${least}, got ${value}`);
    return value;
  };
  const cores = availableParallelism();
  let nWorkers = wholeNumber("nWorkers", 0);
  let threadsPerWorker = wholeNumber("threadsPerWorker", 1);
  if (nWorkers === undefined && threadsPerWorker === undefined) [nWorkers, threadsPerWorker] = daskSplit(cores);
  else if (nWorkers === undefined) nWorkers = Math.max(1, Math.floor(cores / threadsPerWorker!));
  else if (threadsPerWorker === undefined) threadsPerWorker = Math.max(1, Math.floor(cores / Math.max(1, nWorkers)));
  const memoryLimit = memoryLimitOf(options.memoryLimit, Math.max(1, nWorkers));
  const dashboardAddress = options.dashboardAddress === undefined ? DEFAULT_DASHBOARD_ADDRESS : options.dashboardAddress;
  if (dashboardAddress !== null) {
    if (typeof dashboardAddress !== "string" && typeof dashboardAddress !== "number") {
      throw new TypeError(`Option dashboardAddress must be "host:port", ":port", a port or null, got ${typeof dashboardAddress}`);
    }
    try {
      parseDashboardAddress(dashboardAddress);
    } catch {
      throw new TypeError(`Option dashboardAddress must be "host:port", ":port", a port or null, got ${JSON.stringify(dashboardAddress)}`);
    }
  }
  const name = options.name ?? "local";
  if (typeof name !== "string" || name === "") throw new TypeError(`Option name must be a non-empty string, got ${JSON.stringify(name)}`);
  const offsets = options.simulatedClockOffsets;
  if (offsets !== undefined && (!Array.isArray(offsets) || !offsets.every((o) => typeof o === "number" && Number.isFinite(o)))) {
    throw new TypeError(`Option simulatedClockOffsets must be an array of seconds, got ${JSON.stringify(offsets)}`);
  }
  const taskStreamLength = options.taskStreamLength;
  if (taskStreamLength !== undefined && !(Number.isInteger(taskStreamLength) && taskStreamLength >= 1)) {
    throw new RangeError(`Option taskStreamLength must be a whole number ≥ 1, got ${taskStreamLength}`);
  }
  return {
    name,
    nWorkers,
    threadsPerWorker: threadsPerWorker!,
    memoryLimit,
    dashboardAddress,
    // TSDASK_METRICS=off: no fine performance metrics (the workers read it too), to measure what they cost (bench/cluster-fpm.ts).
    scheduler: { workerSaturation: options.workerSaturation, allowedFailures: options.allowedFailures, workStealing: options.workStealing, taskStreamLength, metrics: process.env.TSDASK_METRICS !== "off" },
    profile: profileOption(options.profile),
  };
}

/** The workers' profiler settings from the option: on with Dask's defaults unless false. */
function profileOption(option: LocalClusterOptions["profile"]): WorkerStartConfig["profile"] {
  if (option === undefined || option === true) return { ...DEFAULT_PROFILING };
  if (option === false) return false;
  if (typeof option !== "object" || option === null) throw new TypeError(`Option profile must be true, false or { interval, cycle }, got ${JSON.stringify(option)}`);
  return checkProfilingOptions(option, "LocalCluster profile option");
}

/** Dask's nprocesses_nthreads: up to 4 cores a process each; beyond, about √cores processes. */
function daskSplit(cores: number): [number, number] {
  if (cores <= 4) return [cores, 1];
  let processes = cores;
  for (let f = Math.ceil(Math.sqrt(cores)); f <= cores; f++) {
    if (cores % f === 0) {
      processes = f;
      break;
    }
  }
  return [processes, Math.floor(cores / processes)];
}

function memoryLimitOf(option: LocalClusterOptions["memoryLimit"], nWorkers: number): number {
  if (option === null || option === 0) return 0;
  if (option === undefined || option === "auto") return Math.floor(systemMemory() / nWorkers);
  if (typeof option !== "number" && typeof option !== "string") {
    throw new TypeError(`Option memoryLimit must be bytes, a size such as "2 GiB", "auto" or null, got ${typeof option}`);
  }
  return parseBytes(option, "memoryLimit");
}

/** The machine's memory, or less if this process's cgroup is limited (as Dask's MEMORY_LIMIT). */
function systemMemory(): number {
  let limit = totalmem();
  for (const path of ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]) {
    try {
      const value = Number(readFileSync(path, "utf8").trim());
      if (Number.isFinite(value) && value > 0) limit = Math.min(limit, value);
    } catch {
      // no such cgroup file here
    }
  }
  return limit;
}
