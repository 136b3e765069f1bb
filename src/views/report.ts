// The performance report page (Dask's performance_report, seed 003): tabs for the summary, the
// task stream, the compute and administrative profiles, bandwidth, system CPU and memory, fine
// performance metrics and MemorySampler series. A tab is drawn the first time it is opened, so a
// report of a huge run opens fast. Everything from the data is set as text, never as markup.

import type { Result, VisualizationSpec } from "vega-embed";
import type { ProfileViewData } from "../protocol";
import { formatBytes, formatTime } from "../protocol/format";
import type { WorkerLogLine } from "../protocol/records";
import type { ReportData, ReportPart, ReportWorkerLog, VegaLiteSpecData } from "../protocol/report";
import { type FpmHandle, mountFpm } from "./fpm";
import { type MountedProfile, mountProfile } from "./profile";
import { addStyle } from "./style";
import { tooltipHtml } from "./tooltip";

type Drawer = (panel: HTMLElement) => Promise<void> | void;

interface Tab {
  readonly id: string;
  readonly label: string;
  readonly draw: Drawer;
}

/** What tests and curious users reach from the console: each tab's Vega views and profile views. */
export interface ReportHandles {
  readonly views: Record<string, Result[]>;
  readonly profiles: Record<string, MountedProfile>;
  /** The Fine Performance Metrics view, once its tab is drawn. */
  readonly fineMetrics: FpmHandle | undefined;
  /** Resolves when the tab has been drawn. */
  show(tab: string): Promise<void>;
}

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== undefined) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function embed(container: HTMLElement, spec: VegaLiteSpecData): Promise<Result> {
  const { default: vegaEmbed, vega } = await import("vega-embed");
  // The page is offline by design (its CSP forbids requests too): nothing is loaded from a URL.
  const loader = vega.loader();
  loader.sanitize = (uri: string) => Promise.reject(new Error(`tsdask reports load nothing from URLs (${uri})`));
  return vegaEmbed(container, spec as VisualizationSpec, {
    renderer: "canvas",
    ast: true,
    loader,
    actions: { export: true, source: false, compiled: false, editor: false },
    tooltip: { formatTooltip: tooltipHtml },
  });
}

function note(panel: HTMLElement, text: string): void {
  panel.append(element("p", "tsdask-report-note", text));
}

export function mountReport(container: HTMLElement, data: ReportData): ReportHandles {
  addStyle("tsdask-report-style", STYLE);
  const views: Record<string, Result[]> = {};
  const profiles: Record<string, MountedProfile> = {};
  let fineMetrics: FpmHandle | undefined;

  const specTab = (part: ReportPart<VegaLiteSpecData>, id: string): Drawer => async (panel) => {
    if (part.note !== undefined) note(panel, part.note);
    if (part.data === undefined) return;
    const holder = element("div", "tsdask-report-plot");
    panel.append(holder);
    views[id] = [await embed(holder, part.data)];
  };
  const profileTab = (part: ReportPart<ProfileViewData>, id: string): Drawer => (panel) => {
    if (part.note !== undefined) note(panel, part.note);
    if (part.data === undefined) return;
    const holder = element("div");
    panel.append(holder);
    profiles[id] = mountProfile(holder, part.data);
  };

  const tabs: Tab[] = [
    { id: "summary", label: "Summary", draw: (panel) => drawSummary(panel, data) },
    { id: "task-stream", label: "Task Stream", draw: specTab(data.taskStream, "task-stream") },
    { id: "profile-compute", label: "Worker Profile (compute)", draw: profileTab(data.computeProfile, "profile-compute") },
    { id: "profile-administrative", label: "Worker Profile (administrative)", draw: profileTab(data.administrativeProfile, "profile-administrative") },
    ...(data.schedulerProfile === undefined
      ? []
      : [{ id: "profile-scheduler", label: "Scheduler Profile (administrative)", draw: profileTab(data.schedulerProfile, "profile-scheduler") }]),
    {
      id: "bandwidth",
      label: "Bandwidth",
      draw: async (panel) => {
        const part = data.bandwidth;
        if (part.note !== undefined) note(panel, part.note);
        if (part.data === undefined) return;
        views.bandwidth = [];
        for (const spec of [part.data.types, part.data.workers]) {
          const holder = element("div", "tsdask-report-plot");
          panel.append(holder);
          views.bandwidth.push(await embed(holder, spec));
        }
      },
    },
    { id: "system", label: "System", draw: specTab(data.system, "system") },
    { id: "worker-logs", label: "Worker Logs", draw: (panel) => drawWorkerLogs(panel, data.workerLogs) },
    // Fine performance metrics with spans (Dask's report has none): drawn when the data is there.
    ...(data.fineMetrics === undefined
      ? []
      : [
          {
            id: "fine-metrics",
            label: "Fine Performance Metrics",
            draw: async (panel: HTMLElement) => {
              const part = data.fineMetrics!;
              if (part.note !== undefined) note(panel, part.note);
              if (part.data === undefined) return;
              fineMetrics = mountFpm(panel, part.data);
              await fineMetrics.whenDrawn();
            },
          },
        ]),
    { id: "memory", label: "Memory", draw: specTab(data.memory, "memory") },
  ];

  const root = element("div", "tsdask-report");
  const bar = element("div", "tsdask-report-tabs");
  bar.setAttribute("role", "tablist");
  root.append(bar);
  const drawn = new Map<string, Promise<void>>();
  const panels = new Map<string, HTMLElement>();
  const buttons = new Map<string, HTMLButtonElement>();
  for (const tab of tabs) {
    const button = element("button", "tsdask-report-tab", tab.label);
    button.type = "button";
    button.id = `tab-${tab.id}`;
    button.setAttribute("role", "tab");
    button.addEventListener("click", () => void show(tab.id));
    bar.append(button);
    buttons.set(tab.id, button);
    const panel = element("section", "tsdask-report-panel");
    panel.id = `panel-${tab.id}`;
    panel.setAttribute("role", "tabpanel");
    panel.hidden = true;
    root.append(panel);
    panels.set(tab.id, panel);
  }
  container.append(root);

  function show(id: string): Promise<void> {
    const tab = tabs.find((t) => t.id === id);
    if (tab === undefined) return Promise.reject(new Error(`no report tab ${id}`));
    for (const [other, panel] of panels) {
      panel.hidden = other !== id;
      buttons.get(other)!.setAttribute("aria-selected", String(other === id));
    }
    let done = drawn.get(id);
    if (done === undefined) {
      const panel = panels.get(id)!;
      done = Promise.resolve()
        .then(() => tab.draw(panel))
        .catch((error: unknown) => {
          note(panel, `This tab could not be drawn: ${error instanceof Error ? error.message : String(error)}`);
          console.error(error);
        });
      drawn.set(id, done);
    }
    return done;
  }
  void show("summary");
  return {
    views,
    profiles,
    get fineMetrics() {
      return fineMetrics;
    },
    show,
  };
}

function drawSummary(panel: HTMLElement, data: ReportData): void {
  const { summary } = data;
  panel.append(element("h1", undefined, data.title));
  panel.append(element("p", "tsdask-report-when", `Started ${new Date(summary.started * 1000).toLocaleString()}`));
  const cards = element("div", "tsdask-report-cards");
  const card = (label: string, value: string): void => {
    const box = element("div", "tsdask-report-card");
    box.append(element("div", "tsdask-report-card-value", value), element("div", "tsdask-report-card-label", label));
    cards.append(box);
  };
  card("duration", formatTime(summary.duration));
  card("tasks", summary.tasks.toLocaleString("en"));
  for (const phase of summary.phases) card(`${phase.action} time`, formatTime(phase.seconds));
  card("workers", String(summary.workers));
  card("threads", String(summary.threads));
  card("memory", formatBytes(summary.memory));
  panel.append(cards);

  const section = (title: string, items: readonly [string, string][]): void => {
    panel.append(element("h2", undefined, title));
    const list = element("dl", "tsdask-report-facts");
    for (const [term, value] of items) list.append(element("dt", undefined, term), element("dd", undefined, value));
    panel.append(list);
  };
  section("Tasks", [
    ["Number of tasks", summary.tasks.toLocaleString("en")],
    ...summary.phases.map((phase): [string, string] => [`${phase.action[0].toUpperCase()}${phase.action.slice(1)} time`, formatTime(phase.seconds)]),
  ]);
  section("Scheduler", [
    ["Scheduler", summary.scheduler],
    ["Workers", String(summary.workers)],
    ["Threads", String(summary.threads)],
    ["Memory", formatBytes(summary.memory)],
    ...summary.versions.map((v): [string, string] => [v.name, v.version]),
  ]);
  if (summary.workerList !== undefined && summary.workerList.length > 0) {
    panel.append(element("h2", undefined, "Workers"));
    const table = element("table", "tsdask-report-workers");
    const head = element("tr");
    for (const title of ["Name", "Address", "Threads", "Memory limit", "Clock offset (corrected)"]) head.append(element("th", undefined, title));
    table.append(head);
    for (const worker of summary.workerList) {
      const row = element("tr");
      const offset = `${worker.clockOffset >= 0 ? "+" : "−"}${formatTime(Math.abs(worker.clockOffset))}`;
      for (const cell of [worker.name, worker.address, String(worker.threads), worker.memoryLimit > 0 ? formatBytes(worker.memoryLimit) : "no limit", offset]) row.append(element("td", undefined, cell));
      table.append(row);
    }
    panel.append(table);
  }
  panel.append(element("h2", undefined, "Calling code"));
  panel.append(element("pre", "tsdask-report-code", summary.code));
}

/** Each worker's lines under its name, as text (a line may quote a task's error or key: never markup). */
function drawWorkerLogs(panel: HTMLElement, part: ReportPart<readonly ReportWorkerLog[]>): void {
  if (part.note !== undefined) note(panel, part.note);
  for (const worker of part.data ?? []) {
    panel.append(element("h2", undefined, `${worker.name} — ${worker.address}`));
    if (worker.lines.length === 0) note(panel, "No logs to report");
    else panel.append(element("pre", "tsdask-report-logs", worker.lines.map(logLineText).join("\n")));
  }
}

/** Dask's log line: "14:03:07.123456 - WARNING - message" (local time of day, microseconds). */
function logLineText(line: WorkerLogLine): string {
  const when = new Date(line.time * 1000);
  const two = (n: number): string => String(n).padStart(2, "0");
  const micros = String(Math.floor((line.time % 1) * 1e6)).padStart(6, "0");
  return `${two(when.getHours())}:${two(when.getMinutes())}:${two(when.getSeconds())}.${micros} - ${line.level} - ${line.message}`;
}

const STYLE = `
.tsdask-report { font: 14px sans-serif; color: #222; }
.tsdask-report-tabs { display: flex; flex-wrap: wrap; gap: 2px; border-bottom: 2px solid #4c78a8; position: sticky; top: 0; background: #fff; z-index: 1; }
.tsdask-report-tab { font: inherit; border: 1px solid #ccc; border-bottom: none; background: #f3f3f3; padding: 6px 12px; cursor: pointer; border-radius: 4px 4px 0 0; }
.tsdask-report-tab[aria-selected="true"] { background: #4c78a8; color: #fff; border-color: #4c78a8; }
.tsdask-report-panel { padding: 12px 4px; }
.tsdask-report-note { color: #555; font-style: italic; max-width: 60em; }
.tsdask-report-cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0 20px; }
.tsdask-report-card { border: 1px solid #ddd; border-radius: 6px; padding: 10px 16px; min-width: 110px; background: #fafafa; }
.tsdask-report-card-value { font-size: 22px; font-weight: 600; }
.tsdask-report-card-label { color: #666; }
.tsdask-report-facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
.tsdask-report-facts dt { color: #555; }
.tsdask-report-facts dd { margin: 0; }
.tsdask-report-code { background: #f6f8fa; border: 1px solid #ddd; padding: 10px; overflow: auto; max-height: 480px; }
.tsdask-report-logs { background: #f6f8fa; border: 1px solid #ddd; padding: 10px; overflow: auto; max-height: 480px; font-size: 12px; white-space: pre-wrap; }
.tsdask-report-plot { margin: 8px 0 16px; }
.tsdask-report-workers { border-collapse: collapse; }
.tsdask-report-workers th, .tsdask-report-workers td { text-align: left; padding: 3px 12px 3px 0; border-bottom: 1px solid #eee; }
.tsdask-report-workers td:nth-child(2) { font-family: monospace; font-size: 12px; color: #555; }
`;
