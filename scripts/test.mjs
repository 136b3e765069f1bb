// The whole test suite: compile sources and tests, prepare what the tests need, run node's test runner.
// Usage: npm test [-- <substring filter on test file paths>]
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildLabextension, labextensionIsStale } from "./build-labextension.mjs";
import { buildViews, viewsAreStale } from "./build-views.mjs";
import { ensureChromium } from "./setup/chromium.mjs";
import { ensureSelfLink } from "./setup/link-self.mjs";
import { ensurePythonEnv } from "./setup/python.mjs";
import { ensureRedisServer } from "./setup/redis.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: "inherit" });

// build/ is wiped so a deleted test's stale output cannot run.
rmSync(join(root, "build"), { recursive: true, force: true });
run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);
run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.test.json"]);
// The browser tests load the built JupyterLab extension; rebuild it when its sources changed.
if (labextensionIsStale()) buildLabextension();
// Standalone pages (reports, plot files) inline the views bundle.
if (viewsAreStale()) await buildViews();

// Real parts for the notebook and browser tests: a Jupyter stack with the tslab kernel, and Chromium.
// Notebooks import "tsdask" through node_modules/tsdask, made here too in case install scripts were skipped.
ensureSelfLink();
const python = ensurePythonEnv();
const chromium = ensureChromium();
const env = { ...python.env, TSDASK_PYTHON: python.python, TSDASK_JUPYTER: python.jupyter, TSDASK_CHROMIUM: chromium };
// Debian's redis-server for the Redis transport's tests (each test starts and stops its own).
env.TSDASK_REDIS_SERVER = ensureRedisServer();

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith(".test.js") ? [path] : [];
  });
}
const filter = process.argv[2];
const files = testFiles(join(root, "build/test"))
  .map((path) => relative(root, path))
  .filter((path) => filter === undefined || path.includes(filter))
  .sort();

const result = spawnSync(process.execPath, ["--test", "--test-concurrency=1", "--test-reporter=spec", ...files], {
  cwd: root,
  stdio: "inherit",
  env,
});
process.exit(result.status ?? 1);
