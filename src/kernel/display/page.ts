// Standalone HTML pages that work offline, opened from file:// or served by the cluster's
// dashboard: the browser views (dist/views/tsdask-views.js, global `tsdaskViews`) are inlined,
// data travels in JSON script elements, and a Content-Security-Policy forbids every request.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * No network at all: scripts and styles are inline, images only data:/blob: (plot export).
 * Vega runs its expressions through its interpreter (`ast: true`), so no 'unsafe-eval'.
 */
export const PAGE_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:";

export interface PageParts {
  readonly title: string;
  /** Extra CSS for the page. */
  readonly style?: string;
  /** The page's markup (trusted: built by tsdask, never from data). */
  readonly body: string;
  /** Data for the page's script, each in `<script type="application/json" id=…>`. */
  readonly data?: Readonly<Record<string, unknown>>;
  /** The page's own script (trusted), run after the views bundle; reads its data with `JSON.parse(document.getElementById(id).textContent)`. */
  readonly script: string;
  /** A served page that fetches from the server it came from (the dashboard's live feed): adds `connect-src 'self'`. */
  readonly connectToOrigin?: boolean;
}

let viewsBundle: { script: string; style: string } | undefined;

const BUNDLE = join("dist", "views", "tsdask-views.js");
const STYLE = join("dist", "views", "tsdask-views.css");

/**
 * The views bundle's script and styles, read once per process. They sit in the package's dist/
 * (npm run build makes them); this file runs from dist/ or from the tests' build/, so look upward.
 */
function views(): { script: string; style: string } {
  if (viewsBundle === undefined) {
    for (let dir = __dirname; ; dir = dirname(dir)) {
      const path = join(dir, BUNDLE);
      if (existsSync(path)) {
        const style = join(dir, STYLE);
        viewsBundle = {
          script: scriptText(readFileSync(path, "utf8")),
          style: existsSync(style) ? readFileSync(style, "utf8").replace(/<\/(style)/gi, "<\\/$1") : "",
        };
        break;
      }
      if (dirname(dir) === dir) throw new Error(`tsdask's browser views (${BUNDLE}) are missing: run "npm run build"`);
    }
  }
  return viewsBundle;
}

/** Text that cannot end its <script> element early. */
function scriptText(code: string): string {
  return code.replace(/<\/(script)/gi, "<\\/$1");
}

/** JSON for a <script type="application/json"> element: "<" escaped so no key can close it. */
function jsonScriptText(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

export function escapeHTML(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

export function standalonePage(parts: PageParts): string {
  const data = Object.entries(parts.data ?? {})
    .map(([id, value]) => `<script type="application/json" id="${escapeHTML(id)}">${jsonScriptText(value)}</script>`)
    .join("\n");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}${parts.connectToOrigin === true ? "; connect-src 'self'" : ""}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHTML(parts.title)}</title>
<style>${views().style}</style>
<style>body { margin: 16px; font-family: sans-serif; }${parts.style ?? ""}</style>
<script>${views().script}</script>
</head>
<body>
${parts.body}
${data}
<script>${scriptText(parts.script)}</script>
</body>
</html>
`;
}
