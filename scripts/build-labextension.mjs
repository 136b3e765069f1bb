// Builds the prebuilt JupyterLab extension into the package's "jupyterlab.outputDir" from npm
// packages alone: tsc compiles src/labextension, then @jupyterlab/builder's build-labextension
// (webpack + module federation) bundles it against the core package list from @jupyterlab/core-meta.
//
// The builder always exposes the package's "main" as ./index and shares its "dependencies"; our
// main is the Node library, so the builder runs on a staging package (build/labextension) whose
// main is the compiled extension and whose dependencies are empty (vega is bundled privately).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const stage = join(root, "build/labextension");
const node = (script, ...args) => execFileSync(process.execPath, [join(root, script), ...args], { cwd: root, stdio: "inherit" });

export function buildLabextension({ development = false } = {}) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const outputDir = join(root, pkg.jupyterlab.outputDir);
  rmSync(stage, { recursive: true, force: true });
  node("node_modules/typescript/bin/tsc", "-p", "src/labextension/tsconfig.json");

  mkdirSync(join(stage, "core"), { recursive: true });
  cpSync(join(root, "node_modules/@jupyterlab/core-meta/core.package.json"), join(stage, "core/package.json"));
  const staged = {
    name: pkg.name,
    version: pkg.version,
    description: pkg.description,
    license: pkg.license,
    main: "lib/labextension/index.js",
    style: relative(stage, join(root, "src/labextension/style.css")),
    dependencies: {},
    jupyterlab: { ...pkg.jupyterlab, outputDir: relative(stage, outputDir) },
  };
  writeFileSync(join(stage, "package.json"), JSON.stringify(staged, null, 2) + "\n");

  // A clean output: the builder adds content-hashed files and never removes old ones.
  rmSync(outputDir, { recursive: true, force: true });
  const mode = development ? ["--development"] : [];
  node("node_modules/@jupyterlab/builder/lib/build-labextension.js", ...mode, "--core-path", join(stage, "core"), stage);
  return outputDir;
}

/** The latest modification time of a file or of anything in a folder. */
export function newestChange(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestChange(join(path, name))));
}

/** True when the built extension is missing or older than its sources (for the test runner). */
export function labextensionIsStale() {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const manifest = join(root, pkg.jupyterlab.outputDir, "package.json");
  if (!existsSync(manifest)) return true;
  const sources = ["src/labextension", "src/views", "src/protocol", "package.json"].map((path) => newestChange(join(root, path)));
  return Math.max(...sources) > statSync(manifest).mtimeMs;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const outputDir = buildLabextension({ development: process.argv.includes("--development") });
  console.log(`JupyterLab extension built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${relative(root, outputDir)}`);
}
