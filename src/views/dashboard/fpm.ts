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

/**
 * What the charts are drawn from, as text: snapshots come twice a second while a cluster runs, but
 * its metrics change only with the workers' heartbeats, and an unchanged chart need not be redrawn.
 * Running spans' budgets grow with the snapshot's time, so it counts then.
 */
function drawnFrom(data: FpmData): string {
  return JSON.stringify([data.metrics, data.spans, data.source, data.spans.some((span) => !span.done) ? data.time : 0]);
}

export function mountFpmPanel(container: HTMLElement, data: FpmData, context: PanelContext): SectionView<FpmData> {
  const view = mountFpm(container, data, savedSelection(context.state), {
    onStateChange: ({ spans, functions, unit }) => context.saveState({ spans: [...spans], functions: [...functions], unit }),
  });
  let drawn = drawnFrom(data);
  return {
    update: (next) => {
      const from = drawnFrom(next);
      if (from === drawn) return;
      drawn = from;
      void view.update(next);
    },
    dispose: () => view.dispose(),
  };
}
