// `npm start`: everything a fresh machine needs to try tsdask in JupyterLab, then JupyterLab itself:
//   1. the project's .venv with JupyterLab (scripts/setup/python.mjs);
//   2. the built package (npm install builds it; built here if missing, the extension rebuilt if stale);
//   3. `tsdask install --sys-prefix` into the venv: the JupyterLab extension and the tslab kernel spec;
//   4. `jupyter lab` on notebooks/ with the quick-start notebook.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildLabextension, labextensionIsStale } from "./build-labextension.mjs";
import { ensurePythonEnv } from "./setup/python.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const notebooks = join(root, "notebooks");
const FIRST_NOTEBOOKS = ["quickstart.ipynb", "getting-started.ipynb"];

const { python, jupyter } = ensurePythonEnv();
if (!existsSync(join(root, "dist/cli/index.js"))) execFileSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
else if (labextensionIsStale()) buildLabextension();
execFileSync(process.execPath, [join(root, "dist/cli/index.js"), "install", "--sys-prefix", "--python", python], {
  cwd: root,
  stdio: "inherit",
});

mkdirSync(notebooks, { recursive: true });
const first = FIRST_NOTEBOOKS.find((name) => existsSync(join(notebooks, name)));
// The venv's own Jupyter: its sys-prefix holds the extension and kernel spec just installed.
const args = ["lab", ...(first === undefined ? [] : [first]), ...(process.getuid?.() === 0 ? ["--allow-root"] : [])];
const lab = spawn(jupyter, args, { cwd: notebooks, stdio: "inherit" });
// Ctrl+C reaches JupyterLab too (same terminal); wait for its own clean shutdown, then exit with it.
process.on("SIGINT", () => undefined);
lab.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)));
