// The Fine Performance Metrics panel on the dashboard: the FPM view (views/fpm) fed by a snapshot's
// metrics section, its span / function / unit selection saved with the panel, so it survives
// redraws (the view keeps it) and page reloads (the layout keeps it).
import type { DashboardSnapshot } from "../../protocol/dashboard";
import type { FpmData, FpmSelection } from "../../protocol/fpm";
import { mountFpm } from "../fpm";
import type { PanelContext, PanelState, SectionView } from "./kinds";

/** The FPM view's data from a snapshot: its metrics and spans, "now" being the snapshot's time. */
export function fpmData(snapshot: DashboardSnapshot): FpmData | undefined {
  const section = snapshot.metrics;
  if (section === undefined) return undefined;
  return { metrics: section.metrics, spans: section.spans ?? [], time: snapshot.time, ...(section.source !== undefined && { source: section.source }) };
}

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;

/** A saved selection, from the layout (JSON from the workspace): anything that is not one is left out. */
export function savedSelection(state: PanelState): Partial<FpmSelection> {
  const spans = strings(state.spans);
  const functions = strings(state.functions);
  const unit = typeof state.unit === "string" ? state.unit : undefined;
  return { ...(spans !== undefined && { spans }), ...(functions !== undefined && { functions }), ...(unit !== undefined && { unit }) };
}

export function mountFpmPanel(container: HTMLElement, data: FpmData, context: PanelContext): SectionView<FpmData> {
  const view = mountFpm(container, data, savedSelection(context.state), {
    onStateChange: ({ spans, functions, unit }) => context.saveState({ spans: [...spans], functions: [...functions], unit }),
  });
  return { update: (next) => void view.update(next), dispose: () => view.dispose() };
}
