// The Task Stream panel (Dask's /status task stream): the kernel's most recent window of task
// records drawn with the same spec as getTaskStream's plot — one row per worker thread, compute by
// prefix, transfer red, disk orange — streamed into one live plot, so zoom and hover survive updates.
import type { DashboardSnapshot, TaskStreamSection } from "../../protocol/dashboard";
import { PREFIX_PALETTE, streamRows, taskStreamSpec } from "../../protocol/plot/taskstream";
import { type TaskStreamColumns, taskStreamColumns } from "../../protocol/plot/taskstream-table";
import { element } from "../dom";
import type { PanelView } from "./kinds";
import { PanelPlot } from "./panel-plot";

/** Room the plot leaves for its row labels and legend beside the drawing area. */
const LABELS_PX = 280;
const NO_RECORDS: TaskStreamSection = { records: [], total: 0 };

/** The workers' names as the rows show them: a change redraws the plot. */
function namesOf(snapshot: DashboardSnapshot): string {
  return JSON.stringify((snapshot.workers ?? []).map((worker) => [worker.address, worker.name]));
}

/** Rows are named after the snapshot's workers (`worker-0`), not their addresses. */
export function mountTaskStreamPanel(container: HTMLElement, snapshot: DashboardSnapshot): PanelView {
  const root = element("div", "tsdask-dashboard-task-stream", container);
  const summary = element("div", "tsdask-dashboard-summary", root);
  let latest = snapshot.taskStream ?? NO_RECORDS;
  let workers = snapshot.workers ?? [];
  let names = namesOf(snapshot);
  let columns: TaskStreamColumns = taskStreamColumns([]);
  const plot = new PanelPlot(root, "tsdask-task-stream", LABELS_PX, (width) => taskStreamSpec(columns, { width, title: "", palette: PREFIX_PALETTE, stableShape: true }));

  const draw = (): void => {
    columns = taskStreamColumns(latest.records);
    columns.nameWorkers(workers);
    const rows = streamRows(columns).labels.length;
    const missed = latest.total - latest.records.length;
    summary.textContent =
      `${columns.taskCount} most recent task${columns.taskCount === 1 ? "" : "s"} on ${rows} worker thread${rows === 1 ? "" : "s"}` +
      (missed > 0 ? ` · ${latest.total} in all` : "");
    plot.draw();
  };
  draw();
  return {
    update: (next) => {
      const section = next.taskStream ?? NO_RECORDS;
      const nextNames = namesOf(next);
      // The kernel resends the same window while nothing finished: nothing to redraw then.
      if (section.total === latest.total && section.records.length === latest.records.length && nextNames === names) return;
      latest = section;
      workers = next.workers ?? [];
      names = nextNames;
      draw();
    },
    dispose: () => {
      plot.dispose();
      root.remove();
    },
  };
}
