// One output cell's renderer. JupyterLab reuses the same instance for every update_display_data
// of its display id (while the preferred MIME type stays ours), so the view lives here and is patched.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { MIME_TYPE, type Payload } from "../protocol";
import { FpmView } from "../views/fpm";
import { PayloadError, parsePayload } from "../views/payload";
import { PlotView } from "../views/plot";
import { ProfileView } from "../views/profile";
import { ProgressView } from "../views/progress";
import { ClusterView } from "../views/cluster";

type View = ProgressView | PlotView | FpmView | ClusterView | ProfileView;

export class TsdaskRenderer extends Widget implements IRenderMime.IRenderer {
  private view: View | undefined;
  private latest: { id: string; seq: number } | undefined;
  private readonly message = document.createElement("pre");

  constructor() {
    super();
    this.addClass("tsdask-output");
    this.message.className = "tsdask-message";
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    let payload: Payload;
    try {
      payload = parsePayload(model.data[MIME_TYPE]);
    } catch (error) {
      if (!(error instanceof PayloadError)) throw error;
      this.showMessage(`tsdask cannot draw this output: ${error.message}`);
      return;
    }
    // A snapshot older than the one shown (a late or replayed message) must not move the bar back.
    const latest = this.latest;
    if (latest !== undefined && latest.id === payload.id && payload.seq < latest.seq) return;
    this.latest = { id: payload.id, seq: payload.seq };
    this.message.remove();
    if (payload.kind === "progress") {
      const view = this.view instanceof ProgressView ? this.view : this.replaceView(new ProgressView());
      view.render(payload);
    } else if (payload.kind === "fpm") {
      // The selection in the payload is where the panel opens; later updates keep what the user picked.
      const view = this.view instanceof FpmView ? this.view : this.replaceView(new FpmView(payload.selection));
      await view.update(payload.data);
    } else if (payload.kind === "cluster") {
      const view = this.view instanceof ClusterView ? this.view : this.replaceView(new ClusterView());
      view.render(payload);
    } else if (payload.kind === "profile") {
      const view = this.view instanceof ProfileView ? this.view : this.replaceView(new ProfileView());
      view.render(payload);
    } else {
      // A plot in a cell follows the cell's width (a notebook beside a dashboard panel is narrow).
      const view = this.view instanceof PlotView ? this.view : this.replaceView(new PlotView({ fit: "width" }));
      await view.render(payload);
    }
  }

  override dispose(): void {
    this.view?.dispose();
    this.view = undefined;
    super.dispose();
  }

  /** Only when an output changes kind (it never does in tsdask itself) is its view rebuilt. */
  private replaceView<V extends View>(view: V): V {
    this.view?.dispose();
    this.view = view;
    this.node.replaceChildren(view.node);
    return view;
  }

  private showMessage(text: string): void {
    this.message.textContent = text;
    if (this.message.parentNode !== this.node) this.node.prepend(this.message);
  }
}
