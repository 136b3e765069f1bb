// MemorySampler's plot: one line per label over time (or, aligned, over time since each label's
// start), memory in the binary unit that suits the largest value. Each series ends at its own last
// sample: nothing is carried past it (Dask's test of its multiseries plot asks the same). Built
// in the kernel (notebook, report) and in the browser (the dashboard's Memory Sampler panel).

import { byteUnit, formatBytes } from "../format";
import { MEASURE_TITLES, type MemorySeries } from "../memory";
import { DETAIL_LIMIT } from "./bins";
import { VEGA_LITE_SCHEMA, type VegaLiteSpec } from "./vega";

/** The largest sample of each bin of a long series, so peaks survive thinning. */
function thin(points: MemorySeries["points"], limit: number): MemorySeries["points"] {
  if (points.length <= limit) return points;
  const first = points[0][0];
  const span = points[points.length - 1][0] - first || 1;
  const kept: (typeof points)[number][] = [];
  let bin = -1;
  for (const point of points) {
    const b = Math.min(limit - 1, Math.floor(((point[0] - first) / span) * limit));
    if (b !== bin) {
      kept.push(point);
      bin = b;
    } else if (point[1] > kept[kept.length - 1][1]) {
      kept[kept.length - 1] = point;
    }
  }
  return kept;
}

/**
 * Aligned series share an origin, and runs of the same work lie on top of one another: each line
 * gets its own dash (the first solid, drawn below the others), so an earlier series shows through.
 */
const ALIGNED_DASHES: readonly (readonly number[])[] = [[1, 0], [7, 3], [2, 3], [9, 3, 2, 3], [4, 4], [1, 4]];

export interface MemorySpecOptions {
  /** Start every series at 0 s (compare runs); false: wall-clock time. */
  readonly align: boolean;
  readonly width: number;
  readonly height: number;
  readonly title: string;
  readonly config?: Readonly<Record<string, unknown>>;
}

export function memorySpec(series: readonly MemorySeries[], options: MemorySpecOptions): VegaLiteSpec {
  const peak = Math.max(0, ...series.flatMap((s) => s.points.map(([, bytes]) => bytes)));
  const { unit, size } = byteUnit(peak);
  const measures = [...new Set(series.map((s) => s.measure))];
  const values = series.flatMap((s) => {
    const start = s.points[0]?.[0] ?? 0;
    return thin(s.points, Math.ceil(DETAIL_LIMIT / Math.max(1, series.length))).map(([time, bytes]) => ({
      label: s.label,
      x: options.align ? Math.round((time - start) * 1e6) / 1e6 : time * 1000,
      value: bytes / size,
      bytes: formatBytes(bytes),
      measure: s.measure,
    }));
  });
  const x = options.align
    ? { field: "x", type: "quantitative", title: "Time since the block started (s)", scale: { zero: true, nice: false } }
    : { field: "x", type: "temporal", title: "Time", axis: { format: "%H:%M:%S" } };
  const y = { field: "value", type: "quantitative", title: `${measures.length === 1 ? MEASURE_TITLES[measures[0]] : "Memory"} (${unit})`, scale: { zero: true } };
  const color = { field: "label", type: "nominal", title: "Label", scale: { domain: series.map((s) => s.label), scheme: "tableau10" } };
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: options.title,
    width: options.width,
    height: options.height,
    data: { values },
    layer: [
      // One line per label: a line joins only its own label's points, so it stops at its last sample.
      {
        params: [{ name: "zoom", select: { type: "interval", encodings: ["x"] }, bind: "scales" }],
        mark: { type: "line", strokeWidth: 2 },
        encoding: {
          x,
          y,
          color,
          detail: { field: "label" },
          ...(options.align && {
            strokeDash: { field: "label", type: "nominal", title: "Label", scale: { domain: color.scale.domain, range: series.map((_, i) => ALIGNED_DASHES[i % ALIGNED_DASHES.length]) } },
          }),
        },
      },
      {
        mark: { type: "point", filled: true, size: 18 },
        encoding: {
          x,
          y,
          color,
          tooltip: [
            { field: "label", title: "Label" },
            options.align ? { field: "x", type: "quantitative", title: "Seconds", format: ".2f" } : { field: "x", type: "temporal", title: "Time", format: "%H:%M:%S.%L" },
            { field: "bytes", title: "Memory" },
            { field: "measure", title: "Measure" },
          ],
        },
      },
    ],
    config: { view: { stroke: null }, ...options.config },
  };
}

