// A standalone HTML page for a spec that works offline: vega, vega-lite and vega-embed are
// inlined from node_modules, and a Content-Security-Policy forbids every network request.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { VegaLiteSpec } from "./plot";

/** The browser builds (UMD, globals vega / vegaLite / vegaEmbed), in load order. */
const BUNDLES = [
  { pkg: "vega", file: "build/vega.min.js" },
  { pkg: "vega-lite", file: "build/vega-lite.min.js" },
  { pkg: "vega-embed", file: "build/vega-embed.min.js" },
] as const;

let scripts: string | undefined;

/** The three bundles as inline <script> elements, read once per process. */
function inlineScripts(): string {
  scripts ??= BUNDLES.map(({ pkg, file }) => `<script>${scriptText(readFileSync(join(packageRoot(pkg), file), "utf8"))}</script>`).join("\n");
  return scripts;
}

/**
 * The package's folder. Its "exports" hide both package.json and build/*.min.js, but resolving
 * the main entry is allowed, and every vega package keeps that entry in build/ under its root.
 */
function packageRoot(pkg: string): string {
  let dir = dirname(require.resolve(pkg));
  while (readPackageName(dir) !== pkg) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the folder of the "${pkg}" package`);
    dir = parent;
  }
  return dir;
}

function readPackageName(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string }).name;
  } catch {
    return undefined;
  }
}

/** Text that cannot end its <script> element early. */
function scriptText(code: string): string {
  return code.replace(/<\/(script)/gi, "<\\/$1");
}

/** JSON for a <script type="application/json"> element: "<" escaped so no key can close it. */
function jsonScriptText(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function escapeHTML(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/**
 * No network at all: scripts and styles are inline, images only data:/blob: (vega-embed's PNG export).
 * Expressions run through vega's interpreter (`ast: true`), so the page needs no 'unsafe-eval'.
 */
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:";

/**
 * The page's own script. Tooltip text is escaped explicitly (vega-tooltip's default does too,
 * but the page must not depend on a default for untrusted task keys). The embed result is kept
 * on window for tests and for people poking at the plot from the console.
 */
const EMBED_SCRIPT = `
(function () {
  function escapeHTML(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }
  var spec = JSON.parse(document.getElementById("tsdask-spec").textContent);
  vegaEmbed("#tsdask-plot", spec, {
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
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHTML(title)}</title>
<style>body { margin: 16px; font-family: sans-serif; }</style>
${inlineScripts()}
</head>
<body>
<div id="tsdask-plot"></div>
<script type="application/json" id="tsdask-spec">${jsonScriptText(spec)}</script>
<script>${EMBED_SCRIPT}</script>
</body>
</html>
`;
}
