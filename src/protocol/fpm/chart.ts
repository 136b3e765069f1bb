// The panel's charts as one Vega-Lite spec built from an FpmModel: "Task execution, by function"
// (stacked bars), "Task execution, by activity" and "Send data, by activity" (donuts with their
// total in the middle), one colour per activity and one legend for all three. The same spec is
// drawn live in the browser and rendered to the static SVG a notebook keeps.

import { axisStep, formatMetric } from "./format";
import { IDLE_PREFIX } from "./spans";
import type { FpmModel, FpmSlice } from "./model";

type Spec = Record<string, unknown>;

export interface FpmChartOptions {
  /** Pixels for the whole row of charts (default 1000). */
  readonly width?: number;
  /** A title above the charts (the static image has no selectors to say what it shows). */
  readonly title?: string;
  readonly subtitle?: string;
  /** The Send-data chart's message when nothing was sent: local schedulers never send data. */
  readonly transfers?: boolean;
}

const DONUT = 200;
/** The smallest donut a narrow panel draws, and the room a donut takes beyond its size (its title and padding). */
const MIN_DONUT = 140;
const DONUT_MARGIN = 60;
const GAP = 36;
/** Room for the bar chart's function names. */
const LABELS = 170;
/** Narrower bars than this are hard to compare. */
const MIN_BAR_WIDTH = 220;

/** Names the charts' main marks (Vega names them `<name>_marks`), so tests and users can find them in the scene. */
export const MARK_NAMES = { bars: "fpm_bars", activities: "fpm_activities", send: "fpm_send" } as const;

/**
 * The narrowest width the stacked charts fit in (bars above, donuts side by side below, the legend
 * under them), measured with short function names; longer names make a narrow panel scroll.
 */
export const FPM_MIN_WIDTH = 500;

export function fpmSpec(model: FpmModel, options: FpmChartOptions = {}): Spec {
  const width = options.width ?? 1000;
  const donuts = model.send === null ? 1 : 2;
  const besideWidth = width - LABELS - donuts * (DONUT + GAP) - 40;
  // Too narrow for one row (a panel beside a notebook): the bars on top, the donuts below them.
  const stacked = besideWidth < MIN_BAR_WIDTH;
  const barWidth = stacked ? Math.max(MIN_BAR_WIDTH, width - LABELS - 40) : besideWidth;
  // Stacked, the two donuts share the width (down to MIN_DONUT each).
  const size = stacked ? Math.max(MIN_DONUT, Math.min(DONUT, Math.floor((width - GAP) / 2) - DONUT_MARGIN)) : DONUT;
  const color = {
    field: "activity",
    type: "nominal",
    title: "Activity",
    scale: { domain: model.legend.map((entry) => entry.activity), range: model.legend.map((entry) => entry.color) },
    legend: { orient: "bottom", direction: "horizontal", columns: stacked ? 3 : 6, symbolType: "square", labelLimit: stacked ? 120 : 180 },
  };
  const rounds: Spec[] = [donut("Task execution, by activity", model.activities, model, color, MARK_NAMES.activities, size)];
  if (model.send !== null) {
    rounds.push(
      model.send.length > 0
        ? donut("Send data, by activity", model.send, model, color, MARK_NAMES.send, size)
        : emptyChart("Send data, by activity", "Nothing sent between workers", options.transfers === false ? "(local schedulers have no workers to send to)" : "", size),
    );
  }
  const bars = barChart(model, barWidth, color);
  const spec: Spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    ...(stacked ? { vconcat: [bars, { hconcat: rounds, spacing: GAP, bounds: "flush" }] } : { hconcat: [bars, ...rounds] }),
    spacing: GAP,
    resolve: { scale: { color: "shared" } },
    config: { view: { stroke: null }, axis: { labelFontSize: 11, titleFontSize: 11, titleFontWeight: "normal" }, title: { fontSize: 13, anchor: "start" } },
  };
  if (options.title !== undefined) spec.title = { text: options.title, subtitle: options.subtitle ?? "", anchor: "start", fontSize: 14, offset: 14 };
  return spec;
}

function barChart(model: FpmModel, width: number, color: Spec): Spec {
  if (model.segments.length === 0) {
    return emptyChart("Task execution, by function", model.filtered ? "Nothing in this selection" : "No task has finished yet", "", width, DONUT);
  }
  const max = Math.max(...model.functionTotals.map((total) => total.value));
  const { divisor, suffix } = axisStep(max, model.unit);
  const y = {
    field: "function",
    type: "nominal",
    sort: model.functions,
    axis: {
      title: null,
      labelLimit: LABELS,
      labelFontStyle: { condition: { test: `datum.value === '${IDLE_PREFIX}'`, value: "italic" }, value: "normal" },
      ticks: false,
      domain: false,
    },
  };
  return {
    title: "Task execution, by function",
    width,
    height: Math.max(DONUT, 22 * model.functions.length),
    layer: [
      {
        name: MARK_NAMES.bars,
        data: { values: model.segments },
        mark: { type: "bar" },
        encoding: {
          y,
          x: {
            field: "value",
            type: "quantitative",
            stack: "zero",
            title: model.unit === "seconds" ? "thread time" : model.unit,
            // Room at the right for the totals printed after each bar.
            scale: { domainMax: max * 1.18 },
            axis: { labelExpr: `format(datum.value / ${divisor}, '~g') + '${suffix === "" ? "" : ` ${suffix}`}'`, tickCount: 5, grid: true, labelFlush: true },
          },
          color,
          order: { field: "order", type: "quantitative" },
          tooltip: [
            { field: "function", title: "Function" },
            { field: "activity", title: "Activity" },
            { field: "text", title: "Value" },
            { field: "share", title: "Of the function" },
            { field: "functionTotal", title: "Function total" },
          ],
        },
      },
      {
        data: { values: model.functionTotals },
        mark: { type: "text", align: "left", baseline: "middle", dx: 4, fontSize: 10, color: "#777" },
        encoding: { y, x: { field: "value", type: "quantitative" }, text: { field: "text" } },
      },
    ],
  };
}

function donut(title: string, slices: readonly FpmSlice[], model: FpmModel, color: Spec, name: string, size: number): Spec {
  if (slices.length === 0) return emptyChart(title, "Nothing yet", "", size);
  const total = slices.reduce((sum, slice) => sum + slice.value, 0);
  const center = (text: string, dy: number, size: number, weight: string): Spec => ({
    data: { values: [{ text }] },
    mark: { type: "text", dy, fontSize: size, fontWeight: weight, align: "center", baseline: "middle" },
    encoding: { text: { field: "text" } },
  });
  return {
    title,
    width: size,
    height: size,
    layer: [
      {
        // Clockwise from 12 o'clock in the legend's order.
        name,
        data: { values: slices.map((slice, order) => ({ ...slice, order })) },
        mark: { type: "arc", innerRadius: size * 0.3, outerRadius: size * 0.48, padAngle: 0.004, stroke: null },
        encoding: {
          theta: { field: "value", type: "quantitative", stack: true },
          color,
          order: { field: "order", type: "quantitative" },
          tooltip: [
            { field: "activity", title: "Activity" },
            { field: "text", title: "Value" },
            { field: "share", title: "Share" },
          ],
        },
      },
      center(formatMetric(total, model.unit), -7, 15, "bold"),
      center("total", 11, 11, "normal"),
    ],
  };
}

function emptyChart(title: string, message: string, detail: string, width: number, height = width): Spec {
  return {
    title,
    width,
    height,
    data: { values: [{ text: detail === "" ? message : `${message}\n${detail}` }] },
    mark: { type: "text", fontSize: 12, color: "#888", align: "center", baseline: "middle", lineBreak: "\n", lineHeight: 18 },
    encoding: { text: { field: "text" }, x: { value: width / 2 }, y: { value: height / 2 } },
  };
}
