// Vega-Lite plots through vega-embed (bundled, loaded on first use). A later snapshot of the same
// plot whose spec differs only in its data streams rows into the live view with a Vega changeset
// instead of re-embedding, so the plot neither blinks nor loses hover state.
import type { Result, VisualizationSpec } from "vega-embed";
import type { PlotPayload } from "../protocol";
import { splitSpec } from "./spec";
import { isDarkTheme, themeKey, vegaConfig, watchTheme } from "./theme";
import { tooltipHtml } from "./tooltip";

let vegaEmbed: Promise<typeof import("vega-embed")> | undefined;

function safeFileName(id: string): string {
  return `tsdask-${id.replace(/[^\w-]+/g, "_").slice(0, 60)}`;
}

export class PlotView {
  readonly node = document.createElement("div");
  private embedded: { result: Result; shape: string; rows: string; container: HTMLElement } | undefined;
  private last: PlotPayload | undefined;
  private pending: PlotPayload | undefined;
  private drain: Promise<void> | undefined;
  private readonly stopWatchingTheme: () => void;

  /**
   * `interpretExpressions`: run Vega's expressions through its interpreter instead of compiling
   * them, for pages whose Content-Security-Policy forbids eval (tsdask's standalone pages).
   */
  constructor(private readonly options: { readonly interpretExpressions?: boolean } = {}) {
    this.node.className = "tsdask-plot";
    this.stopWatchingTheme = watchTheme(() => {
      if (this.last !== undefined) void this.render(this.last);
    });
  }

  /** Draws the newest payload; overlapping calls coalesce so only the latest snapshot is drawn next. */
  render(payload: PlotPayload): Promise<void> {
    this.pending = payload;
    this.drain ??= this.flush();
    return this.drain;
  }

  dispose(): void {
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
    this.embedded = { result, shape: split.shape, rows, container };
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
