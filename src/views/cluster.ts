// A cluster's card (LocalCluster or Client in a notebook cell): name, workers, threads, memory,
// the dashboard link, and a row per worker. Every string from the kernel goes in as textContent;
// the link's href is set only for an http(s) URL.
import type { ClusterPayload } from "../protocol";
import { formatBytes } from "../protocol/format";

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent?: Element): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== "") node.className = className;
  parent?.append(node);
  return node;
}

function memoryText(bytes: number): string {
  return bytes > 0 ? formatBytes(bytes) : "no limit";
}

export class ClusterView {
  readonly node = element("div", "tsdask-cluster");

  render(payload: ClusterPayload): void {
    this.node.replaceChildren();
    this.node.dataset.status = payload.status;
    const title = element("div", "tsdask-cluster-title", this.node);
    title.textContent = `${payload.title} '${payload.name}'${payload.status === "closed" ? " (closed)" : ""}`;
    const facts = element("dl", "tsdask-cluster-facts", this.node);
    const fact = (label: string, value: string | Node): void => {
      element("dt", "", facts).textContent = label;
      const cell = element("dd", "", facts);
      if (typeof value === "string") cell.textContent = value;
      else cell.append(value);
    };
    fact("Workers", String(payload.workers.length));
    fact("Threads", String(payload.threads));
    fact("Memory", memoryText(payload.memory));
    fact("Dashboard", this.dashboard(payload.dashboardLink));
    fact("Transport", payload.transport);
    if (payload.workers.length === 0) return;
    const table = element("table", "tsdask-cluster-workers", this.node);
    const head = element("tr", "", element("thead", "", table));
    for (const label of ["Worker", "Address", "Threads", "Memory limit", "PID"]) element("th", "", head).textContent = label;
    const body = element("tbody", "", table);
    for (const worker of payload.workers) {
      const row = element("tr", "", body);
      for (const text of [worker.name, worker.address, String(worker.nthreads), memoryText(worker.memoryLimit), String(worker.pid)]) {
        element("td", "", row).textContent = text;
      }
    }
  }

  dispose(): void {
    this.node.remove();
  }

  private dashboard(link: string | null): Node {
    if (link === null) return document.createTextNode("none");
    if (!/^https?:\/\//i.test(link)) return document.createTextNode(link);
    const anchor = document.createElement("a");
    anchor.href = link;
    anchor.target = "_blank";
    anchor.rel = "noopener noreferrer";
    anchor.textContent = link;
    return anchor;
  }
}
