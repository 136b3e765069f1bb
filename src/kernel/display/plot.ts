// displayPlot(): a Vega-Lite plot in the running cell. The first output carries tsdask's MIME
// type (drawn live by the JupyterLab extension) and a text summary; the static SVG for other
// frontends and saved notebooks follows as an update of the same output (rendering takes a while).

import { MIME_TYPE, type MimeBundle, PROTOCOL_VERSION, type PlotPayload } from "../../protocol";
import { showInTwoSteps } from "./figure";
import type { DisplayHandle } from "./handle";
import { type VegaLiteSpec, renderSVG } from "./vega";

/**
 * Shows `spec` in the running cell now and returns its handle: `value` (default undefined) is
 * what awaiting the handle gives once the static image is in; `summary` is the one line printed
 * for it and its text fallback. Outside a notebook it shows nothing and renders nothing.
 */
export function displayPlot<T = undefined>(spec: VegaLiteSpec, summary: string, value?: T): DisplayHandle<T> {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) throw new TypeError("displayPlot: spec must be a Vega-Lite specification object");
  return showInTwoSteps({ summary, liveBundle: (id, seq) => plotBundle(spec, summary, id, seq), notebookImage: () => staticImage(spec) }, value as T);
}

/** A plot's live bundle: tsdask's payload and the summary as text. */
export function plotBundle(spec: VegaLiteSpec, summary: string, id: string, seq: number): MimeBundle {
  const payload: PlotPayload = { version: PROTOCOL_VERSION, id, seq, kind: "plot", spec };
  return { [MIME_TYPE]: payload, "text/plain": summary };
}

/** The plot as SVG for the saved notebook and frontends without tsdask's extension. */
export function staticImage(spec: VegaLiteSpec): Promise<string> {
  // A label per mark (Vega's ARIA default) would more than double the stored image; the
  // interactive plot keeps them.
  return renderSVG({ ...spec, config: { ...(spec.config as object | undefined), aria: false } });
}
