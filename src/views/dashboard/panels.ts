// The dashboard's panel kinds, in sidebar order. A view plugs in with one line, its kind's `mount`:
//   mount: sectionPanel((s) => s.metrics, mountFinePerformanceMetrics),
// where the view takes (container, section data, context) and returns { update(data), dispose() }
// (or write a MountPanel on the whole snapshot). Kinds without a view yet show their empty state,
// or say that their data arrived. The sidebar, palette, page and layout restore need nothing else.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { mountBandwidthPanel } from "./bandwidth";
import { fpmData, mountFpmPanel } from "./fpm";
import { ICONS } from "./icons";
import { type PanelKind, sectionPanel } from "./kinds";
import { mountMemoryPanel } from "./memory";
import { mountMemorySamplerPanel } from "./memory-sampler";
import { mountProfilePanel } from "./profile";
import { mountProgressPanel } from "./progress";
import { mountTaskStreamPanel } from "./taskstream";
import { mountWorkersPanel } from "./workers";

const CLUSTER = "const client = await Client.connect(await LocalCluster.start());";

export const PANEL_KINDS: readonly PanelKind[] = [
  {
    id: "fpm",
    title: "Fine Performance Metrics",
    icon: ICONS.fpm,
    hasData: (s) => (s.metrics?.metrics.length ?? 0) > 0,
    empty: { text: "Fine Performance Metrics come from a cluster's workers. Connect a Client and run a computation:", code: CLUSTER },
    mount: sectionPanel(fpmData, mountFpmPanel),
  },
  {
    id: "task-stream",
    title: "Task Stream",
    icon: ICONS.taskStream,
    hasData: (s) => (s.taskStream?.records.length ?? 0) > 0,
    empty: { text: "The task stream shows each task as it runs on a cluster's workers. Connect a Client and run a computation:", code: CLUSTER },
    mount: mountTaskStreamPanel,
  },
  {
    id: "progress",
    title: "Progress",
    icon: ICONS.progress,
    hasData: (s) => (s.progress?.length ?? 0) > 0,
    empty: {
      text: "Computations show here while the dashboard feed is on, for a block or for the whole session (a Client's computations show here too):",
      code: "await withCallbacks(new DashboardFeed(), () => get(dsk, keys));\nnew DashboardFeed().register();",
    },
    mount: sectionPanel((s) => s.progress, mountProgressPanel),
  },
  {
    id: "workers",
    title: "Workers",
    icon: ICONS.workers,
    hasData: (s) => (s.workers?.length ?? 0) > 0,
    empty: { text: "Workers show here while a Client is connected to a cluster:", code: CLUSTER },
    mount: mountWorkersPanel,
  },
  {
    id: "memory",
    title: "Memory",
    icon: ICONS.memory,
    hasData: (s) => s.memory !== undefined || (s.workers?.length ?? 0) > 0,
    empty: { text: "Cluster memory (managed, unmanaged, spilled) shows here while a Client is connected to a cluster:", code: CLUSTER },
    mount: mountMemoryPanel,
  },
  {
    id: "bandwidth",
    title: "Bandwidth",
    icon: ICONS.bandwidth,
    hasData: (s) => (s.bandwidth?.byType.length ?? 0) + (s.bandwidth?.byWorkers.length ?? 0) > 0,
    empty: { text: "Bandwidth shows once a cluster's workers have moved data between them: connect a Client and run a computation whose tasks share data:", code: CLUSTER },
    mount: mountBandwidthPanel,
  },
  {
    id: "profile",
    title: "Profile",
    icon: ICONS.profile,
    hasData: (s) => (s.profile?.tree.count ?? 0) > 0,
    empty: {
      text: "The statistical profile of the task threads shows here: a Client's cluster once a computation ran, or the last StatisticalProfiler's block:",
      code: "const sp = new StatisticalProfiler();\nawait withCallbacks(sp, () => x.compute());",
    },
    mount: sectionPanel((s) => s.profile, mountProfilePanel),
  },
  {
    id: "memory-sampler",
    title: "Memory Sampler",
    icon: ICONS.memorySampler,
    hasData: (s) => (s.memorySamples?.length ?? 0) > 0,
    empty: {
      text: "The series of the last MemorySampler that recorded show here (each when its block ends):",
      code: 'const ms = new MemorySampler();\nawait ms.sample("run", () => x.compute());',
    },
    mount: sectionPanel((s) => s.memorySamples, mountMemorySamplerPanel),
  },
];

export function panelKind(id: string): PanelKind | undefined {
  return PANEL_KINDS.find((kind) => kind.id === id);
}

/** The kinds `snapshot` has data for (the sidebar's and the page's "has data" marks). */
export function kindsWithData(snapshot: DashboardSnapshot | undefined): Set<string> {
  return new Set(snapshot === undefined ? [] : PANEL_KINDS.filter((kind) => safeHasData(kind, snapshot)).map((kind) => kind.id));
}

/** hasData of a kind, false if the test itself fails on odd data (it runs on untrusted snapshots). */
export function safeHasData(kind: PanelKind, snapshot: DashboardSnapshot): boolean {
  try {
    return kind.hasData(snapshot);
  } catch {
    return false;
  }
}
