// The task-stream plot shown in a notebook or written to a file; the spec itself is
// protocol/plot/taskstream.ts, shared with the dashboard's live panel.

import { PREFIX_PALETTE, streamRows, taskStreamSpec } from "../../../protocol/plot/taskstream";
import type { DisplayHandle } from "../../display";
import { present } from "../../display/figure";
import { paletteColors } from "../../display/vega";
import { type VisualizeOptions, resolveOptions } from "../visualize/options";
import { ProfilePlot } from "../visualize/visualize";
import type { TaskStreamTable } from "./table";

/** The plot, shown in a notebook or written to `filename` (default task-stream.html), as visualize() does. */
export function taskStreamPlot(table: TaskStreamTable, options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
  const opts = resolveOptions({ title: "Task stream", filename: "task-stream.html", ...options });
  const palette = options?.palette === undefined ? PREFIX_PALETTE : paletteColors(opts.palette, PREFIX_PALETTE.length);
  const spec = taskStreamSpec(table, { width: opts.width, height: options?.height, title: opts.title, palette, config: opts.config });
  const rows = streamRows(table).labels.length;
  const plot = new ProfilePlot(spec, `tsdask task stream: ${table.taskCount} tasks on ${rows} worker thread${rows === 1 ? "" : "s"}`);
  return present(plot, opts, "Task stream");
}
