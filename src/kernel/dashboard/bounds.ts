// Keeping snapshots bounded whatever the providers hand over: every list is cut to its limit
// (DASHBOARD_LIMITS), newest entries kept where a list grows over time, and a profile tree is
// pruned to its heaviest nodes. A snapshot crosses zeromq, the server and a websocket twice a second.

import { DASHBOARD_LIMITS, type DashboardSections, type ProfileSection } from "../../protocol/dashboard";
import { type ProfileWindow, coarsenWindows, computeProfile, packProfile, profileTimeline } from "../../protocol/profile";
import type { ProfileNode } from "../../protocol/records";

const first = <T>(list: readonly T[], limit: number): readonly T[] => (list.length > limit ? list.slice(0, limit) : list);
const last = <T>(list: readonly T[], limit: number): readonly T[] => (list.length > limit ? list.slice(list.length - limit) : list);

/** `sections` with every list within DASHBOARD_LIMITS; untouched (the same objects) when already within. */
export function boundSections(sections: DashboardSections): DashboardSections {
  const limits = DASHBOARD_LIMITS;
  const { workers, progress, metrics, taskStream, bandwidth, profile, memorySamples } = sections;
  return {
    ...sections,
    ...(workers && { workers: first(workers, limits.workers) }),
    ...(progress && {
      progress: first(progress, limits.computations).map((run) =>
        run.groups.length > limits.progressGroups ? { ...run, groups: run.groups.slice(0, limits.progressGroups) } : run,
      ),
    }),
    ...(metrics && {
      metrics: { ...metrics, metrics: first(metrics.metrics, limits.metrics), ...(metrics.spans && { spans: first(metrics.spans, limits.spans) }) },
    }),
    ...(taskStream && { taskStream: { ...taskStream, records: last(taskStream.records, limits.taskStream) } }),
    ...(bandwidth && {
      bandwidth: { ...bandwidth, byType: first(bandwidth.byType, limits.bandwidthTypes), byWorkers: first(bandwidth.byWorkers, limits.bandwidthPairs) },
    }),
    ...(profile && {
      profile: {
        tree: pruneProfile(profile.tree, limits.profileNodes),
        ...(profile.timeline && { timeline: last(profile.timeline, limits.profileTimeline) }),
        // Built within its limits by profileSection.
        packed: profile.packed,
      },
    }),
    ...(memorySamples && { memorySamples: last(memorySamples, limits.memorySamples) }),
  };
}

/**
 * The tree cut to at most `limit` nodes, keeping the heaviest. A child never has more samples
 * than its parent, so "count above a threshold" keeps whole paths from the root; ties at the
 * threshold are kept in depth-first order until the limit. Counts are left as they were (a
 * parent's count still includes its dropped children, as in a truncated flame graph).
 */
export function pruneProfile(root: ProfileNode, limit: number): ProfileNode {
  const counts: number[] = [];
  const collect = (node: ProfileNode): void => {
    counts.push(node.count);
    for (const child of Object.values(node.children)) collect(child);
  };
  collect(root);
  if (counts.length <= limit) return root;
  counts.sort((a, b) => b - a);
  const threshold = counts[limit - 1];
  let room = limit - counts.filter((count) => count > threshold).length;
  const copy = (node: ProfileNode): ProfileNode => {
    const children: Record<string, ProfileNode> = {};
    for (const [id, child] of Object.entries(node.children)) {
      if (child.count > threshold || (child.count === threshold && room-- > 0)) children[id] = copy(child);
    }
    return { ...node, children };
  };
  if (root.count === threshold) room--;
  return copy(root);
}

/**
 * A profile's dashboard section from its cycle windows: the compute tree and timeline, and the
 * windows coarsened to DASHBOARD_LIMITS.profileWindows time bins (threads merged) with each
 * prefix's tree pruned, so the interactive view keeps prefix and time selection at a bounded size.
 */
export function profileSection(windows: readonly ProfileWindow[], interval: number): ProfileSection {
  const limits = DASHBOARD_LIMITS;
  const coarse = coarsenWindows(windows, limits.profileWindows).map((window) => ({
    ...window,
    compute: Object.fromEntries(Object.entries(window.compute).map(([prefix, tree]) => [prefix, pruneProfile(tree, limits.profileWindowNodes)])),
    administrative: pruneProfile(window.administrative, limits.profileWindowNodes),
  }));
  return {
    tree: pruneProfile(computeProfile(windows), limits.profileNodes),
    timeline: last(profileTimeline(windows), limits.profileTimeline),
    packed: packProfile(coarse, interval),
  };
}
