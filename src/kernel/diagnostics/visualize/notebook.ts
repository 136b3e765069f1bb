// The bundle that shows a plot in a tslab notebook: our MIME type (rendered live by the
// JupyterLab extension), a static SVG for other frontends and nbconvert, and a text summary.

import { randomUUID } from "node:crypto";
import { MIME_TYPE, type MimeBundle, PROTOCOL_VERSION, type PlotPayload } from "../../../protocol";
import type { VegaLiteSpec } from "./plot";
import { renderSVG } from "./render";

export async function plotBundle(spec: VegaLiteSpec, summary: string): Promise<MimeBundle> {
  const payload: PlotPayload = { version: PROTOCOL_VERSION, id: randomUUID(), seq: 0, kind: "plot", spec };
  // The fallback image is stored in the .ipynb; a label per mark (Vega's ARIA default) would more
  // than double its size, and the interactive plot keeps them.
  const image = await renderSVG({ ...spec, config: { ...(spec.config as object | undefined), aria: false } });
  return { [MIME_TYPE]: payload, "image/svg+xml": image, "text/plain": summary };
}
