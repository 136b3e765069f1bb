// Showing a plot in a tslab notebook: one display_data with our MIME type (rendered live by the
// JupyterLab extension), a static SVG for other frontends and nbconvert, and a text summary.

import { randomUUID } from "node:crypto";
import { MIME_TYPE, type MimeBundle, PROTOCOL_VERSION, type PlotPayload } from "../../../protocol";
import type { VegaLiteSpec } from "./plot";
import { renderSVG } from "./render";

/** Sends one MIME bundle to the notebook as a display_data message. */
export type DisplayBundle = (bundle: MimeBundle) => void;

export async function plotBundle(spec: VegaLiteSpec, summary: string): Promise<MimeBundle> {
  const payload: PlotPayload = { version: PROTOCOL_VERSION, id: randomUUID(), seq: 0, kind: "plot", spec };
  // The fallback image is stored in the .ipynb; a label per mark (Vega's ARIA default) would more
  // than double its size, and the interactive plot keeps them.
  const image = await renderSVG({ ...spec, config: { ...(spec.config as object | undefined), aria: false } });
  return { [MIME_TYPE]: payload, "image/svg+xml": image, "text/plain": summary };
}

interface TslabJupyter {
  lastWriteDisplayData: ((message: { data: MimeBundle; metadata: object; transient: object }, update: boolean) => void) | null;
}

/**
 * The display function of the tslab kernel we run in, or undefined outside a notebook.
 * tslab's public display API sends only strings for JSON MIME types, so this uses its writer
 * directly (tslab-check.md §b), taken from the tslab that is running: the process's main module
 * is tslab's executable, so resolving from it finds that very copy whatever the notebook's folder.
 * src/kernel/display's one-shot display replaces this function once that module lands.
 */
export function notebookDisplay(): DisplayBundle | undefined {
  if ((globalThis as { __tslab__?: unknown }).__tslab__ === undefined || require.main === undefined) return undefined;
  const jupyter = require.main.require("tslab/dist/jupyter") as TslabJupyter;
  return (bundle) => {
    if (jupyter.lastWriteDisplayData === null) throw new Error("The tslab kernel is not ready to display output");
    jupyter.lastWriteDisplayData({ data: bundle, metadata: {}, transient: {} }, false);
  };
}
