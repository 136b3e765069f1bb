// The Memory panel (Dask's "Cluster Memory" and "Memory by worker"): the cluster's process memory
// split into managed / unmanaged (old and recent) / spilled, then one bar per worker, all on one
// scale so workers compare at a glance.
import type { DashboardSnapshot } from "../../protocol/dashboard";
import type { WorkerRecord } from "../../protocol/records";
import { formatBytes, naturalOrder } from "../../protocol/format";
import { KeyedRows, element, textElement } from "../dom";
import type { PanelView } from "./kinds";
import { MEMORY_PART_LABELS, MemoryBar, type MemoryPart } from "./memory-bar";

/** A worker's name and its memory bar (managed / unmanaged / spilled), on the panel's shared scale. */
class WorkerMemoryRow {
  readonly node = element("div", "tsdask-memory-worker");
  private readonly name = element("span", "tsdask-memory-worker-name", this.node);
  private readonly bar = new MemoryBar();

  constructor() {
    this.node.append(this.bar.node);
  }

  update(worker: WorkerRecord, scale: number): void {
    this.name.textContent = worker.name;
    this.name.title = worker.address;
    const { managed, unmanaged, spilled, process } = worker.memory;
    const limit = worker.memoryLimit > 0 ? ` / ${formatBytes(worker.memoryLimit)}` : "";
    const spill = spilled > 0 ? ` + ${formatBytes(spilled)} spilled` : "";
    this.bar.update(
      [
        { part: "managed", bytes: managed },
        { part: "unmanaged", bytes: unmanaged },
        { part: "spilled", bytes: spilled },
      ],
      scale,
      `${formatBytes(process)}${limit}${spill}`,
    );
  }
}

export function mountMemoryPanel(container: HTMLElement, snapshot: DashboardSnapshot): PanelView {
  const root = element("div", "tsdask-dashboard-memory", container);
  const legend = element("div", "tsdask-memory-legend", root);
  for (const part of ["managed", "unmanaged", "unmanaged-recent", "spilled"] as const) {
    const item = element("span", "tsdask-memory-legend-item", legend);
    element("span", `tsdask-memory-swatch tsdask-memory-${part}`, item);
    item.append(MEMORY_PART_LABELS[part]);
  }
  const clusterTitle = textElement("h3", "tsdask-dashboard-heading", "Cluster", root);
  const cluster = new MemoryBar("stacked");
  root.append(cluster.node);
  textElement("h3", "tsdask-dashboard-heading", "By worker", root);
  const rows = new KeyedRows(element("div", "tsdask-memory-workers", root), (worker: WorkerRecord) => worker.address, () => new WorkerMemoryRow());

  const update = (next: DashboardSnapshot): void => {
    const workers = [...(next.workers ?? [])].sort((a, b) => naturalOrder(a.name, b.name));
    const memory = next.memory;
    const limit = next.cluster?.memoryLimit ?? workers.reduce((sum, worker) => sum + worker.memoryLimit, 0);
    clusterTitle.hidden = cluster.node.hidden = memory === undefined;
    if (memory !== undefined) {
      const parts: { part: MemoryPart; bytes: number }[] = [
        { part: "managed", bytes: memory.managed },
        { part: "unmanaged", bytes: memory.unmanagedOld },
        { part: "unmanaged-recent", bytes: memory.unmanagedRecent },
        { part: "spilled", bytes: memory.spilled },
      ];
      const text = `process ${formatBytes(memory.process)} · managed ${formatBytes(memory.managed)} · unmanaged ${formatBytes(memory.unmanaged)} · spilled ${formatBytes(memory.spilled)}${limit > 0 ? ` · limit ${formatBytes(limit)}` : ""}`;
      cluster.update(parts, limit, text);
    }
    // One scale for every worker: the largest limit (or use, if above it).
    const scale = Math.max(1, ...workers.map((worker) => Math.max(worker.memoryLimit, worker.memory.process + worker.memory.spilled)));
    rows.sync(workers, (row, worker) => row.update(worker, scale));
  };
  update(snapshot);
  return { update, dispose: () => root.remove() };
}
