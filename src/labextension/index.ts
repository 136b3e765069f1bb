// The JupyterLab 4 extension that renders application/vnd.tsdask.v1+json outputs: live progress
// bars and Vega-Lite plots. Built by the JupyterLab builder (scripts/build-labextension.mjs); imports only src/protocol.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { MIME_TYPE } from "../protocol";
import { TsdaskRenderer } from "./renderer";

/**
 * `safe: true` lets JupyterLab render our outputs in untrusted notebooks (a reopened or shared
 * .ipynb): the payload is data only, every string in it is shown as text, and plots load nothing
 * from the network.
 */
const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: () => new TsdaskRenderer(),
};

const extension: IRenderMime.IExtension = {
  id: "tsdask:renderer",
  description: "Live progress bars and profiler plots for tsdask computations.",
  rendererFactory,
  // Lower rank wins: ahead of HTML (50) and images (90) that a bundle may carry as fallbacks.
  rank: 40,
  dataType: "json",
};

export default extension;
