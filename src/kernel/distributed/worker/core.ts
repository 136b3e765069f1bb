// The runtime every worker has around its tasks, whatever carries them (a LocalCluster worker's
// scheduler connection, a Redis worker's task queue): its clock, what it records (fine metrics,
// transfer logs, log lines), its statistical profiler, its plugins, the live view `client.run`
// functions and plugins see, the answers to run, plugin and profile requests, and what its
// heartbeats report. A worker adds only what its transport decides: where tasks come from, where
// their data lives, when it beats, and how a reply travels.

import type { StartStop, WorkerLogLine, WorkerStatus } from "../../../protocol/records";
import { PlainRestorer } from "../../execution/buffers";
import { resolveFunction } from "../../execution/functions";
import { type FnSpec, packError } from "../../execution/wire";
import type { ProfilingOptions } from "../../profiling/hub";
import type {
  PluginAddMessage,
  PluginRemoveMessage,
  ProfileReplyMessage,
  ProfileRequestMessage,
  RunMessage,
  RunReplyMessage,
  ShippedWorkerPlugin,
  WorkerMetrics,
} from "../messages";
import type { WorkerClock } from "./clock";
import { Digests } from "./digests";
import type { TaskRun } from "./execute";
import { WorkerLog, startLines } from "./logs";
import { WorkerPlugins } from "./plugins";
import { WorkerProfiler } from "./profile";
import { TransferStats } from "./transfers";
import { type ViewSource, type WorkerMemoryView, type WorkerView, workerView } from "./view";

/** Who the worker is, as its view and start lines give it. */
export interface WorkerIdentity {
  /** Where it is reached (`unix://…` for a LocalCluster worker; a Redis worker's name). */
  readonly address: string;
  readonly name: string;
  readonly nthreads: number;
  readonly memoryLimit: number;
  /** Its own folder, or undefined for a worker with none (a Redis worker's results live in Redis). */
  readonly localDirectory: string | undefined;
}

/** The bytes a worker's results take besides the process's memory. */
export type HeldBytes = Omit<WorkerMemoryView, "process">;

/**
 * What only the worker's transport knows, read live whenever the view or a heartbeat asks: the
 * data it holds (keys in memory, least recently used first, and on disk), the bytes its results
 * take, its task counts by state (Dask's names) and the tasks it ran to an outcome.
 */
export type WorkerHoldings = Pick<ViewSource, "layout" | "has" | "get" | "nbytes" | "tasks" | "executedCount"> & {
  held(): HeldBytes;
  /** Bytes of the results it has reported holding to the scheduler (see WorkerMetrics.reportedResultBytes). */
  reportedResultBytes(): number;
};

export interface WorkerCoreOptions {
  readonly identity: WorkerIdentity;
  /** The worker's clock; the transport teaches it the scheduler's (heartbeat replies, Redis's TIME). */
  readonly clock: WorkerClock;
  /** The statistical profiler's options (checked by the caller); undefined: Dask's defaults; false: no profiler. */
  readonly profile: ProfilingOptions | false | undefined;
  readonly holdings: WorkerHoldings;
  /**
   * Whether heartbeats carry the digests since the previous one (a LocalCluster worker's way), or
   * none because each task's travel with its outcome (a Redis worker's).
   */
  readonly digestsInHeartbeats: boolean;
  /** Where a warning goes besides the log: the notebook's stderr, a Redis worker's terminal. */
  readonly print: (line: string) => void;
  /** Put before each warning, kept and printed (a Redis worker's lines name it: they go to an operator's terminal as they are). */
  readonly warningPrefix?: string;
  /** Told whether any plugin watches task transitions (a state machine then records them). */
  readonly watchTransitions?: (on: boolean) => void;
}

/** The process's CPU use between two readings, as % of one core (Dask's heartbeat "cpu"). */
class CpuMeter {
  private last = { usage: process.cpuUsage(), at: performance.now() };

  /** % of one core since the previous reading (or since the meter was made). */
  read(): number {
    const usage = process.cpuUsage();
    const at = performance.now();
    const cpuMs = (usage.user - this.last.usage.user + usage.system - this.last.usage.system) / 1000;
    const elapsedMs = at - this.last.at;
    this.last = { usage, at };
    return elapsedMs > 0 ? (100 * cpuMs) / elapsedMs : 0;
  }
}

export class WorkerCore {
  readonly clock: WorkerClock;
  /** Fine performance metrics since the worker started (Dask's digests_total). */
  readonly digests = new Digests();
  /** What it received and sent, and its bandwidth estimates. */
  readonly transfers = new TransferStats();
  /** Its recent log lines, for `client.run` and the performance report's Worker Logs tab. */
  private readonly logs = new WorkerLog();
  /** What `client.run` functions and plugins see of the worker. */
  readonly view: WorkerView;
  readonly plugins: WorkerPlugins;
  status: WorkerStatus = "running";
  private readonly profiler: WorkerProfiler;
  private readonly cpu = new CpuMeter();

  constructor(private readonly options: WorkerCoreOptions) {
    this.clock = options.clock;
    this.view = this.makeView();
    this.plugins = new WorkerPlugins(this.view, (line) => this.warn(line), options.watchTransitions ?? (() => {}));
    // Last: it starts sampling threads, which close() stops.
    this.profiler = new WorkerProfiler(options.identity.address, this.clock, options.profile);
  }

  // ---- Its log ---------------------------------------------------------------------------------

  /** Keeps a line in the worker's log (on the scheduler's clock), not printed. */
  note(level: WorkerLogLine["level"], text: string): void {
    this.logs.add({ time: this.clock.schedulerNow(), level, message: text });
  }

  /** Trouble the worker met and went on from: kept as a warning, and printed. */
  warn(text: string): void {
    const line = (this.options.warningPrefix ?? "") + text;
    this.note("WARNING", line);
    this.options.print(line);
  }

  /** Keeps what a worker logs as it starts (Dask's "Start worker at: …" block). */
  noteStart(): void {
    const { identity } = this.options;
    for (const line of startLines(identity, identity.address)) this.note("INFO", line);
  }

  // ---- Times -----------------------------------------------------------------------------------

  /** A phase of a task between two times on the worker's clock, on the scheduler's. */
  phase(action: StartStop["action"], start: number, stop: number): StartStop {
    return { action, start: this.clock.toScheduler(start), stop: this.clock.toScheduler(stop) };
  }

  /** The compute phase of a run, from its thread's measurements; none when it never ran on a thread or its thread died. */
  computePhase(run: TaskRun): StartStop | undefined {
    if (!run.ranOnThread) return undefined;
    return this.phase("compute", this.clock.fromMachine(run.start), this.clock.fromMachine(run.end));
  }

  // ---- Requests --------------------------------------------------------------------------------

  /**
   * Runs a `client.run` function with the worker's view after its arguments; the reply holds its
   * value, or the error it threw. `fn`: the function as the worker admits it (default: as sent).
   */
  async run(message: RunMessage, fn: FnSpec = message.fn): Promise<RunReplyMessage> {
    try {
      const value = await resolveFunction(fn)(...(message.args ?? []), this.view);
      return { op: "run-reply", requestId: message.requestId, ok: true, value };
    } catch (error) {
      return { op: "run-reply", requestId: message.requestId, ok: false, error: packError(error) };
    }
  }

  /** The reply to send instead of a run's value that the transport cannot encode (`error` says why). */
  unsendable(requestId: number, error: unknown): RunReplyMessage {
    const reason = new Error(`The run function's result cannot be sent back from worker ${this.options.identity.address}: ${(error as Error).message}`);
    return { op: "run-reply", requestId, ok: false, error: packError(reason) };
  }

  /**
   * Adds or removes a worker plugin, answered as a run-reply: ok, or the error its setup or
   * teardown threw. `admit`: the plugin as the worker accepts its code (throws a refusal).
   */
  async pluginReply(message: PluginAddMessage | PluginRemoveMessage, admit: (plugin: ShippedWorkerPlugin) => ShippedWorkerPlugin = (plugin) => plugin): Promise<RunReplyMessage> {
    try {
      if (message.op === "plugin-remove") await this.plugins.remove(message.name);
      else await this.plugins.add(admit(message.plugin));
      return { op: "run-reply", requestId: message.requestId, ok: true };
    } catch (error) {
      return { op: "run-reply", requestId: message.requestId, ok: false, error: packError(error) };
    }
  }

  /** The profiler's windows asked for, or none if they cannot be read (a warning says why). */
  profileReply(request: ProfileRequestMessage): Promise<ProfileReplyMessage> {
    return this.profiler.reply(request, (line) => this.warn(line));
  }

  // ---- Heartbeats ------------------------------------------------------------------------------

  /** What a heartbeat reports (Dask's Worker.get_metrics); the transfers and digests since the previous one are taken. */
  heartbeatMetrics(): WorkerMetrics {
    const { holdings, digestsInHeartbeats } = this.options;
    const held = holdings.held();
    return {
      cpu: this.cpu.read(),
      memory: process.memoryUsage.rss(),
      managedBytes: held.managed,
      reportedResultBytes: holdings.reportedResultBytes(),
      spilledBytes: { memory: held.spilled, disk: held.spilledFileBytes },
      taskCounts: holdings.tasks(),
      digests: digestsInHeartbeats ? this.digests.takeSinceHeartbeat() : [],
      ...this.transfers.takeHeartbeat(),
    };
  }

  // ---- Closing ---------------------------------------------------------------------------------

  /** Stops the profiler's sampling (the worker is closing; its plugins are torn down apart, first). */
  close(): void {
    this.profiler.close();
  }

  private makeView(): WorkerView {
    const { identity, holdings } = this.options;
    return workerView({
      ...identity,
      localDirectory: identity.localDirectory ?? "",
      status: () => this.status,
      layout: () => holdings.layout(),
      has: (key) => holdings.has(key),
      // A function sees a result's plain memory as plain, not the shared memory standing in for it.
      get: (key) => new PlainRestorer().restore(holdings.get(key)),
      nbytes: (key) => holdings.nbytes(key),
      memory: () => ({ process: process.memoryUsage.rss(), ...holdings.held() }),
      tasks: () => holdings.tasks(),
      executedCount: () => holdings.executedCount(),
      incoming: () => this.transfers.incoming.entries(),
      outgoing: () => this.transfers.outgoing.entries(),
      bandwidth: () => this.transfers.bandwidth,
      digests: () => this.digests.records(),
      digestTuples: () => this.digests.tuples(),
      clockOffset: () => this.clock.offset,
      simulatedClockOffset: this.clock.simulatedOffset,
      logs: () => this.logs.lines(),
    });
  }
}
