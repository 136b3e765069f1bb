// `tsdask install` / `tsdask uninstall`: puts the prebuilt JupyterLab extension and a tslab kernel
// spec into a Jupyter data directory, the way `pip install` would put a Python package's, without pip.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";

const PACKAGE_ROOT = resolve(__dirname, "../..");
const EXTENSION_NAME = "tsdask";

/** Where to install, as the user chose it on the command line. */
export type Target =
  | { readonly kind: "prefix"; readonly prefix: string }
  | { readonly kind: "sys-prefix"; readonly python?: string }
  | { readonly kind: "user"; readonly python?: string };

export class UsageError extends Error {}

/** Parses `[--user | --sys-prefix | --prefix P] [--python PY]`; the default is --sys-prefix, as pip's. */
export function parseTarget(args: readonly string[]): Target {
  let kind: Target["kind"] | undefined;
  let prefix: string | undefined;
  let python: string | undefined;
  const choose = (next: Target["kind"]): void => {
    if (kind !== undefined && kind !== next) throw new UsageError(`choose one of --user, --sys-prefix, --prefix (got --${kind} and --${next})`);
    kind = next;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = (): string => {
      const next = args[++i];
      if (next === undefined || next.startsWith("--")) throw new UsageError(`${arg} needs a path`);
      return next;
    };
    if (arg === "--user") choose("user");
    else if (arg === "--sys-prefix") choose("sys-prefix");
    else if (arg === "--prefix") {
      choose("prefix");
      prefix = resolve(value());
    }
    else if (arg === "--python") python = resolve(value());
    else throw new UsageError(`unknown option "${arg}"`);
  }
  if (kind === "prefix") return { kind, prefix: prefix as string };
  return { kind: kind ?? "sys-prefix", python };
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, command);
    if (dir !== "" && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The Python that runs the `jupyter` on PATH: the interpreter named on its `#!` line. */
function jupyterPython(): string {
  const jupyter = onPath("jupyter");
  if (jupyter === undefined) {
    throw new UsageError("no `jupyter` on PATH: install JupyterLab first, or name its Python with --python, or use --prefix");
  }
  const shebang = readFileSync(jupyter, "utf8").split("\n", 1)[0] ?? "";
  const python = shebang.startsWith("#!") ? shebang.slice(2).trim().split(/\s+/)[0] : undefined;
  if (python === undefined || !existsSync(python)) {
    throw new UsageError(`cannot tell which Python runs ${jupyter}; name it with --python`);
  }
  return python;
}

function askPython(python: string, code: string): string {
  return execFileSync(python, ["-c", code], { encoding: "utf8" }).trim();
}

/** The Jupyter data directory (…/share/jupyter) the target stands for. */
export function dataDir(target: Target): string {
  switch (target.kind) {
    case "prefix":
      return join(target.prefix, "share/jupyter");
    case "sys-prefix":
      return join(askPython(target.python ?? jupyterPython(), "import sys; print(sys.prefix)"), "share/jupyter");
    case "user":
      return askPython(target.python ?? jupyterPython(), "from jupyter_core.paths import jupyter_data_dir; print(jupyter_data_dir())");
  }
}

/** The built extension shipped in this package (dist/labextension). */
function builtExtension(): string {
  const dir = join(PACKAGE_ROOT, "dist/labextension");
  const manifest = join(dir, "package.json");
  if (!existsSync(manifest) || JSON.parse(readFileSync(manifest, "utf8")).jupyterlab?._build === undefined) {
    throw new UsageError(`the JupyterLab extension is not built (${dir}): run \`npm run build\` in the tsdask folder`);
  }
  return dir;
}

/** tslab as the user's project resolves it (the folder npx runs in), else as tsdask does. */
function tslabEntry(): string {
  let manifest: string;
  try {
    manifest = require.resolve("tslab/package.json", { paths: [process.cwd(), PACKAGE_ROOT] });
  } catch {
    throw new UsageError("tslab is not installed: run `npm install tslab` in your project, then `npx tsdask install` again");
  }
  return join(dirname(manifest), "bin/tslab");
}

export interface Installed {
  readonly labextension: string;
  readonly kernelSpec: string;
}

export function install(target: Target): Installed {
  const source = builtExtension();
  const tslab = tslabEntry();
  const data = dataDir(target);
  const labextension = join(data, "labextensions", EXTENSION_NAME);
  rmSync(labextension, { recursive: true, force: true });
  cpSync(source, labextension, { recursive: true });
  const uninstall = `npx tsdask uninstall${target.kind === "prefix" ? ` --prefix ${target.prefix}` : ` --${target.kind}`}`;
  const installJson = { packageManager: "npm", packageName: "tsdask", uninstallInstructions: `Run: ${uninstall}` };
  writeFileSync(join(labextension, "install.json"), JSON.stringify(installJson, null, 2) + "\n");

  // Absolute node and tslab paths: the kernel runs this project's tslab whatever is on PATH later.
  const kernelSpec = join(data, "kernels/tslab");
  mkdirSync(kernelSpec, { recursive: true });
  const spec = {
    argv: [process.execPath, tslab, "kernel", "--config-path", "{connection_file}"],
    display_name: "TypeScript",
    language: "typescript",
  };
  writeFileSync(join(kernelSpec, "kernel.json"), JSON.stringify(spec, null, 2) + "\n");
  return { labextension, kernelSpec };
}

/** What an install reports: where the extension and the kernel spec went. */
export function describeInstall({ labextension, kernelSpec }: Installed): string[] {
  return [`Installed the JupyterLab extension: ${labextension}`, `Installed the tslab kernel spec:    ${kernelSpec}`];
}

export function uninstall(target: Target): Installed {
  const data = dataDir(target);
  const installed = { labextension: join(data, "labextensions", EXTENSION_NAME), kernelSpec: join(data, "kernels/tslab") };
  rmSync(installed.labextension, { recursive: true, force: true });
  rmSync(installed.kernelSpec, { recursive: true, force: true });
  return installed;
}
