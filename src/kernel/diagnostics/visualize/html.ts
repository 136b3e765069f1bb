// The standalone HTML page of a profile plot: vega-embed from the inlined views bundle draws the
// spec, offline (see display/page.ts).

import { escapeHTML, standalonePage } from "../../display/page";
import type { VegaLiteSpec } from "./plot";

/**
 * The page's own script. Tooltip text is escaped explicitly (vega-tooltip's default does too,
 * but the page must not depend on a default for untrusted task keys). The embed result is kept
 * on window for tests and for people poking at the plot from the console.
 */
const EMBED_SCRIPT = `
(function () {
  var escapeHTML = ${escapeHTML.toString()};
  var spec = JSON.parse(document.getElementById("tsdask-spec").textContent);
  tsdaskViews.vegaEmbed("#tsdask-plot", spec, {
    renderer: "canvas",
    ast: true,
    actions: { export: true, source: true, compiled: false, editor: false },
    tooltip: { sanitize: escapeHTML },
  }).then(function (result) {
    window.__tsdaskEmbed = result;
    window.__tsdaskView = result.view;
  }).catch(function (error) {
    document.getElementById("tsdask-plot").textContent = "Could not draw the plot: " + error.message;
    console.error(error);
  });
})();
`;

export function standaloneHTML(spec: VegaLiteSpec, title: string): string {
  return standalonePage({ title, body: `<div id="tsdask-plot"></div>`, data: { "tsdask-spec": spec }, script: EMBED_SCRIPT });
}
