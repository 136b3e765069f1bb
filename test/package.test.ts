// The published shape of tsdask: the `npm pack` tarball installs into an empty folder next to
// tslab, `npx tsdask install` sets Jupyter up from there, and a notebook on that kernel uses tsdask.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

const ROOT = process.cwd();
const scratch = mkdtempSync(join(tmpdir(), "tsdask-pack-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const MIME = "application/vnd.tsdask.v1+json";

test("the packed tarball installs into an empty folder and works with Jupyter there", () => {
  // dist/ is already built by the test runner; --ignore-scripts skips a second build.
  const npm = (args: readonly string[], cwd: string): string =>
    execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8" });
  npm(["pack", "--ignore-scripts", "--pack-destination", scratch], ROOT);
  const tarball = readdirSync(scratch).find((name) => /^tsdask-.*\.tgz$/.test(name));
  assert.ok(tarball, "npm pack wrote no tarball");

  const project = join(scratch, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user-project", private: true }));
  npm(["install", "--prefer-offline", join(scratch, tarball), "tslab"], project);

  const prefix = join(scratch, "jupyter");
  const env = { ...process.env, JUPYTER_PATH: join(prefix, "share/jupyter") };
  execFileSync("npx", ["--no-install", "tsdask", "install", "--prefix", prefix], { cwd: project, encoding: "utf8" });
  const kernel = JSON.parse(readFileSync(join(prefix, "share/jupyter/kernels/tslab/kernel.json"), "utf8")) as { argv: string[] };
  assert.equal(kernel.argv[1], join(project, "node_modules/tslab/bin/tslab"), "the kernel runs the project's own tslab");
  const listed = spawnSync(process.env.TSDASK_JUPYTER as string, ["labextension", "list"], { env, encoding: "utf8" });
  assert.match((listed.stdout + listed.stderr).replace(/\x1b\[[\d;]*m/g, ""), /tsdask v\S+ enabled\s+OK/);

  const notebook = {
    cells: [
      {
        cell_type: "code",
        execution_count: null,
        id: "use-tsdask",
        metadata: {},
        outputs: [],
        source: [
          'import { get } from "tsdask";\n',
          'import * as tslab from "tslab";\n',
          "const add = (a: number, b: number) => a + b;\n",
          'console.log("e =", await get({ a: 1, b: 2, c: [add, "a", "b"] }, "c"));\n',
          `tslab.newDisplay().raw("${MIME}", { version: 1, kind: "progress", id: "x", seq: 1, done: 1, total: 1, elapsed: 0.1, state: "finished", groups: [] } as unknown as string);\n`,
        ],
      },
    ],
    metadata: { kernelspec: { name: "tslab", display_name: "TypeScript", language: "typescript" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  writeFileSync(join(project, "check.ipynb"), JSON.stringify(notebook));
  execFileSync(
    process.env.TSDASK_JUPYTER as string,
    ["nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=120", "--output", "ran.ipynb", "check.ipynb"],
    { cwd: project, env, stdio: "pipe" },
  );
  const ran = JSON.parse(readFileSync(join(project, "ran.ipynb"), "utf8")) as {
    cells: { outputs: { output_type: string; text?: string[]; data?: Record<string, { state?: string }> }[] }[];
  };
  const outputs = ran.cells[0]?.outputs ?? [];
  assert.deepEqual(outputs.find((output) => output.output_type === "stream")?.text, ["e = 3\n"]);
  assert.equal(outputs.find((output) => output.output_type === "display_data")?.data?.[MIME]?.state, "finished");
});

test("every installed package accepts every Node version tsdask claims (no EBADENGINE on install)", () => {
  const { subset } = require("semver") as { subset(range: string, within: string): boolean };
  const claim = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
  };
  const narrower = Object.entries(lock.packages).flatMap(([path, info]) => {
    const node = Array.isArray(info.engines) ? undefined : info.engines?.node;
    return path !== "" && node !== undefined && !subset(claim, node) ? [`${path.replace(/^.*node_modules\//, "")}@${info.version}: node ${node}`] : [];
  });
  assert.deepEqual(narrower, [], `tsdask claims node ${claim}`);
  // And the Node running the tests is one of them (CI runs the oldest supported line).
  assert.ok(subset(process.version, claim), `${process.version} is outside ${claim}`);
});
