// A live Vega-Lite plot filling its panel: drawn from a spec builder, laid out by the plot view to
// the panel's width and height, and again whenever the panel is dragged or resized. Its few
// expressions run interpreted: the standalone page's Content-Security-Policy forbids eval.
import { PROTOCOL_VERSION } from "../../protocol";
import type { VegaLiteSpec } from "../../protocol/plot/vega";
import { PlotView } from "../plot";

/**
 * The width specs are built for. The view lays the plot out to its panel; the spec's width stays
 * the same so that a resize never changes the plot's shape (which would draw it anew, losing zoom).
 */
export const PANEL_SPEC_WIDTH = 800;

export class PanelPlot {
  private readonly plot = new PlotView({ interpretExpressions: true, fit: "both" });

  constructor(
    container: HTMLElement,
    private readonly id: string,
    private readonly spec: () => VegaLiteSpec,
  ) {
    container.append(this.plot.node);
  }

  draw(): void {
    void this.plot.render({ version: PROTOCOL_VERSION, kind: "plot", id: this.id, seq: 0, spec: this.spec() });
  }

  dispose(): void {
    this.plot.dispose();
  }
}
