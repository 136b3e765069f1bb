// A cluster as a dashboard provider: its summary, workers, memory, computations' progress, fine
// performance metrics, recent task stream, bandwidth and the workers' statistical profile, read
// from the scheduler in this process (the profile fetched from the workers while tasks run).
// One ClusterFeed per scheduler, shared by every publisher that shows it (the notebook's feed while
// a Client is open, the cluster's own dashboard page). Live while tasks run; when idle, only news a
// panel would show (a worker joining, memory moving, new metrics) makes a snapshot.

import type { ClusterSection, DashboardSections, MetricsSection, TaskStreamSection } from "../../../protocol/dashboard";
import { DASHBOARD_LIMITS } from "../../../protocol/dashboard";
import type { TaskStreamRecord } from "../../../protocol/records";
import { nowMs } from "../../clock";
import type { DashboardPublisher, DashboardSource } from "../../dashboard/publisher";
import type { WorkerMetrics } from "../messages";
import type { Scheduler } from "../scheduler/scheduler";
import type { GraphSubmission } from "../scheduler/state";
import type { WorkerState } from "../scheduler/workers";
import { ClusterComputations } from "./computations";
import { ClusterProfileFollower } from "./profile";

/** What the feed needs of a cluster (a LocalCluster, or a Client's ClusterHandle). */
export interface FeedCluster {
  readonly scheduler: Scheduler;
  /** "LocalCluster 'local'". */
  readonly description: string;
  readonly dashboardLink: string | null;
}

/** Two publishers asking within this many ms get the same sections (one build for the notebook and the page). */
const REUSE_MS = 200;
/** A worker's process memory must move by this share (or MIN_MEMORY_MOVE bytes) to be news when idle. */
const MEMORY_MOVE = 0.05;
const MIN_MEMORY_MOVE = 4 * 2 ** 20;
/**
 * CPU is news when idle only when it moved this far (% of a core) from what the last snapshot
 * showed: idle heartbeats jitter, and a loaded machine's jitter crossed fixed bands every beat.
 */
const CPU_MOVE = 10;

/** What a panel shows of a worker, coarsely: a heartbeat that changes it is news. */
interface WorkerShown {
  readonly process: number;
  readonly managed: number;
  readonly spilled: number;
  readonly cpu: number;
  readonly status: string;
  readonly tasks: string;
}

function shownOf(worker: WorkerState): WorkerShown {
  const { memory } = worker;
  const tasks = worker.metrics?.taskCounts ?? {};
  return {
    process: memory.process,
    managed: memory.managed,
    spilled: memory.spilled,
    cpu: worker.cpu,
    status: worker.status,
    tasks: Object.entries(tasks)
      .filter(([, count]) => count > 0)
      .map(([state, count]) => `${state}:${count}`)
      .join(),
  };
}

function moved(before: WorkerShown, after: WorkerShown): boolean {
  const memoryMove = Math.max(MIN_MEMORY_MOVE, MEMORY_MOVE * before.process);
  return (
    Math.abs(after.process - before.process) >= memoryMove ||
    after.managed !== before.managed ||
    after.spilled !== before.spilled ||
    Math.abs(after.cpu - before.cpu) >= CPU_MOVE ||
    after.status !== before.status ||
    after.tasks !== before.tasks
  );
}

export class ClusterFeed {
  private readonly attachments = new Map<DashboardPublisher, { readonly source: DashboardSource; users: number }>();
  private readonly computations: ClusterComputations;
  private readonly profile: ClusterProfileFollower;
  private live = false;
  private built: { at: number; sections: DashboardSections } | undefined;
  /** The task-stream window last sent, by the ring's index then: rebuilt only when tasks finished. */
  private stream: { index: number; section: TaskStreamSection } | undefined;
  /** Each worker as the last snapshot showed it. */
  private readonly shown = new Map<string, WorkerShown>();

  constructor(private readonly cluster: FeedCluster) {
    this.computations = new ClusterComputations(cluster.scheduler, () => this.changed());
    this.profile = new ClusterProfileFollower(cluster.scheduler, () => this.changed());
  }

  /**
   * Provides this cluster's sections to `publisher` (as `name` in its error reports) until the
   * returned function is called. Two Clients of one cluster share one provider per publisher, so
   * its computations are listed once.
   */
  attach(publisher: DashboardPublisher, name: string): () => void {
    const attachment = this.attachments.get(publisher) ?? this.provide(publisher, name);
    attachment.users++;
    let attached = true;
    return () => {
      if (!attached) return;
      attached = false;
      if (--attachment.users > 0) return;
      this.attachments.delete(publisher);
      attachment.source.close();
      if (this.attachments.size === 0) this.listen(false);
    };
  }

  private provide(publisher: DashboardPublisher, name: string): { readonly source: DashboardSource; users: number } {
    if (this.attachments.size === 0) this.listen(true);
    const attachment = { source: publisher.provide({ name, sections: () => this.sections() }), users: 0 };
    this.attachments.set(publisher, attachment);
    if (this.live) attachment.source.setLive(true);
    return attachment;
  }

  /** The sections now (reused for REUSE_MS, so publishers asking together share one build). */
  sections(): DashboardSections {
    const time = nowMs();
    if (this.built !== undefined && time - this.built.at < REUSE_MS) return this.built.sections;
    const scheduler = this.cluster.scheduler;
    const workers = scheduler.workerRecords();
    for (const ws of scheduler.workers.values()) this.shown.set(ws.address, shownOf(ws));
    const progress = this.computations.progress();
    const profile = this.profile.current(this.live);
    const sections: DashboardSections = {
      cluster: this.summary(workers),
      workers,
      memory: scheduler.memory(),
      ...(progress.length > 0 && { progress }),
      metrics: this.metrics(workers.length),
      ...this.taskStream(),
      bandwidth: scheduler.bandwidth(),
      ...(profile !== undefined && { profile }),
    };
    this.built = { at: time, sections };
    // Nothing left to run: the snapshot just built is the last of this live stretch.
    if (this.live && !this.computations.isRunning && !this.tasksActive()) this.setLive(false);
    return sections;
  }

  private summary(workers: readonly { nthreads: number; memoryLimit: number }[]): ClusterSection {
    const { scheduler, description, dashboardLink } = this.cluster;
    let threads = 0;
    let memoryLimit = 0;
    for (const worker of workers) {
      threads += worker.nthreads;
      memoryLimit += worker.memoryLimit;
    }
    return {
      name: description,
      scheduler: scheduler.transport.description,
      status: scheduler.isClosed ? "closed" : "running",
      workers: workers.length,
      threads,
      memoryLimit,
      ...(dashboardLink !== null && { dashboardLink }),
    };
  }

  private metrics(workers: number): MetricsSection {
    const scheduler = this.cluster.scheduler;
    const threads = scheduler.state.threads;
    return {
      metrics: scheduler.cumulativeWorkerMetrics(),
      // The panel's span filter and its idle ("N/A") row come from the spans, as in the notebook's panel.
      spans: scheduler.spans(),
      source: {
        description: `${this.cluster.description}, ${workers} worker${workers === 1 ? "" : "s"}, ${threads} thread${threads === 1 ? "" : "s"}`,
        // Workers send each other data only where they hold it (not through a shared store).
        transfers: scheduler.transport.placement === "locality",
      },
    };
  }

  private taskStream(): { taskStream?: TaskStreamSection } {
    const ring = this.cluster.scheduler.taskStream;
    const index = ring.index;
    if (index === 0) return {};
    if (this.stream?.index !== index) {
      const records: TaskStreamRecord[] = ring.collect({ count: DASHBOARD_LIMITS.taskStream });
      this.stream = { index, section: { records, total: index } };
    }
    return { taskStream: this.stream.section };
  }

  private tasksActive(): boolean {
    const counts = this.cluster.scheduler.taskCounts();
    return (counts.waiting ?? 0) + (counts.queued ?? 0) + (counts.processing ?? 0) > 0;
  }

  private changed(): void {
    this.built = undefined;
    for (const { source } of this.attachments.values()) source.changed();
  }

  private setLive(live: boolean): void {
    if (this.live === live) return;
    this.live = live;
    // The run's last profile windows: fetched as it ends, shown in a snapshot after.
    if (!live && this.attachments.size > 0) this.profile.runEnded();
    for (const { source } of this.attachments.values()) source.setLive(live);
  }

  // ---- What the scheduler reports ----------------------------------------------------------------

  private listen(on: boolean): void {
    const scheduler = this.cluster.scheduler;
    if (on) {
      scheduler.on("graph-submitted", this.onSubmitted);
      scheduler.on("heartbeat", this.onHeartbeat);
      scheduler.on("worker-joined", this.onWorkersChanged);
      scheduler.on("worker-left", this.onWorkersChanged);
    } else {
      scheduler.off("graph-submitted", this.onSubmitted);
      scheduler.off("heartbeat", this.onHeartbeat);
      scheduler.off("worker-joined", this.onWorkersChanged);
      scheduler.off("worker-left", this.onWorkersChanged);
      this.computations.clear();
      this.profile.clear();
      this.setLive(false);
      this.shown.clear();
      this.built = undefined;
    }
  }

  private readonly onSubmitted = (graph: GraphSubmission, slots: Int32Array): void => {
    // Runs inside the user's submit: a dashboard problem must never fail the computation.
    try {
      this.computations.submitted(graph, slots);
    } catch (error) {
      process.emitWarning(`tsdask dashboard: could not follow a computation: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.setLive(true);
  };

  /** While live every interval publishes anyway; when idle, only what a panel would show differently is news. */
  private readonly onHeartbeat = (worker: WorkerState, metrics: WorkerMetrics): void => {
    if (this.live) return;
    const before = this.shown.get(worker.address);
    if (metrics.digests.length > 0 || metrics.transfer.incomingCount > 0 || before === undefined || moved(before, shownOf(worker))) this.changed();
  };

  private readonly onWorkersChanged = (): void => this.changed();
}

/** The one feed of each scheduler, made on first use. */
const feeds = new WeakMap<Scheduler, ClusterFeed>();

export function clusterFeed(cluster: FeedCluster): ClusterFeed {
  let feed = feeds.get(cluster.scheduler);
  if (feed === undefined) feeds.set(cluster.scheduler, (feed = new ClusterFeed(cluster)));
  return feed;
}
