// Task groups (Dask's key_split of each key) and their colours. The colour scale is computed once
// per visualize() call and given to every plot, so a group has one colour in the task and cache plots.

import { type Key, keyPrefixer } from "../../graph/keys";
import { OTHER_COLOR, rankGroups } from "../../../protocol/plot/groups";
import type { ProfileSnapshot } from "../types";


export interface GroupColors {
  /** The colour group of a task group: the group itself, or OTHER_GROUP past the cap. */
  colorGroup(group: string): string;
  /** Colour groups, most important first; OTHER_GROUP last when present. */
  readonly domain: readonly string[];
  /** The Vega-Lite scale for the colour channel; the same object in every plot. */
  readonly scale: Record<string, unknown>;
}

/** The group of each record, computed once per call. */
export function groupsOf(records: readonly { readonly key: Key }[]): string[] {
  const groupOf = keyPrefixer();
  return records.map(({ key }) => groupOf(key));
}

/** The groups of every tasks and cache snapshot's records. */
export function recordGroups(snapshots: readonly ProfileSnapshot[]): Map<ProfileSnapshot, string[]> {
  const groups = new Map<ProfileSnapshot, string[]>();
  for (const snapshot of snapshots) if (snapshot.kind !== "resources") groups.set(snapshot, groupsOf(snapshot.results));
  return groups;
}

/**
 * How much each group matters, for ordering and capping: busy seconds for tasks;
 * metric × seconds held for cache entries of groups no task record names.
 */
export function groupWeights(snapshots: readonly ProfileSnapshot[], groups: ReadonlyMap<ProfileSnapshot, string[]>): Map<string, number> {
  const busy = new Map<string, number>();
  const held = new Map<string, number>();
  for (const snapshot of snapshots) {
    if (snapshot.kind === "tasks") {
      const of = groups.get(snapshot) as string[];
      snapshot.results.forEach((task, i) => add(busy, of[i], Math.max(0, task.endTime - task.startTime)));
    } else if (snapshot.kind === "cache") {
      const of = groups.get(snapshot) as string[];
      snapshot.results.forEach((entry, i) => add(held, of[i], Math.abs(entry.metric) * Math.max(0, entry.freeTime - entry.cacheTime)));
    }
  }
  // Task time ranks first (the task plot is what people read colours from); cache-only groups follow.
  const weights = new Map<string, number>();
  const order = (m: Map<string, number>): [string, number][] => [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  for (const [group, weight] of order(busy)) weights.set(group, weight);
  for (const [group, weight] of order(held)) if (!weights.has(group)) weights.set(group, weight);
  return weights;
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}


/**
 * Assigns colours to groups in order of importance (the map's order). `palette` is a list of CSS
 * colours; a Vega scheme name is turned into such a list by the caller that has Vega loaded,
 * or, in a pure build, passed on to Vega as `scheme` (then OTHER_GROUP gets a scheme colour too).
 */
export function groupColors(weights: ReadonlyMap<string, number>, palette: string | readonly string[]): GroupColors {
  const { domain, named, colorGroup } = rankGroups(weights);
  let scale: Record<string, unknown>;
  if (typeof palette === "string") {
    scale = { domain, scheme: palette };
  } else {
    const range = named.map((_, i) => palette[i % palette.length]);
    scale = { domain, range: domain.length > named.length ? [...range, OTHER_COLOR] : range };
  }
  return { colorGroup, domain, scale };
}

/** The function's name of a `[fn, ...args]` task, for tooltips; "" when the task is data or opaque. */
export function taskFunctionName(task: unknown): string {
  if (!Array.isArray(task) || typeof task[0] !== "function") return "";
  return (task[0] as { name: string }).name || "anonymous";
}
