// The ResourceProfiler's plot: CPU % (left axis) and memory MB (right axis) over time, two lines
// on independent y scales. Long recordings are thinned to the peak of each time bin.

import type { ResourceData } from "../types";
import { DETAIL_LIMIT, binCount, seconds } from "../../../protocol/plot/bins";
import { timeAxis } from "./frame";
import type { PlotContext, VegaLiteSpec } from "./plot";

const CPU = "% CPU";
const MEMORY = "Memory (MB)";
const CPU_COLOR = "#4c78a8";
const MEMORY_COLOR = "#e45756";

export function resourcesPlot(samples: readonly ResourceData[], context: PlotContext): VegaLiteSpec {
  const values = samples.length <= DETAIL_LIMIT ? samples.map((s) => point(s, context)) : peaks(samples, context);
  const maxCpu = Math.max(100, ...values.map((v) => v.cpu));
  const mems = values.map((v) => v.mem);
  const minMem = mems.length > 0 ? Math.min(...mems) : 0;
  const maxMem = mems.length > 0 ? Math.max(...mems) : 100;
  const tooltip = [
    { field: "t", type: "quantitative", title: "Time (s)", format: ".3~f" },
    { field: "cpu", type: "quantitative", title: CPU, format: ".1f" },
    { field: "mem", type: "quantitative", title: MEMORY, format: ".1f" },
  ];
  // Line and hover points share a y scale; the CPU and memory pairs get one scale each.
  const series = (field: "cpu" | "mem", title: string, domain: number[], color: string, orient: "left" | "right"): VegaLiteSpec => {
    const encoding = {
      x: timeAxis(context.frame, context.bottom),
      y: { field, type: "quantitative", title, scale: { domain, nice: false, zero: false }, axis: { orient, titleColor: color, grid: false } },
      color: { datum: title, type: "nominal", scale: { domain: [CPU, MEMORY], range: [CPU_COLOR, MEMORY_COLOR] }, title: null },
    };
    return {
      layer: [
        { mark: { type: "line", strokeWidth: 2 }, encoding },
        { mark: { type: "point", filled: true, size: 16 }, encoding: { ...encoding, tooltip } },
      ],
    };
  };
  return {
    width: context.width,
    height: context.height,
    data: { values },
    layer: [
      series("cpu", CPU, [0, maxCpu], CPU_COLOR, "left"),
      // Dask keeps at least 100 MB of range so small wobbles do not look like leaks.
      series("mem", MEMORY, [minMem, Math.max(maxMem, minMem + 100)], MEMORY_COLOR, "right"),
    ],
    resolve: { scale: { y: "independent" } },
  };
}

interface Point {
  readonly t: number;
  readonly cpu: number;
  readonly mem: number;
}

function point(sample: ResourceData, context: PlotContext): Point {
  return { t: seconds(sample.time - context.frame.origin), cpu: sample.cpu, mem: sample.mem };
}

/** One point per time bin holding the bin's highest CPU and memory: peaks survive thinning. */
function peaks(samples: readonly ResourceData[], context: PlotContext): Point[] {
  const bins = binCount(context.width);
  const binWidth = context.frame.span / bins;
  const cpu = new Float64Array(bins).fill(-Infinity);
  const mem = new Float64Array(bins).fill(-Infinity);
  for (const sample of samples) {
    const bin = Math.min(bins - 1, Math.max(0, Math.floor((sample.time - context.frame.origin) / binWidth)));
    cpu[bin] = Math.max(cpu[bin], sample.cpu);
    mem[bin] = Math.max(mem[bin], sample.mem);
  }
  const points: Point[] = [];
  for (let bin = 0; bin < bins; bin++) {
    if (cpu[bin] > -Infinity) points.push({ t: seconds((bin + 0.5) * binWidth), cpu: cpu[bin], mem: mem[bin] });
  }
  return points;
}
