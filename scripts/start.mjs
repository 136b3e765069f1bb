// `npm start`: everything a fresh machine needs to try tsdask in JupyterLab, then JupyterLab itself:
//   1. the project's .venv with JupyterLab (scripts/setup/python.mjs);
//   2. the built package (npm install builds it; built here if missing, the extension rebuilt if stale);
//   3. `tsdask install --sys-prefix` into the venv: the JupyterLab extension and the tslab kernel spec;
//   4. `jupyter lab` on notebooks/ with the quick-start notebook.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildLabextension, labextensionIsStale } from "./build-labextension.mjs";
import { ensurePythonEnv } from "./setup/python.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const notebooks = join(root, "notebooks");
const FIRST_NOTEBOOKS = ["quickstart.ipynb", "getting-started.ipynb"];

const { python, jupyter } = ensurePythonEnv();
if (!existsSync(join(root, "dist/cli/index.js"))) execFileSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
else if (labextensionIsStale()) buildLabextension();
// `tsdask install --sys-prefix` as a function: the command's closing advice, to restart a
// running JupyterLab, is wrong here, where JupyterLab starts next.
const { describeInstall, install, parseTarget } = await import(pathToFileURL(join(root, "dist/cli/install.js")).href);
for (const line of describeInstall(install(parseTarget(["--sys-prefix", "--python", python])))) console.log(line);

mkdirSync(notebooks, { recursive: true });
const first = FIRST_NOTEBOOKS.find((name) => existsSync(join(notebooks, name)));
// The venv's own Jupyter: its sys-prefix holds the extension and kernel spec just installed.
const args = ["lab", ...(first === undefined ? [] : [first]), ...(process.getuid?.() === 0 ? ["--allow-root"] : [])];
console.log(`Starting JupyterLab on notebooks/${first === undefined ? "" : ` with ${first}`}.`);
const lab = spawn(jupyter, args, { cwd: notebooks, stdio: "inherit" });
// Ctrl+C reaches JupyterLab too (same terminal); wait for its own clean shutdown, then exit with it.
process.on("SIGINT", () => undefined);
lab.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)));
