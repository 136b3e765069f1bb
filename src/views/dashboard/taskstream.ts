// The Task Stream panel (Dask's /status task stream): the kernel's most recent task records drawn
// with the same spec as getTaskStream's plot — one row per worker thread, compute by prefix,
// transfer red, disk orange — streamed into one live plot filling the panel, so zoom and hover
// survive updates. Like Dask's, it shows a rolling window of recent work: after a long quiet
// stretch, new work starts a fresh plot (protocol/plot/taskstream-window).
import type { DashboardSnapshot, TaskStreamSection } from "../../protocol/dashboard";
import { PREFIX_PALETTE, streamRows, taskStreamSpec } from "../../protocol/plot/taskstream";
import { type TaskStreamColumns, taskStreamColumns } from "../../protocol/plot/taskstream-table";
import { recentTaskStream } from "../../protocol/plot/taskstream-window";
import { element } from "../dom";
import type { PanelView } from "./kinds";
import { PANEL_SPEC_WIDTH, PanelPlot } from "./panel-plot";

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
  let threads = snapshot.cluster?.threads;
  let workers = snapshot.workers ?? [];
  let names = namesOf(snapshot);
  let columns: TaskStreamColumns = taskStreamColumns([]);
  // A height of the panel's own: the rows share it, as Dask's fill theirs.
  const plot = new PanelPlot(root, "tsdask-task-stream", () =>
    taskStreamSpec(columns, { width: PANEL_SPEC_WIDTH, height: 300, title: "", palette: PREFIX_PALETTE, stableShape: true }),
  );

  const draw = (): void => {
    const shown = recentTaskStream(latest.records, threads !== undefined && threads > 0 ? { threads } : {});
    columns = taskStreamColumns(shown);
    columns.nameWorkers(workers);
    const rows = streamRows(columns).labels.length;
    const earlier = latest.total - shown.length;
    summary.textContent =
      `${columns.taskCount} most recent task${columns.taskCount === 1 ? "" : "s"} on ${rows} worker thread${rows === 1 ? "" : "s"}` +
      (earlier > 0 ? ` · ${latest.total} in all` : "");
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
      threads = next.cluster?.threads;
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
