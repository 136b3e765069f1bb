// visualize(): Dask's `visualize([prof, rprof, cprof])`. Builds the stacked spec, then shows it
// where the user is: a display in a tslab notebook (in the calling cell, awaited or not), a
// standalone HTML file everywhere else.

import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type InspectOptions, inspect } from "node:util";
import type { ProfileSnapshot, Visualizable } from "../types";
import { MAX_GROUPS } from "../../../protocol/plot/groups";
import { standaloneHTML } from "./html";
import type { MimeBundle } from "../../../protocol";
import type { DisplayHandle } from "../../display";
import { inspectFigure, present } from "../../display/figure";
import { plotBundle, staticImage } from "../../display/plot";
import { type VegaLiteSpec, paletteColors, renderSVG } from "../../display/vega";
import { type VisualizeOptions, resolveOptions } from "./options";
import { buildSpec } from "./spec";

/** The result of visualize(): the Vega-Lite spec (edit it to restyle) and ways to render it. */
export class ProfilePlot {
  /** Where visualize() saved the standalone HTML file, if it did. */
  file: string | undefined;

  constructor(
    /** The Vega-Lite 6 spec, data inlined. Changes show up in later toSVG/toHTML/save calls. */
    readonly spec: VegaLiteSpec,
    /** One line saying what the plot shows. */
    readonly summary: string,
  ) {}

  /** A static SVG rendered in Node, no browser needed. */
  toSVG(): Promise<string> {
    return renderSVG(this.spec);
  }

  /** The SVG a notebook keeps: without a label per mark, which would more than double it. */
  notebookImage(): Promise<string> {
    return staticImage(this.spec);
  }

  /** What a notebook shows at once: tsdask's payload and the summary. */
  liveBundle(id: string, seq: number): MimeBundle {
    return plotBundle(this.spec, this.summary, id, seq);
  }

  /** A standalone, offline HTML page with the interactive plot. */
  toHTML(): string {
    return standaloneHTML(this.spec, typeof this.spec.title === "string" ? this.spec.title : "tsdask profile");
  }

  /** Writes toHTML() to `filename` and returns its absolute path. */
  save(filename: string): string {
    const path = resolve(filename);
    writeFileSync(path, this.toHTML());
    return path;
  }

  /** The REPL and a notebook's last-expression echo print the summary, not megabytes of spec; a notebook also shows the plot. */
  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectFigure(this, `ProfilePlot { ${this.summary}${this.file === undefined ? "" : `, saved to ${this.file}`} }`, depth, options);
  }
}

/**
 * Plots one profiler or a stack of them on one time axis (top to bottom in the order given).
 * In a tslab notebook the plot is displayed in the calling cell at once; elsewhere it is written
 * to `filename` (default profile.html), and the path is printed and kept in `plot.file`.
 * Returns a handle whose `value` is the ProfilePlot; `await` it for the ProfilePlot once the
 * plot's static image is in (without `await`, the image still reaches the same output).
 */
export function visualize(profilers: Visualizable | readonly Visualizable[], options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
  const opts = resolveOptions(options);
  const snapshots = takeSnapshots(profilers);
  // A scheme name becomes its colours here: the name is checked now rather than in the browser,
  // and "other" can be grey whatever the scheme.
  let palette = paletteColors(opts.palette, MAX_GROUPS);
  if (options?.palette === undefined) palette = strongShadesFirst(palette);
  const spec = buildSpec(snapshots, { width: opts.width, height: opts.height, title: opts.title, palette, config: opts.config });
  const plot = new ProfilePlot(spec, summarize(snapshots));
  return present(plot, opts, "Profile plot");
}

/**
 * tableau20 (the default) pairs a strong and a light shade of ten hues; read in order, the two
 * busiest groups would get two blues. Taking the strong shades first gives ten distinct hues.
 */
function strongShadesFirst(colors: readonly string[]): string[] {
  return [...colors.filter((_, i) => i % 2 === 0), ...colors.filter((_, i) => i % 2 === 1)];
}

function takeSnapshots(profilers: Visualizable | readonly Visualizable[]): ProfileSnapshot[] {
  const list = Array.isArray(profilers) ? (profilers as readonly Visualizable[]) : [profilers as Visualizable];
  return list.map((profiler, i) => {
    if (profiler === null || typeof profiler !== "object" || typeof (profiler as Partial<Visualizable>).snapshot !== "function") {
      throw new TypeError(`visualize takes profilers (objects with snapshot()), got ${profiler === null ? "null" : typeof profiler} at position ${i}`);
    }
    const snapshot = profiler.snapshot();
    const kind = (snapshot as { kind?: unknown } | undefined)?.kind;
    if (kind !== "tasks" && kind !== "resources" && kind !== "cache") {
      throw new TypeError(`Profiler at position ${i} (${profiler.constructor.name}) gave a snapshot of unknown kind ${JSON.stringify(kind)}`);
    }
    return snapshot;
  });
}

export function summarize(snapshots: readonly ProfileSnapshot[]): string {
  const parts = snapshots.map((snapshot) => {
    if (snapshot.kind === "tasks") {
      const workers = new Set(snapshot.results.map((task) => task.workerId)).size;
      return `${snapshot.results.length} tasks on ${workers} worker${workers === 1 ? "" : "s"}`;
    }
    if (snapshot.kind === "resources") return `${snapshot.results.length} resource samples`;
    return `${snapshot.results.length} cache entries (${snapshot.metricName})`;
  });
  return `tsdask profile: ${parts.length > 0 ? parts.join("; ") : "no profilers"}`;
}
