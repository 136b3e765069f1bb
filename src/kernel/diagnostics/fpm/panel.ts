// The Fine Performance Metrics panel from the kernel: a notebook display (tsdask's MIME type,
// drawn live by the extension, plus a static SVG and a text table), or a standalone HTML file.
// In a notebook the panel shows in the calling cell at once; its SVG follows as an update.

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type InspectOptions, inspect } from "node:util";
import { type FpmData, type FpmModel, type FpmSelection, DEFAULT_SELECTION, IDLE_PREFIX, formatMetric, fpmModel, fpmSpec, fpmSummary } from "../../../protocol/fpm";
import { type FpmPayload, MIME_TYPE, type MimeBundle, PROTOCOL_VERSION } from "../../../protocol";
import { DisplayHandle, displayNow } from "../../display/handle";
import { completeInTwoSteps, inspectFigure, present } from "../../display/figure";
import { kernelChannel } from "../../display/tslab";
import { standalonePage } from "../../display/page";
import { staticImage } from "../../display/plot";

export interface FpmPanelOptions {
  /** The selectors' state to open with (default: every span and function, seconds). */
  readonly selection?: Partial<FpmSelection>;
  /** Width in pixels of the static image (the live panel fits its output). Default 1000. */
  readonly width?: number;
  /** Where the standalone HTML file goes when saving. Default "fpm.html". */
  readonly filename?: string;
  /** Write the standalone HTML file. Default: true outside a notebook, false inside one. */
  readonly save?: boolean;
}

const OPTION_NAMES = new Set(["selection", "width", "filename", "save"]);
const TITLE = "Fine performance metrics";

/** What `visualize()` made: the data and selection it shows, and ways to render it. */
export class FpmPanel {
  /** Where the standalone HTML file was saved, if it was. */
  file: string | undefined;

  constructor(
    private shown: FpmData,
    readonly selection: FpmSelection,
    private readonly width: number,
  ) {}

  /** The records and spans it draws. */
  get data(): FpmData {
    return this.shown;
  }

  /** Draws `data` from now on (a cluster's panel, once the workers' latest metrics are in); the selection stays. */
  update(data: FpmData): void {
    this.shown = data;
  }

  /** One line saying what the panel shows. */
  get summary(): string {
    return heading(this.data, fpmModel(this.data, this.selection));
  }

  /** The charts' Vega-Lite spec for the panel's selection (edit it to restyle the static image). */
  spec(): Record<string, unknown> {
    const model = fpmModel(this.data, this.selection);
    return fpmSpec(model, { width: this.width, title: TITLE, subtitle: `${this.data.source?.description ?? "tsdask"}: ${fpmSummary(model)}`, transfers: this.data.source?.transfers });
  }

  /** A static SVG of the charts, rendered in Node (no per-mark labels: the live panel has them). */
  toSVG(): Promise<string> {
    return staticImage(this.spec());
  }

  /** The image a notebook keeps: the static SVG. */
  notebookImage(): Promise<string> {
    return this.toSVG();
  }

  /** A standalone, offline HTML page with the live panel (selectors included). */
  toHTML(): string {
    return standalonePage({
      title: TITLE,
      body: `<div id="tsdask-fpm"></div>`,
      data: { "tsdask-fpm-data": this.data, "tsdask-fpm-selection": this.selection },
      script: PAGE_SCRIPT,
    });
  }

  /** Writes toHTML() to `filename` and returns its absolute path. */
  save(filename: string): string {
    const path = resolve(filename);
    writeFileSync(path, this.toHTML());
    return path;
  }

  /** The notebook display: tsdask's MIME type, a static SVG, the text table. */
  async toMimeBundle(): Promise<MimeBundle> {
    return { ...this.liveBundle(randomUUID(), 0), "image/svg+xml": await this.toSVG() };
  }

  /** The bundle without the static image: what a notebook shows at once. */
  liveBundle(id: string, seq: number): MimeBundle {
    const payload: FpmPayload = { version: PROTOCOL_VERSION, id, seq, kind: "fpm", data: this.data, selection: this.selection };
    return { [MIME_TYPE]: payload, "text/plain": metricsTable(this.data, this.selection) };
  }

  /** The breakdown it shows, as a text table (functions by activity, in the selection's unit). */
  toString(): string {
    return metricsTable(this.data, this.selection);
  }

  /** Printed as its summary; left as a notebook cell's value, also shown. */
  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectFigure(this, `FpmPanel { ${this.summary}${this.file === undefined ? "" : `, saved to ${this.file}`} }`, depth, options);
  }
}

/** The standalone page mounts the same view the extension uses (the bundle's `mountFpm`). */
const PAGE_SCRIPT = `
(function () {
  var read = function (id) { return JSON.parse(document.getElementById(id).textContent); };
  window.__tsdaskFpm = tsdaskViews.mountFpm(document.getElementById("tsdask-fpm"), read("tsdask-fpm-data"), read("tsdask-fpm-selection"));
})();
`;

export function showPanel(data: FpmData, options: FpmPanelOptions = {}): DisplayHandle<FpmPanel> {
  return present(newPanel(data, options), { filename: options.filename ?? "fpm.html", save: options.save }, TITLE);
}

/**
 * The panel of metrics still on their way (a cluster's arrive with the workers' next heartbeats):
 * shown in the calling cell at once from `now`, then, once `latest` has the rest, the same output
 * is replaced by the panel of the latest data with its static image. Outside a notebook the file
 * is written from the latest data. Awaiting the handle gives the panel of the latest data.
 * Each state of the output (panel, image, text) is drawn from one snapshot, and the line printed
 * for the handle names no figures: it is printed before the latest data is in.
 */
export function showArrivingPanel(now: FpmData, latest: Promise<FpmData>, options: FpmPanelOptions = {}): DisplayHandle<FpmPanel> {
  const panel = newPanel(now, options);
  const notebook = kernelChannel() !== null;
  const save = options.save ?? !notebook;
  const filename = options.filename ?? "fpm.html";
  const arrived = latest.then((data) => {
    panel.update(data);
    if (save) panel.file = panel.save(filename);
    if (save && !notebook) console.log(`${TITLE} written to ${panel.file}`);
    return panel;
  });
  const summary = `${TITLE} (${now.source?.description ?? "tsdask"}), as of every worker's next heartbeat`;
  if (!notebook) return new DisplayHandle(panel, summary, false, arrived);
  return displayNow(panel.liveBundle(randomUUID(), 0), {
    summary,
    value: panel,
    complete: async (update) => completeInTwoSteps(await arrived, update),
  });
}

function newPanel(data: FpmData, options: FpmPanelOptions): FpmPanel {
  if (options === null || typeof options !== "object") throw new TypeError(`visualize options must be an object, got ${String(options)}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw new TypeError(`Unknown visualize option "${name}"; known: ${[...OPTION_NAMES].join(", ")}`);
  }
  const width = options.width ?? 1000;
  if (!(Number.isFinite(width) && width >= 400)) throw new TypeError(`Option width must be a number of pixels ≥ 400, got ${String(width)}`);
  return new FpmPanel(data, { ...DEFAULT_SELECTION, ...options.selection }, width);
}

/** The breakdown as a text table: functions (rows) by activity (columns), for terminals and text/plain. */
export function metricsTable(data: FpmData, selection: FpmSelection = DEFAULT_SELECTION): string {
  const model = fpmModel(data, selection);
  if (model.segments.length === 0) return heading(data, model);
  const activities = model.legend.map((entry) => entry.activity).filter((activity) => model.segments.some((s) => s.activity === activity));
  const rows = model.functions.map((fn) => {
    const segments = model.segments.filter((segment) => segment.function === fn);
    const cells = activities.map((activity) => segments.find((segment) => segment.activity === activity)?.text ?? "");
    return [fn === IDLE_PREFIX ? `${fn} (no task)` : fn, ...cells, segments[0]?.functionTotal ?? ""];
  });
  const table = [["function", ...activities, "total"], ...rows];
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  const lines = table.map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  "));
  const budget = model.budget === undefined ? "" : `\nthread budget (wall × threads): ${formatMetric(model.budget, "seconds")}`;
  return `${heading(data, model)}\n${lines.join("\n")}${budget}`;
}

/** "Fine performance metrics (local scheduler, 2 threads): 8.49 s of thread time in 3 functions; idle 10.9 %". */
function heading(data: FpmData, model: FpmModel): string {
  return `${TITLE} (${data.source?.description ?? "tsdask"}): ${fpmSummary(model)}`;
}
