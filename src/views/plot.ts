// Vega-Lite plots through vega-embed (bundled, loaded on first use). A later snapshot of the same
// plot whose spec differs only in its data streams rows into the live view with a Vega changeset
// instead of re-embedding, so the plot neither blinks nor loses hover state. A plot can follow its
// box (a notebook cell, a dashboard panel being dragged or resized): a ResizeObserver hands the
// box's size to Vega, whose "fit" autosize lays the axes and legend out inside it.
import type { Result, VisualizationSpec } from "vega-embed";
import type { PlotPayload } from "../protocol";
import { splitSpec } from "./spec";
import { isDarkTheme, themeKey, vegaConfig, watchTheme } from "./theme";
import { tooltipHtml } from "./tooltip";

let vegaEmbed: Promise<typeof import("vega-embed")> | undefined;

function safeFileName(id: string): string {
  return `tsdask-${id.replace(/[^\w-]+/g, "_").slice(0, 60)}`;
}

export interface PlotViewOptions {
  /**
   * Run Vega's expressions through its interpreter instead of compiling them, for pages whose
   * Content-Security-Policy forbids eval (tsdask's standalone pages).
   */
  readonly interpretExpressions?: boolean;
  /**
   * Follow the plot's box: "width" fills its width (the height stays the spec's: a notebook
   * cell), "both" fills its width and height (a dashboard panel). Vega cannot lay out
   * concatenated views to a size, so those are scaled down to the width instead (never up).
   * Without it the plot keeps the spec's size.
   */
  readonly fit?: "width" | "both";
}

/** Narrower than this, axes and legends leave no room to draw in: the box scrolls instead. */
const MIN_FIT_WIDTH = 160;
const MIN_FIT_HEIGHT = 120;

/** Vega-Lite's "fit" autosize works for single and layered views only. */
function canFit(spec: Readonly<Record<string, unknown>>): boolean {
  return !["concat", "hconcat", "vconcat", "facet", "repeat"].some((key) => key in spec);
}

export class PlotView {
  readonly node = document.createElement("div");
  private embedded: { result: Result; shape: string; rows: string; container: HTMLElement; fits: boolean } | undefined;
  private last: PlotPayload | undefined;
  private pending: PlotPayload | undefined;
  private drain: Promise<void> | undefined;
  private readonly stopWatchingTheme: () => void;
  private readonly resize: ResizeObserver | undefined;

  constructor(private readonly options: PlotViewOptions = {}) {
    this.node.className = "tsdask-plot";
    this.node.dataset.fit = options.fit ?? "none";
    this.stopWatchingTheme = watchTheme(() => {
      if (this.last !== undefined) void this.render(this.last);
    });
    if (options.fit !== undefined) {
      this.resize = new ResizeObserver(() => void this.fitToBox().catch((error: unknown) => this.showError(error)));
      this.resize.observe(this.node);
    }
  }

  /** Draws the newest payload; overlapping calls coalesce so only the latest snapshot is drawn next. */
  render(payload: PlotPayload): Promise<void> {
    this.pending = payload;
    this.drain ??= this.flush();
    return this.drain;
  }

  dispose(): void {
    this.resize?.disconnect();
    this.stopWatchingTheme();
    this.embedded?.result.finalize();
    this.embedded = undefined;
    this.pending = undefined;
    this.node.remove();
  }

  private async flush(): Promise<void> {
    try {
      for (let payload = this.pending; payload !== undefined; payload = this.pending) {
        this.pending = undefined;
        this.last = payload;
        await this.draw(payload).catch((error: unknown) => this.showError(error));
      }
    } finally {
      this.drain = undefined;
    }
  }

  private async draw(payload: PlotPayload): Promise<void> {
    const split = splitSpec(payload.spec, themeKey());
    const { default: embed, vega } = await (vegaEmbed ??= import("vega-embed"));
    const current = this.embedded;
    // The same plot again (the kernel adds its static image to the output that way): leave the
    // live view, its zoom and hover, alone.
    const rows = JSON.stringify([...split.datasets]);
    if (current !== undefined && current.shape === split.shape && current.rows === rows) return;
    if (current !== undefined && current.shape === split.shape) {
      current.rows = rows;
      for (const [name, values] of split.datasets) {
        current.result.view.change(name, vega.changeset().remove(() => true).insert(values));
      }
      await current.result.view.runAsync();
      return;
    }
    const fit = this.options.fit;
    const fits = fit !== undefined && canFit(split.spec);
    // The spec's own size is the first guess; fitToBox then sets the box's (`contains: "padding"`: all of it).
    if (fits) split.spec.autosize = { type: fit === "both" ? "fit" : "fit-x", contains: "padding" };
    if (fit !== undefined) this.node.dataset.fit = fits ? fit : "shrink";
    // Block every URL the spec could name (data, images, links): a saved notebook is untrusted,
    // and tsdask plots carry their data inline.
    const loader = vega.loader();
    loader.sanitize = (uri: string) => Promise.reject(new Error(`tsdask plots load nothing from URLs (${uri})`));
    const container = document.createElement("div");
    container.className = "tsdask-plot-view";
    const result = await embed(container, split.spec as VisualizationSpec, {
      mode: "vega-lite",
      renderer: "svg",
      ast: this.options.interpretExpressions === true,
      config: vegaConfig(),
      actions: { export: { svg: true, png: true }, source: false, compiled: false, editor: false },
      downloadFileName: safeFileName(payload.id),
      loader,
      tooltip: { theme: isDarkTheme() ? "dark" : "light", formatTooltip: tooltipHtml },
    });
    // Swap only once the new view is drawn, so a re-embed never shows an empty output.
    if (current !== undefined) {
      current.result.finalize();
      current.container.replaceWith(container);
    } else {
      this.node.replaceChildren(container);
    }
    this.embedded = { result, shape: split.shape, rows, container, fits };
    await this.fitToBox();
  }

  /** Lays the live view out to its box, when it follows it and the box changed by a pixel or more. */
  private async fitToBox(): Promise<void> {
    const embedded = this.embedded;
    if (embedded === undefined || !embedded.fits) return;
    // The embed's padding keeps room for its actions menu.
    const style = getComputedStyle(embedded.container);
    const inner = embedded.container.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    // Not laid out (a hidden tab, a detached output): keep the size it has until it is.
    if (!(inner > 0)) return;
    const view = embedded.result.view;
    const width = Math.max(MIN_FIT_WIDTH, Math.floor(inner));
    const height = this.options.fit === "both" ? Math.max(MIN_FIT_HEIGHT, Math.floor(this.node.clientHeight)) : view.height();
    if (Math.abs(view.width() - width) < 1 && Math.abs(view.height() - height) < 1) return;
    view.width(width).height(height);
    await view.runAsync();
  }

  private showError(error: unknown): void {
    const message = document.createElement("pre");
    message.className = "tsdask-message";
    message.textContent = `tsdask cannot draw this plot: ${error instanceof Error ? error.message : String(error)}`;
    this.embedded?.result.finalize();
    this.embedded = undefined;
    this.node.replaceChildren(message);
  }
}
