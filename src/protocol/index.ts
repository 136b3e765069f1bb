// The wire format shared by the kernel library and the JupyterLab extension.
// Everything the frontend shows travels as MIME_TYPE in display_data / update_display_data:
// a complete, bounded snapshot each time (never a diff), so any single message renders alone.

import type { FpmData, FpmSelection } from "./fpm";
import type { PackedProfile, ProfileKind } from "./profile";

export const MIME_TYPE = "application/vnd.tsdask.v1+json";
export const PROTOCOL_VERSION = 1;

interface PayloadBase {
  readonly version: typeof PROTOCOL_VERSION;
  /** Stable for one widget (a progress bar, a plot) across its updates. */
  readonly id: string;
  /** Increases with every update of the same id; a renderer ignores older ones. */
  readonly seq: number;
}

export type ProgressState = "running" | "finished" | "errored" | "cancelled";

/** Tasks of one key prefix ("add", "tsqr", …). */
export interface ProgressGroup {
  readonly name: string;
  readonly done: number;
  readonly total: number;
}

export interface ProgressPayload extends PayloadBase {
  readonly kind: "progress";
  readonly done: number;
  readonly total: number;
  /** Seconds since the computation started. */
  readonly elapsed: number;
  readonly state: ProgressState;
  /** At most a bounded number of groups, largest first. */
  readonly groups: readonly ProgressGroup[];
}

export interface PlotPayload extends PayloadBase {
  readonly kind: "plot";
  /**
   * A Vega-Lite 6 specification (data inlined, bounded in size by kernel-side aggregation).
   * Rows go in `data.values` or in top-level named `datasets`; nothing is loaded from URLs.
   * An update whose spec differs from the shown one only in those rows is streamed into the
   * live view (a Vega changeset); any other change re-embeds the plot.
   */
  readonly spec: Readonly<Record<string, unknown>>;
}

/** The Fine Performance Metrics panel: its data and the selection it opens with. */
export interface FpmPayload extends PayloadBase {
  readonly kind: "fpm";
  readonly data: FpmData;
  readonly selection: FpmSelection;
}

/** One worker of a cluster, as a cluster's card lists it. */
export interface ClusterWorkerInfo {
  readonly name: string;
  readonly address: string;
  readonly nthreads: number;
  /** Bytes; 0: no limit. */
  readonly memoryLimit: number;
  readonly pid: number;
}

/** A LocalCluster's or a Client's card: what a notebook shows for `cluster` or `client`. */
export interface ClusterPayload extends PayloadBase {
  readonly kind: "cluster";
  /** "LocalCluster" or "Client". */
  readonly title: string;
  /** The cluster's name. */
  readonly name: string;
  readonly status: "running" | "closed";
  /** How the scheduler reaches its workers: "unix sockets in /tmp/…", "redis://…". */
  readonly transport: string;
  /** Where the dashboard is, or null when it has none. */
  readonly dashboardLink: string | null;
  readonly workers: readonly ClusterWorkerInfo[];
  readonly threads: number;
  /** Σ memory limits, bytes. */
  readonly memory: number;
}


/** What the profile view draws: an icicle of Dask's profile trees over a timeline of activity. */
export interface ProfileViewData {
  readonly title: string;
  /** Which side of the profile the trees hold (see ProfileWindow). */
  readonly kind: ProfileKind;
  readonly profile: PackedProfile;
  /** The selection to show first (the user changes it in the view). */
  readonly prefix?: string;
  readonly start?: number;
  readonly stop?: number;
}

export interface ProfilePayload extends PayloadBase {
  readonly kind: "profile";
  readonly data: ProfileViewData;
}

export type Payload = ProgressPayload | PlotPayload | FpmPayload | ClusterPayload | ProfilePayload;

/** A Jupyter MIME bundle: MIME type → data. */
export type MimeBundle = Readonly<Record<string, unknown>>;
