// Benchmarks: compile, prepare the Python side (Dask, NumPy), run bench/<name>.ts files.
// Usage: npm run bench [-- <name> [options…]]   (no name: every benchmark; options go to that one)
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePythonEnv } from "./setup/python.mjs";
import { ensureRedisServer } from "./setup/redis.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.test.json"], { cwd: root, stdio: "inherit" });
const python = ensurePythonEnv();
const env = { ...python.env, TSDASK_PYTHON: python.python, TSDASK_REDIS_SERVER: ensureRedisServer() };

const wanted = process.argv[2];
const benches = readdirSync(join(root, "build/bench"))
  .filter((name) => name.endsWith(".js") && !["graphs.js", "harness.js"].includes(name))
  .filter((name) => wanted === undefined || name === `${wanted}.js`);
if (benches.length === 0) throw new Error(`No benchmark named ${wanted}`);
for (const name of benches) {
  console.log(`\n=== bench/${name.replace(/\.js$/, ".ts")}`);
  execFileSync(process.execPath, ["--max-old-space-size=8192", "--expose-gc", join(root, "build/bench", name), ...process.argv.slice(3)], { cwd: root, stdio: "inherit", env });
}
