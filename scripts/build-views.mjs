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
  return VIEWS_BUNDLE;
}

/** True when the bundle is missing or older than the views or the protocol they read. */
export function viewsAreStale() {
  const newest = Math.max(newestChange(join(root, "src/views")), newestChange(join(root, "src/protocol")));
  try {
    return statSync(VIEWS_BUNDLE).mtimeMs < newest;
  } catch {
    return true;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await buildViews();
  console.log(`Views bundled in ${((Date.now() - started) / 1000).toFixed(1)} s: dist/views/tsdask-views.js`);
}
