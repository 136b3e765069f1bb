// A project-local Python environment (.venv) with Jupyter, Dask and NumPy, plus the tslab
// kernel spec pointing at this project's own tslab. Idempotent: a stamp skips a finished setup.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const venv = join(root, ".venv");
const requirements = join(root, "scripts/setup/requirements.txt");

/** Creates or refreshes .venv; returns the paths and environment the tests need. */
export function ensurePythonEnv() {
  const python = join(venv, "bin/python");
  const stamp = join(venv, ".tsdask-stamp");
  const wanted = createHash("sha1").update(readFileSync(requirements)).digest("hex");
  if (!existsSync(python)) {
    const system = process.env.PYTHON ?? "python3";
    execFileSync(system, ["-m", "venv", venv], { stdio: "inherit" });
  }
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
    // PIP_RETRIES=0: where the index is unreachable, fall through to local wheels at once.
    execFileSync(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements], {
      stdio: "inherit",
      env: { ...process.env, PIP_RETRIES: process.env.PIP_RETRIES ?? "0" },
    });
    writeFileSync(stamp, wanted);
  }
  skipSlowIriFormat();
  const jupyterData = join(venv, "share/jupyter");
  writeTslabKernelSpec(join(jupyterData, "kernels/tslab"));
  return {
    python,
    jupyter: join(venv, "bin/jupyter"),
    env: { ...process.env, JUPYTER_PATH: jupyterData, PYDEVD_DISABLE_FILE_VALIDATION: "1" },
  };
}

/**
 * jsonschema (≥ 4.25, from Jupyter's jsonschema[format-nongpl]) imports rfc3987-syntax, which builds
 * some 35 Earley parsers at import (python-jsonschema/jsonschema#1428): about 3 CPU seconds in
 * every notebook run (nbformat imports jsonschema) and JupyterLab server (jupyter_events), some
 * thirty times a suite. Only the "iri" formats use it, and no Jupyter schema has one: a .pth
 * line, run at every start of the venv's Python, makes that import fail, which jsonschema expects
 * (it then checks no "iri" format).
 */
function skipSlowIriFormat() {
  const lib = join(venv, "lib");
  for (const version of readdirSync(lib).filter((name) => name.startsWith("python"))) {
    const sitePackages = join(lib, version, "site-packages");
    if (!existsSync(sitePackages)) continue;
    writeFileSync(join(sitePackages, "tsdask-skip-rfc3987-syntax.pth"), 'import sys; sys.modules.setdefault("rfc3987_syntax", None)\n');
  }
}

/** The kernel spec tslab's own installer would write, but with absolute paths to our copy. */
function writeTslabKernelSpec(dir) {
  mkdirSync(dir, { recursive: true });
  const tslab = join(root, "node_modules/tslab/bin/tslab");
  const spec = {
    argv: [process.execPath, tslab, "kernel", "--config-path", "{connection_file}"],
    display_name: "TypeScript",
    language: "typescript",
  };
  writeFileSync(join(dir, "kernel.json"), JSON.stringify(spec, null, 2) + "\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { python } = ensurePythonEnv();
  console.log(`Python environment ready: ${python}`);
}
