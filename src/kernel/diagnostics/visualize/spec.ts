// Stacks the profilers' plots top to bottom on one time axis: a shared x scale driven by one
// interval selection bound to the scales of every plot, so wheel-zoom or drag in any plot moves all.

import { VEGA_LITE_SCHEMA, ZOOM_PARAM } from "../../../protocol/plot/vega";
import type { ProfileSnapshot } from "../types";
import { cachePlot } from "./cache";
import { timeFrame } from "./frame";
import { type GroupColors, groupColors, groupWeights, recordGroups } from "./groups";
import type { PlotContext, VegaLiteSpec } from "./plot";
import { resourcesPlot } from "./resources";
import { tasksPlot } from "./tasks";


export interface SpecOptions {
  readonly width: number;
  readonly height: number;
  readonly title: string;
  /** CSS colours, or a Vega scheme name left for Vega to resolve. */
  readonly palette: string | readonly string[];
  readonly config?: Readonly<Record<string, unknown>>;
}

/** The Vega-Lite spec for one or more profiler snapshots, data inlined; a pure function. */
export function buildSpec(snapshots: readonly ProfileSnapshot[], options: SpecOptions): VegaLiteSpec {
  const frame = timeFrame(snapshots);
  const groups = recordGroups(snapshots);
  const colors: GroupColors = groupColors(groupWeights(snapshots, groups), options.palette);
  let groupLegendShown = false;
  const views = snapshots.map((snapshot, i): VegaLiteSpec => {
    const context: PlotContext = {
      frame,
      colors,
      width: options.width,
      height: options.height,
      bottom: i === snapshots.length - 1,
      groupLegendShown,
    };
    let view: VegaLiteSpec;
    if (snapshot.kind === "tasks") {
      view = tasksPlot(snapshot.results, groups.get(snapshot) as string[], context);
      groupLegendShown = true;
    } else if (snapshot.kind === "resources") {
      view = resourcesPlot(snapshot.results, context);
    } else {
      view = cachePlot(snapshot.results, groups.get(snapshot) as string[], snapshot.metricName, context);
    }
    nameFirstUnit(view, viewName(i));
    return view;
  });
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: options.title,
    params: [
      {
        name: ZOOM_PARAM,
        select: { type: "interval", encodings: ["x"] },
        bind: "scales",
        views: snapshots.map((_, i) => viewName(i)),
      },
    ],
    vconcat: views,
    spacing: 24,
    resolve: { scale: { x: "shared", color: "independent" }, legend: { color: "independent" } },
    config: { view: { stroke: null }, axis: { labelLimit: 160 }, legend: { labelLimit: 200 }, ...options.config },
  };
}

export function viewName(index: number): string {
  return `plot_${index}`;
}

/**
 * Names the plot's first single-mark view, which holds the zoom selection. Naming a layer
 * instead would put the selection into each of its layers (Vega-Lite then defines it twice);
 * one unit per plot is enough because a layer's units share the plot's area and events.
 */
function nameFirstUnit(view: VegaLiteSpec, name: string): void {
  const layers = view.layer as VegaLiteSpec[] | undefined;
  if (layers === undefined) view.name = name;
  else nameFirstUnit(layers[0], name);
}
