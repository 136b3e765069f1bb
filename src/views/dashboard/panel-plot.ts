// A live Vega-Lite plot filling its panel's width: drawn from a spec builder given the width, and
// drawn again when the panel is resized by more than a few pixels. Its few expressions run
// interpreted: the standalone page's Content-Security-Policy forbids eval.
import { PROTOCOL_VERSION } from "../../protocol";
import type { VegaLiteSpec } from "../../protocol/plot/vega";
import { PlotView } from "../plot";

const MIN_PLOT_PX = 240;
/** A resize smaller than this keeps the plot as drawn. */
const RESIZE_PX = 24;

export class PanelPlot {
  private readonly plot = new PlotView({ interpretExpressions: true });
  private readonly resize: ResizeObserver;
  private drawnWidth = 0;

  /** `reservedPx`: room the plot leaves beside its drawing area for axis labels and the legend. */
  constructor(
    private readonly container: HTMLElement,
    private readonly id: string,
    private readonly reservedPx: number,
    private readonly spec: (width: number) => VegaLiteSpec,
  ) {
    container.append(this.plot.node);
    this.resize = new ResizeObserver(() => {
      if (Math.abs(this.width() - this.drawnWidth) > RESIZE_PX) this.draw();
    });
    this.resize.observe(container);
  }

  draw(): void {
    this.drawnWidth = this.width();
    void this.plot.render({ version: PROTOCOL_VERSION, kind: "plot", id: this.id, seq: 0, spec: this.spec(this.drawnWidth) });
  }

  dispose(): void {
    this.resize.disconnect();
    this.plot.dispose();
  }

  private width(): number {
    return Math.max(MIN_PLOT_PX, (this.container.clientWidth || 1000) - this.reservedPx);
  }
}
