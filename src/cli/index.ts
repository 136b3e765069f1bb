#!/usr/bin/env node
// The `tsdask` command: `tsdask demo` computes a small graph in the terminal with a callback
// that prints keys (Dask's "Custom Callbacks" example); `tsdask install` / `uninstall` set up JupyterLab;
// `tsdask worker redis://…` runs a worker of a Redis cluster.

import { Callback, type Key, formatKey, get, withCallbacks } from "../kernel";
import { UsageError, describeInstall, install, parseTarget, uninstall } from "./install";
import { WORKER_USAGE, workerCommand } from "./worker";

class PrintKeys extends Callback {
  override pretask(key: Key): void {
    console.log(`Computing: ${formatKey(key)}!`);
  }
}

const add = (a: number, b: number): number => a + b;
const mul = (a: number, b: number): number => a * b;

async function demo(): Promise<void> {
  const dsk = { a: 1, b: 2, c: [add, "a", "b"], d: [mul, "a", "b"], e: [mul, "c", "d"] };
  console.log("Graph: a = 1, b = 2, c = add(a, b), d = mul(a, b), e = mul(c, d)");
  const result = await withCallbacks([new PrintKeys()], () => get(dsk, "e"));
  console.log(`Result: e = ${result}`);
}

const INSTALL_OPTIONS = "[--sys-prefix (default) | --user | --prefix DIR] [--python PYTHON]";

async function installCommand(args: readonly string[]): Promise<void> {
  for (const line of describeInstall(install(parseTarget(args)))) console.log(line);
  console.log("Restart JupyterLab (or reload its page) to load the extension.");
}

async function uninstallCommand(args: readonly string[]): Promise<void> {
  const { labextension, kernelSpec } = uninstall(parseTarget(args));
  console.log(`Removed ${labextension}`);
  console.log(`Removed ${kernelSpec}`);
}

const commands: Record<string, (args: readonly string[]) => Promise<void>> = {
  demo,
  install: installCommand,
  uninstall: uninstallCommand,
  worker: workerCommand,
};

function usage(): string {
  return [
    "Usage:",
    "  tsdask demo                 compute a small graph in the terminal",
    `  tsdask install ${INSTALL_OPTIONS}`,
    "                              add the JupyterLab extension and the tslab kernel to Jupyter",
    `  tsdask uninstall ${INSTALL_OPTIONS}`,
    WORKER_USAGE,
  ].join("\n");
}

async function main(argv: readonly string[]): Promise<void> {
  const [name = "demo", ...args] = argv;
  const command = commands[name];
  if (command === undefined) {
    console.error(`Unknown command "${name}".\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  await command(args);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`tsdask: ${error.message}\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  console.error(error);
  process.exitCode = 1;
});
