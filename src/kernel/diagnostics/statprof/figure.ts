// The statistical profile as a figure: the interactive icicle-over-timeline view (src/views/profile)
// in a notebook output or an offline HTML page, with a static SVG icicle and a text summary for
// frontends without tsdask's extension.

import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type InspectOptions, inspect } from "node:util";
import { MIME_TYPE, type MimeBundle, PROTOCOL_VERSION, type ProfilePayload, type ProfileViewData } from "../../../protocol";
import { formatTime } from "../../../protocol/format";
import {
  type ProfileKind,
  type ProfileWindow,
  coarsenWindows,
  frameColor,
  icicleLayout,
  packProfile,
  profileOf,
  shortFilename,
  unpackProfile,
} from "../../../protocol/profile";
import type { ProfileNode } from "../../../protocol/records";
import { standalonePage } from "../../display/page";
import type { DisplayHandle } from "../../display";
import { inspectFigure, present } from "../../display/figure";
import { staticImage } from "../../display/plot";
import type { VegaLiteSpec } from "../../display/vega";

export interface ProfileFigureOptions {
  /** Default: "Statistical profile" (compute) or "Administrative profile". */
  readonly title?: string;
  /** "compute" (default): samples taken in tasks; "administrative": the threads' other work. */
  readonly kind?: ProfileKind;
  /** The task prefix selected at first. */
  readonly key?: string;
  /** Where the HTML file goes when saving. Default "dask-profile.html". */
  readonly filename?: string;
  /** Write the HTML file; default: outside a notebook only. */
  readonly save?: boolean;
  /** Open the saved file in a browser. */
  readonly show?: boolean;
}

/** Timeline windows a figure carries at most: longer runs are shown in coarser windows. */
export const MAX_FIGURE_WINDOWS = 300;
const OPTION_NAMES = ["title", "kind", "key", "filename", "save", "show"];

export class ProfileFigure {
  file: string | undefined;

  constructor(
    readonly data: ProfileViewData,
    /** One line saying what the figure shows. */
    readonly summary: string,
  ) {}

  /** Builds the figure from recorded windows and presents it where the user is. */
  static show(windows: readonly ProfileWindow[], interval: number, options: ProfileFigureOptions = {}): DisplayHandle<ProfileFigure> {
    checkOptions(options);
    const figure = ProfileFigure.of(windows, interval, options);
    return present(figure, { filename: options.filename ?? "dask-profile.html", save: options.save, show: options.show }, "Profile");
  }

  static of(windows: readonly ProfileWindow[], interval: number, options: Omit<ProfileFigureOptions, "filename" | "save" | "show"> = {}): ProfileFigure {
    const kind = options.kind ?? "compute";
    const title = options.title ?? (kind === "compute" ? "Statistical profile" : "Administrative profile");
    const data: ProfileViewData = {
      title,
      kind,
      profile: packProfile(coarsenWindows(windows, MAX_FIGURE_WINDOWS), interval),
      ...(options.key === undefined ? {} : { prefix: options.key }),
    };
    return new ProfileFigure(data, summarize(profileOf(windows, kind), windows, interval, title));
  }

  /** What a notebook shows at once: tsdask's payload and the summary. */
  liveBundle(id: string, seq: number): MimeBundle {
    const payload: ProfilePayload = { version: PROTOCOL_VERSION, id, seq, kind: "profile", data: this.data };
    return { [MIME_TYPE]: payload, "text/plain": this.summary };
  }

  /** The icicle as a static SVG (cells too narrow to see are left out). */
  notebookImage(): Promise<string> {
    const tree = profileOf(unpackProfile(this.data.profile), this.data.kind);
    return staticImage(icicleSpec(tree, this.data.profile.interval, this.data.title));
  }

  toHTML(): string {
    return profilePage(this.data);
  }

  save(filename: string): string {
    const path = resolve(filename);
    writeFileSync(path, this.toHTML());
    return path;
  }

  /** Printed as its summary; left as a notebook cell's value, also shown. */
  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectFigure(this, `ProfileFigure { ${this.summary}${this.file === undefined ? "" : `, saved to ${this.file}`} }`, depth, options);
  }
}

function checkOptions(options: ProfileFigureOptions): void {
  if (options === null || typeof options !== "object") throw new TypeError(`profile plot options must be an object, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) throw new TypeError(`Unknown profile plot option "${name}"; known: ${OPTION_NAMES.join(", ")}`);
  }
  if (options.kind !== undefined && options.kind !== "compute" && options.kind !== "administrative") {
    throw new TypeError(`Option kind must be "compute" or "administrative", got ${JSON.stringify(options.kind)}`);
  }
}


/** The page script: the views bundle mounts the profile view on the page's data. */
const PROFILE_SCRIPT = `
window.__tsdaskProfile = tsdaskViews.mountProfile(document.getElementById("tsdask-profile"), JSON.parse(document.getElementById("tsdask-profile-data").textContent));
`;

export function profilePage(data: ProfileViewData): string {
  return standalonePage({ title: data.title, body: `<div id="tsdask-profile"></div>`, data: { "tsdask-profile-data": data }, script: PROFILE_SCRIPT });
}

// ---- The static fallback ---------------------------------------------------------------------

/** Cells narrower than this share of the width are left out of the static picture. */
const STATIC_MIN_WIDTH = 0.002;
const STATIC_MAX_DEPTH = 40;
const ROW_PX = 18;

/** The icicle as a Vega-Lite spec (rects and labels), for the static SVG. */
export function icicleSpec(tree: ProfileNode, interval: number, title: string): VegaLiteSpec {
  const cells = icicleLayout(tree, { minWidth: STATIC_MIN_WIDTH, maxDepth: STATIC_MAX_DEPTH });
  const width = 800;
  const depth = cells.reduce((most, cell) => Math.max(most, cell.depth), 0) + 1;
  const values = cells.map((cell) => {
    const { name, filename, line_number } = cell.node.description;
    const label = cell.depth === 0 ? `all (${formatTime(cell.node.count * interval)})` : name;
    return {
      x: cell.x0 * width,
      x2: cell.x1 * width,
      y: cell.depth,
      y2: cell.depth + 1,
      label: (cell.x1 - cell.x0) * width > 40 ? label : "",
      name: cell.depth === 0 ? "all" : name,
      where: cell.depth === 0 ? "" : `${shortFilename(filename)}:${line_number}`,
      time: formatTime(cell.node.count * interval),
      color: cell.depth === 0 ? "#e0e0e0" : frameColor(filename),
    };
  });
  const x = { field: "x", type: "quantitative", scale: { domain: [0, width] }, axis: null };
  const y = { field: "y", type: "quantitative", scale: { domain: [0, depth], reverse: true }, axis: null };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    width,
    height: depth * ROW_PX,
    data: { values },
    layer: [
      {
        mark: { type: "rect", stroke: "white", strokeWidth: 1 },
        encoding: { x, x2: { field: "x2" }, y, y2: { field: "y2" }, color: { field: "color", type: "nominal", scale: null }, tooltip: [{ field: "name" }, { field: "where" }, { field: "time" }] },
      },
      {
        mark: { type: "text", align: "left", baseline: "middle", dx: 3, fontSize: 11, limit: 0 },
        encoding: { x, y: { field: "mid", type: "quantitative", scale: { domain: [0, depth], reverse: true }, axis: null }, text: { field: "label" } },
        transform: [{ filter: "datum.label !== ''" }, { calculate: "datum.y + 0.5", as: "mid" }],
      },
    ],
    config: { view: { stroke: null } },
  };
}

/** One line: what was sampled, and the functions where the time went. */
function summarize(tree: ProfileNode, windows: readonly ProfileWindow[], interval: number, title: string): string {
  const threads = new Set(windows.map((w) => w.source)).size;
  if (tree.count === 0) return `${title}: no samples`;
  const self = new Map<string, { name: string; where: string; count: number }>();
  const stack: ProfileNode[] = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const children = Object.values(node.children);
    const own = node.count - children.reduce((sum, child) => sum + child.count, 0);
    if (node !== tree && own > 0) {
      const { name, filename, line_number } = node.description;
      const entry = self.get(node.identifier) ?? { name, where: `${shortFilename(filename)}:${line_number}`, count: 0 };
      entry.count += own;
      self.set(node.identifier, entry);
    }
    stack.push(...children);
  }
  const top = [...self.values()].sort((a, b) => b.count - a.count).slice(0, 3);
  const hottest = top.map((entry) => `${entry.name} (${entry.where}) ${Math.round((100 * entry.count) / tree.count)}%`).join(", ");
  return `${title}: ${tree.count} samples (${formatTime(tree.count * interval)} of thread time) on ${threads} thread${threads === 1 ? "" : "s"}; most time in ${hottest}`;
}
