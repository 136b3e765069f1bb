// The task-stream plot shown in a notebook or written to a file; the spec itself is
// protocol/plot/taskstream.ts, shared with the dashboard's live panel.

import { PREFIX_PALETTE, streamRows, taskStreamSpec } from "../../../protocol/plot/taskstream";
import type { DisplayHandle } from "../../display";
import { present } from "../../display/figure";
import { paletteColors } from "../../display/vega";
import { type ResolvedOptions, type VisualizeOptions, resolveOptions } from "../visualize/options";
import { ProfilePlot } from "../visualize/visualize";
import type { TaskStreamTable } from "./table";

/** The plot, shown in a notebook or written to `filename` (default task-stream.html), as visualize() does. */
export function taskStreamPlot(table: TaskStreamTable, options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
  const { figure, opts } = taskStreamFigure(table, options);
  return present(figure, opts, "Task stream");
}

/** taskStreamPlot's figure, not shown yet, and its options resolved (a bad one throws here). */
export function taskStreamFigure(table: TaskStreamTable, options?: VisualizeOptions): { figure: ProfilePlot; opts: ResolvedOptions } {
  const opts = taskStreamPlotOptions(options);
  const palette = options?.palette === undefined ? PREFIX_PALETTE : paletteColors(opts.palette, PREFIX_PALETTE.length);
  const spec = taskStreamSpec(table, { width: opts.width, height: options?.height, title: opts.title, palette, config: opts.config });
  const rows = streamRows(table).labels.length;
  const figure = new ProfilePlot(spec, `tsdask task stream: ${table.taskCount} tasks on ${rows} worker thread${rows === 1 ? "" : "s"}`);
  return { figure, opts };
}

/** taskStreamPlot's options, checked, with its defaults. */
export function taskStreamPlotOptions(options?: VisualizeOptions): ResolvedOptions {
  return resolveOptions({ title: "Task stream", filename: "task-stream.html", ...options });
}
