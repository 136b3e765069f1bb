// The test suite: build what the tests need (incrementally), prepare the real parts they use,
// run node's test runner. Two tiers (README, "Testing"):
//   npm test [-- <substring>]            every test file, the heavy ones side by side
//   npm run test:unit [-- <substring>]   the unit tier only: test/**/*.unit.test.ts, no real parts
// <substring> keeps the test files whose path contains it.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildLabextension, labextensionIsStale } from "./build-labextension.mjs";
import { buildViews, viewsAreStale } from "./build-views.mjs";
import { MEASURED } from "./test-measured.mjs";
import { ensureChromium } from "./setup/chromium.mjs";
import { ensureSelfLink } from "./setup/link-self.mjs";
import { ensurePythonEnv } from "./setup/python.mjs";
import { ensureRedisServer } from "./setup/redis.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const unitOnly = args.includes("--unit");
const filter = args.find((arg) => !arg.startsWith("--"));

/** A unit test needs nothing outside its own Node process; its file name says so. */
const UNIT_TEST = /\.unit\.test\.js$/;
/**
 * Heavy test files that run alone, after the others: they bound a wall time or a per-interval CPU
 * figure, which a neighbour on a 2-core machine would disturb. Every other heavy file runs beside
 * others: each makes its own ports, folders, Redis servers, Chromium profiles, clusters and
 * network namespaces, so no two share one. A test that measures CPU compares it with what its
 * thread's or process's own counter says it got (as context-meter and fpm-invariant do), and a
 * profile's samples by their shares of each other (statprof), which a neighbour leaves alone.
 */
const RUN_ALONE = [
  "diagnostics/resource.test.js", // sampler threads' sample counts and CPU
  "dashboard/cluster-feed.test.js", // the workers' profile windows and an idle feed's quiet
  "executors-pool.test.js", // 4 tasks of 1 s on 2 workers take about 2 s
  "interrupt.test.js", // a kernel interrupt ends the cell within 3 s
  "distributed/worker.test.js", // spilling and pausing seen in the next heartbeats
  "metrics/fine-performance-metrics.unit.test.js", // a task's wall time inside it and around it agree within 30 ms
];
/**
 * Files run side by side while the CPU they want, in cores, adds up to at most this: each file's
 * share is its CPU seconds over its wall time (MEASURED). A little above this machine's two cores,
 * since a share is an average over a run whose waits (a browser, a kernel, Redis leases) leave gaps
 * another file fills; the files' waits are for events with generous deadlines, so load only slows
 * them. (Two files that each counted as a whole busy core, plus one that mostly waits, kept the
 * two cores about 70 % busy.)
 */
const CORES_AT_ONCE = 2.5;
/** However little CPU they want, at most this many files at once: each holds processes and memory. */
const FILES_AT_ONCE = 5;
/** A file's measured CPU share, in cores; a file not measured yet counts as one busy core. */
function cpuShare(name) {
  const measured = MEASURED[name];
  return measured === undefined ? 1 : measured.cpu / measured.wall;
}
/**
 * Longest first (MEASURED's wall time), so that the short files fill the gaps around the long ones
 * instead of a long file running on alone at the end; files not measured yet last.
 */
const longestFirst = (a, b) => (MEASURED[b]?.wall ?? 0) - (MEASURED[a]?.wall ?? 0) || a.localeCompare(b);

function exec(command, commandArgs, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { cwd: root, stdio: "inherit", ...options });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(code ?? (signal === null ? 0 : 1)));
  });
}

async function mustSucceed(what, command, commandArgs) {
  const code = await exec(command, commandArgs);
  if (code !== 0) {
    console.error(`${what} failed (exit code ${code})`);
    process.exit(code);
  }
}

/**
 * `tsc -b` trusts its build-info file; `tsc --noEmit -p` (an editor's or a developer's type
 * check) writes one without any output, after which -b would build nothing. A build-info file
 * without the output it describes is dropped first.
 */
function tsc(config, buildInfo, output) {
  if (existsSync(join(root, buildInfo)) && !existsSync(join(root, output))) rmSync(join(root, buildInfo));
  return mustSucceed(`tsc -b ${config}`, process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", config]);
}

// Incremental builds (tsbuildinfo next to each output): an unchanged tree compiles nothing.
// The tests run from build/ (tsconfig.test.json: src and tests); notebooks, the CLI and the
// packed tarball use the package's own dist/ (tsconfig.json), which the unit tier never touches.
// The two compiles share no output, so they run side by side.
await Promise.all([
  tsc("tsconfig.test.json", "build/tsconfig.test.tsbuildinfo", "build/test"),
  ...(unitOnly ? [] : [tsc("tsconfig.json", "dist/tsconfig.tsbuildinfo", "dist/index.js")]),
]);
// Standalone pages (reports, plot files) inline the views bundle.
if (viewsAreStale()) await buildViews();

let env = process.env;
if (!unitOnly) {
  // The browser tests load the built JupyterLab extension; rebuild it when its sources changed.
  if (labextensionIsStale()) buildLabextension();
  // Real parts for the notebook and browser tests: a Jupyter stack with the tslab kernel, and Chromium.
  // Notebooks import "tsdask" through node_modules/tsdask, made here too in case install scripts were skipped.
  ensureSelfLink();
  const python = ensurePythonEnv();
  env = { ...python.env, TSDASK_PYTHON: python.python, TSDASK_JUPYTER: python.jupyter, TSDASK_CHROMIUM: ensureChromium() };
  // Debian's redis-server for the Redis transport's tests (each test starts and stops its own).
  env.TSDASK_REDIS_SERVER = ensureRedisServer();
}

/** Compiled test files whose source still exists: build/ is kept between runs, and a deleted test's output must not run. */
function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    if (!name.endsWith(".test.js")) return [];
    const source = join(root, relative(join(root, "build"), path)).replace(/\.js$/, ".ts");
    return existsSync(source) ? [relative(root, path)] : [];
  });
}
const files = testFiles(join(root, "build/test"))
  .filter((path) => (unitOnly ? UNIT_TEST.test(path) : true))
  .filter((path) => filter === undefined || path.includes(filter))
  .sort();
if (files.length === 0) {
  console.error(`No test file matches${unitOnly ? " the unit tier" : ""}${filter === undefined ? "" : ` and "${filter}"`}.`);
  process.exit(1);
}

/** Runs a command to its end, its stdout and stderr kept together in arrival order. */
function capture(command, commandArgs) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code: code ?? (signal === null ? 0 : 1), output }));
  });
}

/**
 * Runs a command under the test venv's Python, which waits for it with wait4: the CPU seconds of
 * the command and every process it started and reaped (kernels, JupyterLab, Chromium, Redis
 * servers, workers). Unlike wall time, that figure hardly changes with what else the machine runs.
 */
const CPU_SECONDS = `import os, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the test run too; wait for its end
signal.signal(signal.SIGTERM, lambda *_: child.terminate())
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out: out.write(str(usage.ru_utime + usage.ru_stime))
code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N, which a shell reports as 128 + N
sys.exit(128 - code if code < 0 else code)`;
const cpuDir = mkdtempSync(join(tmpdir(), "tsdask-test-cpu-"));
let cpuTotal = 0;

/**
 * Runs one test runner, measured, and prints its report whole when it ends, then its wall time and
 * its CPU seconds, the two figures MEASURED keeps (the CPU seconds are also the figure to compare
 * runs by on a shared machine). Resolves to its exit code.
 */
/**
 * A test file still running after this long fails and its process is killed: a wait without a
 * deadline of its own (a result that never comes) then costs one failed file instead of a suite
 * that never ends. The longest files take about two minutes here.
 */
const TEST_TIMEOUT_MS = 10 * 60 * 1000;
let measuredRuns = 0;
async function runMeasured(label, runnerArgs) {
  const runStarted = Date.now();
  const cpuFile = join(cpuDir, `run-${measuredRuns++}`);
  const run = [process.execPath, "--test", "--test-reporter=spec", `--test-timeout=${TEST_TIMEOUT_MS}`, ...runnerArgs];
  // The unit tier alone (--unit) sets up no Python: it runs unmeasured.
  const measured = env.TSDASK_PYTHON !== undefined;
  const { code, output } = await (measured ? capture(env.TSDASK_PYTHON, ["-c", CPU_SECONDS, cpuFile, ...run]) : capture(run[0], run.slice(1)));
  process.stdout.write(output);
  const seconds = ((Date.now() - runStarted) / 1000).toFixed(0);
  const cpu = existsSync(cpuFile) ? Number(readFileSync(cpuFile, "utf8")) : undefined;
  cpuTotal += cpu ?? 0;
  const cpuText = cpu === undefined ? "" : ` (${cpu.toFixed(0)} CPU-s)`;
  console.log(`${label}: ${code === 0 ? "passed" : `failed (exit code ${code})`} in ${seconds} s${cpuText}\n`);
  return code;
}

/** One thing to run, a test file or the unit tier, with the CPU it wants in cores (`cores`). */
const fileJob = (file) => ({ run: () => runMeasured(file, [file]), cores: cpuShare(relative("build/test", file)) });

/** The unit tier's files in one runner, two at a time (quick and in-process). */
const unitTierJob = (group) => ({
  run: () => runMeasured(`the unit tier (${group.length} test files)`, ["--test-concurrency=2", ...group]),
  cores: cpuShare("unit tier"),
});

/**
 * Runs `jobs` in the order given (node's own runner starts files in order of name, which left the
 * longest file to run on alone at the end), as many at a time as `filesAtOnce` and `coresAtOnce`
 * allow: a job that does not fit yet lets a later one that does go first, and a job runs whenever
 * nothing else does. Resolves to the last failing exit code, or 0.
 */
function runInOrder(jobs, { filesAtOnce, coresAtOnce }) {
  const queue = [...jobs];
  let running = 0;
  let cores = 0;
  let failed = 0;
  return new Promise((resolve) => {
    const fill = () => {
      for (;;) {
        const next = queue.findIndex((job) => running === 0 || (running < filesAtOnce && cores + job.cores <= coresAtOnce));
        if (next === -1) break;
        const [job] = queue.splice(next, 1);
        running += 1;
        cores += job.cores;
        job.run().then((code) => {
          running -= 1;
          cores -= job.cores;
          if (code !== 0) failed = code;
          fill();
        });
      }
      if (running === 0 && queue.length === 0) resolve(failed);
    };
    fill();
  });
}

const started = Date.now();
const alone = files.filter((path) => RUN_ALONE.some((name) => path.endsWith(`/${name}`)));
const unit = files.filter((path) => UNIT_TEST.test(path) && !alone.includes(path));
const heavy = files.filter((path) => !unit.includes(path) && !alone.includes(path)).sort((a, b) => longestFirst(relative("build/test", a), relative("build/test", b)));
// The unit tier first, beside the longest heavy files, then the other heavy files as cores free
// up; last, one by one, those that run alone.
const together = [...(unit.length === 0 ? [] : [unitTierJob(unit)]), ...heavy.map(fileJob)];
const codes = [
  await runInOrder(together, { filesAtOnce: FILES_AT_ONCE, coresAtOnce: CORES_AT_ONCE }),
  await runInOrder(alone.map(fileJob), { filesAtOnce: 1, coresAtOnce: 1 }),
];
rmSync(cpuDir, { recursive: true, force: true });
const wall = (Date.now() - started) / 1000;
// Every core busy throughout would be 100 %.
const cpuText = env.TSDASK_PYTHON === undefined ? "" : `; they used ${cpuTotal.toFixed(0)} CPU-s, ${((100 * cpuTotal) / (availableParallelism() * wall)).toFixed(0)} % of ${availableParallelism()} cores`;
console.log(`${files.length} test files in ${wall.toFixed(0)} s${cpuText}`);
process.exit(codes.find((code) => code !== 0) ?? 0);
