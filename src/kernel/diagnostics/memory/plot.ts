// MemorySampler's plot shown in a notebook or written to a file; the spec itself is
// protocol/plot/memory.ts, shared with the dashboard's Memory Sampler panel.

import type { MemorySeries } from "../../../protocol/memory";
import { memorySpec } from "../../../protocol/plot/memory";
import type { DisplayHandle } from "../../display";
import { present } from "../../display/figure";
import { type VisualizeOptions, resolveOptions } from "../visualize/options";
import { ProfilePlot } from "../visualize/visualize";

export interface MemoryPlotOptions extends VisualizeOptions {
  /** Start every series at 0 s (compare runs); default false: wall-clock time. */
  readonly align?: boolean;
}

/** The plot, shown in a notebook or written to `filename` (default memory-sampler.html). */
export function memoryPlot(series: readonly MemorySeries[], options: MemoryPlotOptions = {}): DisplayHandle<ProfilePlot> {
  const { align = false, ...rest } = options;
  if (typeof align !== "boolean") throw new TypeError(`Option align must be true or false, got ${String(align)}`);
  const opts = resolveOptions({ title: "Memory", filename: "memory-sampler.html", height: 300, ...rest });
  const spec = memorySpec(series, { align, width: opts.width, height: opts.height, title: opts.title, config: opts.config });
  const samples = series.reduce((sum, s) => sum + s.points.length, 0);
  const plot = new ProfilePlot(spec, `tsdask memory: ${series.length} series (${series.map((s) => s.label).join(", ")}), ${samples} samples`);
  return present(plot, opts, "Memory plot");
}
