// The Profile panel: the workers' statistical profile so far in the profile page's own view — an
// icicle (click a frame to zoom in), a task-prefix selector and the activity timeline, where a time
// window can be brushed — updated in place as the kernel sends newer samples.
import type { ProfileSection } from "../../protocol/dashboard";
import type { ProfileViewData } from "../../protocol";
import { emptyProfile, packProfile } from "../../protocol/profile";
import { type MountedProfile, mountProfile } from "../profile";
import type { SectionView } from "./kinds";

const TITLE = "Statistical profile (task threads)";
/** The profilers' default sampling interval, for a tree sent without its windows. */
const DEFAULT_INTERVAL = 0.01;

/** The view's data: the packed windows, or (from a kernel that sends only the tree) one window of it. */
export function profileViewData(section: ProfileSection, time: number): ProfileViewData {
  const profile = section.packed ?? packProfile([{ time, stop: time, source: "all", compute: { all: section.tree }, administrative: emptyProfile() }], DEFAULT_INTERVAL);
  return { title: TITLE, kind: "compute", profile };
}

export function mountProfilePanel(container: HTMLElement, section: ProfileSection): SectionView<ProfileSection> {
  let shown = section;
  const view: MountedProfile = mountProfile(container, profileViewData(section, Date.now() / 1000));
  return {
    update: (next) => {
      // The same samples again (snapshots repeat while nothing new was profiled): keep the view as it is.
      if (next.tree.count === shown.tree.count && next.packed?.windows.length === shown.packed?.windows.length) return;
      shown = next;
      view.update(profileViewData(next, Date.now() / 1000));
    },
    dispose: () => view.dispose(),
  };
}
