// Bundles the browser views (src/views, with vega-embed) into one script that standalone HTML
// files inline — performance reports, plot pages, the cluster's dashboard page — so a page works
// offline from file:// with no request. The JupyterLab extension bundles the same views itself.
import { statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { newestChange } from "./build-labextension.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
/** Where the kernel library finds the bundle at run time (see src/kernel/display/page.ts). */
export const VIEWS_BUNDLE = join(root, "dist/views/tsdask-views.js");
/** The views' styles for pages outside JupyterLab: the extension's style sheet plus default --jp-* theme values. */
export const VIEWS_STYLE = join(root, "dist/views/tsdask-views.css");

export async function buildViews() {
  await build({
    entryPoints: [join(root, "src/views/index.ts")],
    outfile: VIEWS_BUNDLE,
    bundle: true,
    format: "iife",
    globalName: "tsdaskViews",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
  });
  await build({
    stdin: { contents: '@import "./src/views/standalone.css";\n@import "./src/labextension/style.css";\n', resolveDir: root, loader: "css" },
    outfile: VIEWS_STYLE,
    bundle: true,
    minify: true,
    logLevel: "warning",
  });
  return VIEWS_BUNDLE;
}

/** True when the bundle is missing or older than the views or the protocol they read. */
export function viewsAreStale() {
  const newest = Math.max(...["src/views", "src/protocol", "src/labextension/style.css"].map((path) => newestChange(join(root, path))));
  try {
    return Math.min(statSync(VIEWS_BUNDLE).mtimeMs, statSync(VIEWS_STYLE).mtimeMs) < newest;
  } catch {
    return true;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await buildViews();
  console.log(`Views bundled in ${((Date.now() - started) / 1000).toFixed(1)} s: dist/views/tsdask-views.{js,css}`);
}
