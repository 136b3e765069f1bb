// The Profiler's plot: one rectangle per task on its worker's row, coloured by task group; above
// DETAIL_LIMIT tasks, per-worker time bins coloured by the bin's dominant group and shaded by how busy it was.

import { formatKey } from "../../graph/keys";
import type { TaskData } from "../types";
import { DETAIL_LIMIT, binIntervals, binnedEncoding, seconds } from "../../../protocol/plot/bins";
import { timeAxis } from "./frame";
import { taskFunctionName } from "./groups";
import type { PlotContext, VegaLiteSpec } from "./plot";

/** The label of a worker row; the sync scheduler runs tasks on the main thread (worker id null). */
export function workerLabel(workerId: TaskData["workerId"]): string {
  return workerId === null ? "main" : String(workerId);
}

/** Worker rows, busiest first (Dask's order), with each task's row index. */
export function workerRows(tasks: readonly TaskData[]): { labels: string[]; rowOf: Int32Array } {
  const busy = new Map<string, number>();
  const labelOf = tasks.map((task) => workerLabel(task.workerId));
  tasks.forEach((task, i) => busy.set(labelOf[i], (busy.get(labelOf[i]) ?? 0) + (task.endTime - task.startTime)));
  const labels = [...busy].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([label]) => label);
  const index = new Map(labels.map((label, i) => [label, i]));
  const rowOf = Int32Array.from(labelOf, (label) => index.get(label) as number);
  return { labels, rowOf };
}

export function tasksPlot(tasks: readonly TaskData[], groups: readonly string[], context: PlotContext): VegaLiteSpec {
  const rows = workerRows(tasks);
  const detailed = tasks.length <= DETAIL_LIMIT;
  const values = detailed ? taskMarks(tasks, groups, rows, context) : binnedMarks(tasks, groups, rows, context);
  const color = {
    field: "color",
    type: "nominal",
    title: "Task group",
    scale: context.colors.scale,
    legend: { symbolLimit: context.colors.domain.length },
  };
  const encoding: Record<string, unknown> = {
    x: timeAxis(context.frame, context.bottom),
    x2: { field: "t2" },
    y: {
      field: "worker",
      type: "nominal",
      title: "Worker",
      // Empty profilers still get a row, so the plot keeps its axes instead of collapsing.
      scale: { domain: rows.labels.length > 0 ? rows.labels : ["main"] },
      axis: { ticks: false, domain: false },
    },
    color,
    tooltip: detailed
      ? [
          { field: "key", type: "nominal", title: "Key" },
          { field: "group", type: "nominal", title: "Group" },
          { field: "fn", type: "nominal", title: "Function" },
          { field: "worker", type: "nominal", title: "Worker" },
          { field: "t", type: "quantitative", title: "Start (s)", format: ".6~f" },
          { field: "dur", type: "quantitative", title: "Duration (s)", format: ".3~g" },
        ]
      : binnedEncoding("worker", "Worker", "Tasks").tooltip,
  };
  if (!detailed) encoding.opacity = binnedEncoding("worker", "Worker", "Tasks").opacity;
  return {
    width: context.width,
    height: context.height,
    data: { values },
    mark: detailed ? { type: "rect", stroke: "white", strokeWidth: 0.5, strokeOpacity: 0.6 } : { type: "rect" },
    encoding,
    ...(detailed ? {} : { title: { text: `${tasks.length} tasks, shown in time bins`, fontSize: 11, fontWeight: "normal", anchor: "end" } }),
  };
}

function taskMarks(tasks: readonly TaskData[], groups: readonly string[], rows: ReturnType<typeof workerRows>, context: PlotContext): object[] {
  const { origin } = context.frame;
  return tasks.map((task, i) => ({
    t: seconds(task.startTime - origin),
    t2: seconds(task.endTime - origin),
    dur: task.endTime - task.startTime,
    worker: rows.labels[rows.rowOf[i]],
    key: formatKey(task.key),
    group: groups[i],
    fn: taskFunctionName(task.task),
    color: context.colors.colorGroup(groups[i]),
  }));
}

/** Per worker and time bin: the busy fraction and the colour group with the most busy time. */
function binnedMarks(tasks: readonly TaskData[], groups: readonly string[], rows: ReturnType<typeof workerRows>, context: PlotContext): object[] {
  const colorIndex = new Map(context.colors.domain.map((group, i) => [group, i]));
  return binIntervals(
    {
      starts: tasks.map((task) => task.startTime),
      ends: tasks.map((task) => task.endTime),
      rows: rows.rowOf,
      colors: groups.map((group) => colorIndex.get(context.colors.colorGroup(group)) as number),
      rowLabels: rows.labels,
      colorDomain: context.colors.domain,
    },
    context.frame.origin,
    context.frame.span,
    context.width,
  );
}
