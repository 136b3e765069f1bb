// The dashboard feed: what a kernel publishes for the JupyterLab dashboard panels and the
// standalone dashboard page. One snapshot is the whole state (never a diff), bounded in size;
// every section is optional and present only when a source (a Client, a local computation) gives it.
// It travels as an update_display_data of DASHBOARD_MIME_TYPE for a display id no cell shows.

import type { FpmSource } from "./fpm";
import type { ProgressGroup, ProgressState } from "./index";
import type { PackedProfile } from "./profile";
import type {
  BandwidthSummary,
  ClusterMemory,
  MemorySample,
  MetricRecord,
  ProfileNode,
  ProfileTimelinePoint,
  SpanRecord,
  TaskStreamRecord,
  WorkerRecord,
} from "./records";

/** Its own MIME type: no cell renderer ever receives a snapshot, and cell payload kinds stay apart. */
export const DASHBOARD_MIME_TYPE = "application/vnd.tsdask.dashboard.v1+json";
export const DASHBOARD_VERSION = 1;

/** The most a snapshot carries of each list; the kernel trims longer ones (newest kept). */
export const DASHBOARD_LIMITS = {
  computations: 8,
  progressGroups: 20,
  workers: 512,
  taskStream: 1000,
  metrics: 5000,
  spans: 500,
  profileNodes: 2000,
  /** Time bins of the interactive profile, and the nodes kept of each of their trees. */
  profileWindows: 20,
  profileWindowNodes: 100,
  profileTimeline: 600,
  memorySamples: 4000,
  bandwidthPairs: 1024,
  bandwidthTypes: 64,
  errors: 8,
} as const;

/** One computation's progress, as the notebook progress bar shows it. */
export interface ComputationProgress {
  /** Stable across snapshots for one computation. */
  readonly id: string;
  /** What started it: "get", "compute", a Client's computation name… */
  readonly label: string;
  /** Epoch seconds. */
  readonly started: number;
  readonly done: number;
  readonly total: number;
  /** Seconds since `started` (to the end, once over). */
  readonly elapsed: number;
  readonly state: ProgressState;
  /** Largest first, at most DASHBOARD_LIMITS.progressGroups. */
  readonly groups: readonly ProgressGroup[];
}

/** The cluster as a whole (a LocalCluster or a Redis-backed one). */
export interface ClusterSection {
  readonly name: string;
  /** The scheduler's address (or redis URL). */
  readonly scheduler: string;
  readonly status: "running" | "closing" | "closed";
  readonly workers: number;
  readonly threads: number;
  /** Sum of the workers' memory limits, bytes. */
  readonly memoryLimit: number;
  /** The standalone dashboard page, when one is served. */
  readonly dashboardLink?: string;
}

/** Dask's Fine Performance Metrics: cumulative metrics plus the spans to filter them by. */
export interface MetricsSection {
  readonly metrics: readonly MetricRecord[];
  readonly spans?: readonly SpanRecord[];
  /** Where the tasks ran ("LocalCluster 'local', 2 workers, 4 threads"), for the panel's summary. */
  readonly source?: FpmSource;
}

/** The most recent task-stream records (the plot's window), oldest first. */
export interface TaskStreamSection {
  readonly records: readonly TaskStreamRecord[];
  /** Records ever produced (the ring's index): tells a view how many it missed. */
  readonly total: number;
}

export interface ProfileSection {
  /** The compute profile so far (all prefixes, all threads), pruned to its heaviest nodes. */
  readonly tree: ProfileNode;
  readonly timeline?: readonly ProfileTimelinePoint[];
  /** The same samples in coarse time windows by prefix, for the interactive view (prefix and time selection). */
  readonly packed: PackedProfile;
}

/** What providers give: every part optional. */
export interface DashboardSections {
  readonly cluster?: ClusterSection;
  readonly workers?: readonly WorkerRecord[];
  readonly memory?: ClusterMemory;
  /** Running and recently finished computations, running first. */
  readonly progress?: readonly ComputationProgress[];
  readonly metrics?: MetricsSection;
  readonly taskStream?: TaskStreamSection;
  readonly bandwidth?: BandwidthSummary;
  readonly profile?: ProfileSection;
  readonly memorySamples?: readonly MemorySample[];
}

export type DashboardSectionName = keyof DashboardSections;

export interface DashboardSnapshot extends DashboardSections {
  readonly version: typeof DASHBOARD_VERSION;
  /** The publishing process, random per process: a restarted kernel starts a new sequence. */
  readonly source: string;
  /** Increases with every snapshot of one source; receivers drop older ones. */
  readonly seq: number;
  /** When it was built, epoch seconds. */
  readonly time: number;
  /** Providers that failed to give their sections, with their error: `"Client: …"`. */
  readonly errors?: readonly string[];
}
