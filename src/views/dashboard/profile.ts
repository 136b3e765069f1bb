// The Profile panel: the workers' statistical profile so far in the profile page's own view — an
// icicle (click a frame to zoom in), a task-prefix selector and the activity timeline, where a time
// window can be brushed — updated in place as the kernel sends newer samples.
import type { ProfileSection } from "../../protocol/dashboard";
import type { ProfileViewData } from "../../protocol";
import { type MountedProfile, mountProfile } from "../profile";
import type { SectionView } from "./kinds";

const TITLE = "Statistical profile (task threads)";

function profileViewData(section: ProfileSection): ProfileViewData {
  return { title: TITLE, kind: "compute", profile: section.packed };
}

export function mountProfilePanel(container: HTMLElement, section: ProfileSection): SectionView<ProfileSection> {
  let shown = section;
  const view: MountedProfile = mountProfile(container, profileViewData(section));
  return {
    update: (next) => {
      // The same samples again (snapshots repeat while nothing new was profiled): keep the view as it is.
      if (next.tree.count === shown.tree.count && next.packed.windows.length === shown.packed.windows.length) return;
      shown = next;
      view.update(profileViewData(next));
    },
    dispose: () => view.dispose(),
  };
}
