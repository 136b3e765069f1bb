// What every plot builder gets: the shared time frame and colours, its size, and whether it is
// the bottom plot (only that one names the time axis, as in Dask's stacked layout).

import type { TimeFrame } from "./frame";
import type { GroupColors } from "./groups";

export type { VegaLiteSpec } from "../../display/vega";

export interface PlotContext {
  readonly frame: TimeFrame;
  readonly colors: GroupColors;
  readonly width: number;
  readonly height: number;
  /** True for the bottom plot of the stack: it carries the "Time (s)" title. */
  readonly bottom: boolean;
  /** True when a task plot above already has the group legend. */
  readonly groupLegendShown: boolean;
}

