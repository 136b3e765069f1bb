// How a cluster and a client show themselves: a text summary (repr, logs, plain frontends) and,
// in a notebook, a card (tsdask's MIME type, drawn by the JupyterLab extension) with the
// workers, threads, memory and the dashboard link.

import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import { formatBytes } from "../../protocol/format";
import { type ClusterPayload, type ClusterWorkerInfo, MIME_TYPE, PROTOCOL_VERSION } from "../../protocol";
import { display, inNotebook } from "../display";
import type { WorkerState } from "./scheduler/workers";

/** What a card shows, without its title. */
export interface ClusterSummary {
  readonly name: string;
  readonly status: "running" | "closed";
  readonly transport: string;
  readonly dashboardLink: string | null;
  readonly workers: readonly ClusterWorkerInfo[];
}

/** What a cluster's card shows of each of its workers. */
export function workerInfos(workers: Iterable<WorkerState>): ClusterWorkerInfo[] {
  return [...workers].map((ws) => ({ name: ws.name, address: ws.address, nthreads: ws.nthreads, memoryLimit: ws.memoryLimit, pid: ws.registration.pid }));
}

function totals(summary: ClusterSummary): { threads: number; memory: number } {
  let threads = 0;
  let memory = 0;
  for (const worker of summary.workers) {
    threads += worker.nthreads;
    memory += worker.memoryLimit;
  }
  return { threads, memory };
}

/** One line: `LocalCluster('local', workers=2, threads=2, memory=11.68 GiB, dashboard=http://127.0.0.1:8787/status)`. */
export function clusterText(title: string, summary: ClusterSummary): string {
  const { threads, memory } = totals(summary);
  const parts = [
    JSON.stringify(summary.name).replace(/^"|"$/g, "'"),
    `workers=${summary.workers.length}`,
    `threads=${threads}`,
    `memory=${memory > 0 ? formatBytes(memory) : "no limit"}`,
  ];
  if (summary.dashboardLink !== null) parts.push(`dashboard=${summary.dashboardLink}`);
  if (summary.status === "closed") parts.push("closed");
  return `${title}(${parts.join(", ")})`;
}

export function clusterPayload(title: string, summary: ClusterSummary): ClusterPayload {
  return {
    version: PROTOCOL_VERSION,
    kind: "cluster",
    id: randomBytes(8).toString("hex"),
    seq: 0,
    title,
    ...summary,
    ...totals(summary),
  };
}

/** Shows the card in the running notebook cell; nothing outside a notebook. */
export function showCluster(title: string, summary: ClusterSummary): void {
  if (!inNotebook()) return;
  display({ [MIME_TYPE]: clusterPayload(title, summary), "text/plain": clusterText(title, summary) });
}

/** A cluster or a client as it shows itself: one line of text and, evaluated in a notebook, its card. */
export abstract class ShownAsCard {
  /** The card's title: "LocalCluster", "RedisCluster", "Client". */
  protected abstract readonly cardTitle: string;
  protected abstract cardSummary(): ClusterSummary;

  toString(): string {
    return clusterText(this.cardTitle, this.cardSummary());
  }

  /** In a notebook, evaluating the object shows its card (workers, threads, memory, dashboard link). */
  [inspect.custom](): string {
    showCluster(this.cardTitle, this.cardSummary());
    return this.toString();
  }
}

/** What every cluster summarises the same way: its workers while it runs, its transport, its link. */
export abstract class ClusterCard extends ShownAsCard {
  abstract readonly name: string;
  abstract get workers(): ReadonlyMap<string, WorkerState>;
  abstract get status(): "running" | "closed";
  abstract get dashboardLink(): string | null;
  /** The transport as the card names it ("unix sockets", "redis://host:6379/0"). */
  protected abstract get transportDescription(): string;

  summary(): ClusterSummary {
    return {
      name: this.name,
      status: this.status,
      transport: this.transportDescription,
      dashboardLink: this.dashboardLink,
      workers: this.status === "running" ? workerInfos(this.workers.values()) : [],
    };
  }

  protected cardSummary(): ClusterSummary {
    return this.summary();
  }
}
