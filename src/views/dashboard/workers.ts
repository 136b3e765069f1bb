// The Workers panel (Dask's "Workers" table): one row per worker — status, threads, CPU, memory
// against its limit (managed / unmanaged / spilled), tasks by state, when it was last heard of.
// Rows are kept by worker address and patched, so a sort or a selection survives updates.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { formatBytes, naturalOrder } from "../../protocol/format";
import type { WorkerRecord } from "../../protocol/records";
import { KeyedRows, element, textElement } from "../dom";
import type { PanelView } from "./kinds";
import { MemoryBar } from "./memory-bar";

const COLUMNS = ["Name", "Status", "Threads", "CPU", "Memory", "Managed", "Unmanaged", "Spilled", "Tasks", "Last seen"] as const;
const columnClass = (column: string): string => `tsdask-col-${column.toLowerCase().replace(/ /g, "-")}`;

/** "executing 2 · ready 5 · memory 10": the worker's task counts, non-zero ones, as reported. */
export function taskSummary(tasks: Readonly<Record<string, number>>): string {
  const parts = Object.entries(tasks)
    .filter(([, count]) => typeof count === "number" && count > 0)
    .map(([state, count]) => `${state} ${count}`);
  return parts.length > 0 ? parts.join(" · ") : "idle";
}

function ago(seconds: number): string {
  if (!(seconds >= 0) || seconds < 1) return "now";
  return seconds < 120 ? `${Math.round(seconds)} s ago` : `${Math.round(seconds / 60)} min ago`;
}

class WorkerRow {
  readonly node = element("tr", "tsdask-dashboard-worker");
  private readonly cells = new Map<(typeof COLUMNS)[number], HTMLTableCellElement>();
  private readonly bar = new MemoryBar("stacked");

  constructor() {
    for (const column of COLUMNS) this.cells.set(column, element("td", columnClass(column), this.node));
    this.cells.get("Memory")!.append(this.bar.node);
  }

  update(worker: WorkerRecord, time: number): void {
    const set = (column: (typeof COLUMNS)[number], text: string): void => {
      const cell = this.cells.get(column)!;
      if (cell.textContent !== text) cell.textContent = text;
    };
    set("Name", worker.name);
    this.cells.get("Name")!.title = worker.address;
    set("Status", worker.status);
    this.node.dataset.status = worker.status;
    set("Threads", String(worker.nthreads));
    set("CPU", `${Math.round(worker.cpu)}%`);
    set("Managed", formatBytes(worker.memory.managed));
    set("Unmanaged", formatBytes(worker.memory.unmanaged));
    set("Spilled", formatBytes(worker.memory.spilled));
    set("Tasks", taskSummary(worker.tasks));
    set("Last seen", ago(time - worker.lastSeen));
    this.bar.update(
      [
        { part: "managed", bytes: worker.memory.managed },
        { part: "unmanaged", bytes: worker.memory.unmanaged },
      ],
      worker.memoryLimit,
      `${formatBytes(worker.memory.process)} / ${worker.memoryLimit > 0 ? formatBytes(worker.memoryLimit) : "no limit"}`,
    );
  }
}

export function mountWorkersPanel(container: HTMLElement, snapshot: DashboardSnapshot): PanelView {
  const summary = element("div", "tsdask-dashboard-summary", container);
  const table = element("table", "tsdask-dashboard-table", container);
  const header = element("tr", "", element("thead", "", table));
  for (const column of COLUMNS) textElement("th", columnClass(column), column, header);
  const rows = new KeyedRows(element("tbody", "", table), (worker: WorkerRecord) => worker.address, () => new WorkerRow());

  const update = (next: DashboardSnapshot): void => {
    const workers = [...(next.workers ?? [])].sort((a, b) => naturalOrder(a.name, b.name));
    const cluster = next.cluster;
    const threads = workers.reduce((sum, worker) => sum + worker.nthreads, 0);
    summary.textContent =
      `${cluster !== undefined ? `${cluster.name} · ` : ""}${workers.length} worker${workers.length === 1 ? "" : "s"} · ` +
      `${threads} thread${threads === 1 ? "" : "s"}` +
      (cluster !== undefined && cluster.memoryLimit > 0 ? ` · ${formatBytes(cluster.memoryLimit)} memory` : "");
    rows.sync(workers, (row, worker) => row.update(worker, next.time));
  };
  update(snapshot);
  return {
    update,
    dispose: () => {
      summary.remove();
      table.remove();
    },
  };
}
