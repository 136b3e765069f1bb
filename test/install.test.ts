// `tsdask install` / `uninstall` against the real Jupyter in .venv: the copied extension is listed
// as enabled by `jupyter labextension list`, the kernel spec points at this project's tslab.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

const ROOT = process.cwd();
const CLI = join(ROOT, "dist/cli/index.js");
const scratch = mkdtempSync(join(tmpdir(), "tsdask-install-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function tsdask(args: readonly string[], env: NodeJS.ProcessEnv = process.env): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { env, encoding: "utf8" });
  return { status: result.status, output: result.stdout + result.stderr };
}

function labextensionList(jupyterPath: string, env: NodeJS.ProcessEnv = process.env): string {
  const jupyter = process.env.TSDASK_JUPYTER;
  assert.ok(jupyter, "TSDASK_JUPYTER is not set: run the tests with `npm test`");
  // The list goes to stderr, coloured.
  const result = spawnSync(jupyter, ["labextension", "list"], { env: { ...env, JUPYTER_PATH: jupyterPath }, encoding: "utf8" });
  return (result.stdout + result.stderr).replace(/\x1b\[[\d;]*m/g, "");
}

test("install --prefix puts an enabled extension and the tslab kernel spec there; uninstall removes both", () => {
  const prefix = join(scratch, "prefix");
  const data = join(prefix, "share/jupyter");
  const installed = tsdask(["install", "--prefix", prefix]);
  assert.equal(installed.status, 0, installed.output);
  assert.match(labextensionList(data), /tsdask v\d+\.\d+\.\d+\S* enabled\s+OK/);

  const spec = JSON.parse(readFileSync(join(data, "kernels/tslab/kernel.json"), "utf8")) as { argv: string[] };
  assert.deepEqual(spec.argv, [process.execPath, join(ROOT, "node_modules/tslab/bin/tslab"), "kernel", "--config-path", "{connection_file}"]);
  const kernels = execFileSync(process.env.TSDASK_JUPYTER as string, ["kernelspec", "list"], {
    env: { ...process.env, JUPYTER_PATH: data },
    encoding: "utf8",
  });
  assert.match(kernels, new RegExp(`tslab\\s+${join(data, "kernels/tslab")}`));

  const removed = tsdask(["uninstall", "--prefix", prefix]);
  assert.equal(removed.status, 0, removed.output);
  assert.equal(existsSync(join(data, "labextensions/tsdask")), false);
  assert.equal(existsSync(join(data, "kernels/tslab")), false);
  assert.doesNotMatch(labextensionList(data), /tsdask/);
});

test("install --user asks that Python's jupyter_core for the user data dir", () => {
  const python = process.env.TSDASK_PYTHON as string;
  const userData = join(scratch, "user-data");
  const env = { ...process.env, JUPYTER_DATA_DIR: userData };
  const installed = tsdask(["install", "--user", "--python", python], env);
  assert.equal(installed.status, 0, installed.output);
  assert.ok(existsSync(join(userData, "labextensions/tsdask/package.json")));
  assert.match(labextensionList(join(scratch, "unused"), env), /tsdask v\S+ enabled\s+OK/);
  assert.equal(tsdask(["uninstall", "--user", "--python", python], env).status, 0);
  assert.equal(existsSync(join(userData, "labextensions/tsdask")), false);
});

test("bad options and a missing jupyter are explained", () => {
  const both = tsdask(["install", "--user", "--prefix", scratch]);
  assert.equal(both.status, 2);
  assert.match(both.output, /choose one of --user, --sys-prefix, --prefix/);
  assert.match(tsdask(["install", "--frobnicate"]).output, /unknown option "--frobnicate"/);
  const noJupyter = tsdask(["install", "--sys-prefix"], { ...process.env, PATH: join(scratch, "empty") });
  assert.equal(noJupyter.status, 2);
  assert.match(noJupyter.output, /no `jupyter` on PATH/);
});
