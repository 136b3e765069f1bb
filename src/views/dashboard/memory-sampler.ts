// The Memory Sampler panel: the series of the kernel's last MemorySampler, one line per label, drawn
// with the same spec as `ms.plot()`; an "align" switch starts every series at 0 s (Dask's
// `plot(align=True)`), kept with the panel across reloads.
import { type MemoryMeasure, type MemoryPoint, type MemorySeries, isMemoryMeasure } from "../../protocol/memory";
import { memorySpec } from "../../protocol/plot/memory";
import type { MemorySample } from "../../protocol/records";
import { element, textElement } from "../dom";
import type { PanelContext, SectionView } from "./kinds";
import { PANEL_SPEC_WIDTH, PanelPlot } from "./panel-plot";

/** Records back into series, in the order labels first appear (the sampler's order). */
export function seriesOf(samples: readonly MemorySample[]): MemorySeries[] {
  const byLabel = new Map<string, { measure: MemoryMeasure; points: MemoryPoint[] }>();
  for (const { label, time, bytes, measure } of samples) {
    let series = byLabel.get(label);
    if (series === undefined) {
      byLabel.set(label, (series = { measure: isMemoryMeasure(measure) ? measure : "process", points: [] }));
    }
    series.points.push([time, bytes]);
  }
  return [...byLabel].map(([label, { measure, points }]) => ({ label, measure, points }));
}

export function mountMemorySamplerPanel(container: HTMLElement, samples: readonly MemorySample[], context: PanelContext): SectionView<readonly MemorySample[]> {
  const root = element("div", "tsdask-dashboard-memory-sampler", container);
  const bar = element("div", "tsdask-dashboard-summary", root);
  const summary = element("span", "", bar);
  const alignLabel = element("label", "tsdask-memory-sampler-align", bar);
  const align = element("input", "", alignLabel);
  align.type = "checkbox";
  align.checked = context.state.align === true;
  alignLabel.append(textElement("span", "", " start every series at 0 s"));
  let latest = samples;
  let series: MemorySeries[] = [];
  const plot = new PanelPlot(root, "tsdask-memory-sampler", () => memorySpec(series, { align: align.checked, width: PANEL_SPEC_WIDTH, height: 260, title: "" }));

  const draw = (): void => {
    series = seriesOf(latest);
    summary.textContent = `${series.length} series (${series.map((s) => s.label).join(", ")}) · `;
    plot.draw();
  };
  align.addEventListener("change", () => {
    context.saveState({ align: align.checked });
    draw();
  });
  draw();
  return {
    update: (next) => {
      if (next.length === latest.length && next.at(-1)?.time === latest.at(-1)?.time) return;
      latest = next;
      draw();
    },
    dispose: () => {
      plot.dispose();
      root.remove();
    },
  };
}
