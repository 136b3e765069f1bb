// Dask's Fine Performance Metrics panel in the browser: span / function / unit selectors above
// the charts. A pure function of (data, selection): `mountFpm(container, data, selection)` draws
// it; `update(data)` redraws in place keeping the selection (the dashboard feeds it live);
// picking in the selectors redraws from the same data.

import { type FpmData, type FpmOptions, type FpmSelection, DEFAULT_SELECTION, FPM_MIN_WIDTH, fpmModel, fpmOptions, fpmSpec, fpmSummary } from "../../protocol/fpm";
import { PROTOCOL_VERSION } from "../../protocol";
import { PlotView } from "../plot";
import { MultiChoice, UnitChoice } from "./selectors";
import { addStylesheet } from "./style";

export interface FpmMountOptions {
  /** Called whenever the user changes a selector (to remember it, e.g. in a dashboard layout). */
  readonly onStateChange?: (state: FpmSelection) => void;
}

/** A mounted panel. */
export interface FpmHandle {
  readonly node: HTMLElement;
  /** The selectors' current state. */
  readonly state: FpmSelection;
  /** The selectors' options: they only grow. */
  readonly options: FpmOptions;
  /** Redraws with newer data; the selection stays. Resolves once drawn. */
  update(data: FpmData): Promise<void>;
  /** Changes the selection, as the selectors do. Resolves once drawn. */
  setState(state: Partial<FpmSelection>): Promise<void>;
  /** Resolves once the latest data and selection are drawn. */
  whenDrawn(): Promise<void>;
  /** Removes the panel and stops watching its size. */
  dispose(): void;
}

/** Below this the charts would overlap (they stack when narrow); the panel scrolls instead. */
const MIN_WIDTH = FPM_MIN_WIDTH + 24;

export class FpmView implements FpmHandle {
  readonly node = document.createElement("div");
  private readonly controls = document.createElement("div");
  private readonly summary = document.createElement("div");
  // Small charts: interpreting their few expressions costs nothing, and works under any CSP.
  private readonly plot = new PlotView({ interpretExpressions: true });
  private readonly spans: MultiChoice;
  private readonly functions: MultiChoice;
  private readonly unit: UnitChoice;
  private data: FpmData | undefined;
  private selection: FpmSelection;
  private drawing: Promise<void> = Promise.resolve();
  private known: FpmOptions = { spans: [], functions: [], units: ["seconds"] };
  private drawnWidth = 0;
  private readonly resize: ResizeObserver;

  constructor(
    selection: Partial<FpmSelection> = {},
    private readonly mountOptions: FpmMountOptions = {},
  ) {
    this.selection = normalize({ ...DEFAULT_SELECTION, ...selection });
    addStylesheet();
    this.node.className = "tsdask-fpm";
    this.controls.className = "tsdask-fpm-controls";
    this.summary.className = "tsdask-fpm-summary";
    this.spans = new MultiChoice("Filter by span tag", "all spans", (spans) => void this.setState({ spans }));
    this.functions = new MultiChoice("Filter by function", "all functions", (functions) => void this.setState({ functions }));
    this.unit = new UnitChoice((unit) => void this.setState({ unit }));
    this.controls.append(this.spans.node, this.functions.node, this.unit.node);
    this.node.append(this.controls, this.summary, this.plot.node);
    // A dashboard panel can be resized: redraw the charts to the new width.
    this.resize = new ResizeObserver(() => {
      if (this.data !== undefined && Math.abs(this.width() - this.drawnWidth) > 24) void this.draw();
    });
    this.resize.observe(this.node);
  }

  get state(): FpmSelection {
    return this.selection;
  }

  get options(): FpmOptions {
    return this.known;
  }

  update(data: FpmData): Promise<void> {
    this.data = data;
    return this.draw();
  }

  setState(state: Partial<FpmSelection>): Promise<void> {
    this.selection = normalize({ ...this.selection, ...state });
    this.mountOptions.onStateChange?.(this.selection);
    return this.draw();
  }

  whenDrawn(): Promise<void> {
    return this.drawing;
  }

  dispose(): void {
    this.resize.disconnect();
    this.spans.dispose();
    this.functions.dispose();
    this.plot.dispose();
    this.node.remove();
  }

  private width(): number {
    return Math.max(MIN_WIDTH, this.node.clientWidth || 1000);
  }

  private draw(): Promise<void> {
    const data = this.data;
    if (data === undefined) return Promise.resolve();
    this.known = fpmOptions(data, this.known);
    if (!this.known.units.includes(this.selection.unit)) this.selection = { ...this.selection, unit: "seconds" };
    this.spans.render(this.known.spans, this.selection.spans);
    this.functions.render(this.known.functions, this.selection.functions);
    this.unit.render(this.known.units, this.selection.unit);
    const model = fpmModel(data, this.selection);
    this.summary.textContent = `${data.source?.description ?? ""}${data.source === undefined ? "" : " · "}${fpmSummary(model)}`;
    this.drawnWidth = this.width();
    const spec = fpmSpec(model, { width: this.drawnWidth - 24, transfers: data.source?.transfers });
    this.drawing = this.plot.render({ version: PROTOCOL_VERSION, kind: "plot", id: "tsdask-fpm", seq: 0, spec });
    return this.drawing;
  }
}

function normalize(selection: FpmSelection): FpmSelection {
  return { spans: [...new Set(selection.spans)], functions: [...new Set(selection.functions)], unit: selection.unit };
}

/** Draws the panel into `container` and returns its handle. */
export function mountFpm(container: HTMLElement, data: FpmData, state: Partial<FpmSelection> = {}, options: FpmMountOptions = {}): FpmHandle {
  const view = new FpmView(state, options);
  container.append(view.node);
  void view.update(data);
  return view;
}
