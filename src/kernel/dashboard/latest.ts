// Results a user makes again and again (a MemorySampler's series, a StatisticalProfiler's profile):
// the dashboard shows the latest object of each kind that produced something. One slot per kind,
// so objects made in a loop are not all kept alive by the feed.

import type { DashboardSections } from "../../protocol/dashboard";
import { type DashboardSource, dashboardPublisher } from "./publisher";

interface Shown {
  readonly owner: object;
  readonly source: DashboardSource;
  /** Builds the sections; called only when a snapshot is built for someone, then kept until the next result. */
  build: () => DashboardSections;
  built: DashboardSections | undefined;
}

const shown = new Map<string, Shown>();

/** Shows `owner`'s latest result, the sections `build` gives, on the dashboard as the latest `kind`. */
export function showLatest(kind: string, owner: object, build: () => DashboardSections): void {
  const current = shown.get(kind);
  if (current?.owner === owner) {
    current.build = build;
    current.built = undefined;
    return current.source.changed();
  }
  current?.source.close();
  const entry: Shown = {
    owner,
    build,
    built: undefined,
    source: dashboardPublisher.provide({ name: kind, sections: () => (entry.built ??= entry.build()) }),
  };
  shown.set(kind, entry);
}
