// The test suite: build what the tests need (incrementally), prepare the real parts they use,
// run node's test runner. Two tiers (README, "Testing"):
//   npm test [-- <substring>]            every test file, the heavy ones side by side
//   npm run test:unit [-- <substring>]   the unit tier only: test/**/*.unit.test.ts, no real parts
// <substring> keeps the test files whose path contains it.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildLabextension, labextensionIsStale } from "./build-labextension.mjs";
import { buildViews, viewsAreStale } from "./build-views.mjs";
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
 * thread's own counter says it got (as context-meter and fpm-invariant do), and a profile's
 * samples by their shares of each other (statprof), which a neighbour leaves alone.
 */
const RUN_ALONE = [
  "diagnostics/resource.test.js", // sampler threads' sample counts and CPU
  "dashboard/cluster-feed.test.js", // the workers' profile windows and an idle feed's quiet
  "executors-pool.test.js", // 4 tasks of 1 s on 2 workers take about 2 s
  "interrupt.test.js", // a kernel interrupt ends the cell within 3 s
  "distributed/worker.test.js", // spilling and pausing seen in the next heartbeats
  // A task's wall time split into its thread's CPU and the rest, within 30 ms: about where a
  // thread is descheduled, which a neighbour changes.
  "metrics/fine-performance-metrics.unit.test.js",
];
/**
 * Heavy files that keep a core busy, at a time: two keep both cores of this machine busy (three
 * gained little more, the suite being mostly CPU-bound on 2 cores).
 */
const BUSY_AT_ONCE = 2;
/**
 * Heavy files that mostly wait (a browser, JupyterLab, a kernel, leases and timeouts of Redis
 * workers: their CPU seconds are half their wall time or less) take two more slots beside the two
 * busy ones. Their waits are for events, with generous deadlines, so the load only slows them.
 * Files with a time bound or a count that load can break stay off it, however long they wait
 * (browser: a progress bar's values sampled while it runs; cluster-fpm: sleeps between scaling
 * steps; redis-secrets, redis-diagnostics: a timeout's and a first sample's bounds;
 * redis-faults-data: a rerun count that a late report under load can raise).
 */
const MOSTLY_WAITS = [
  "dashboard/cluster-lab.browser.test.js", // 34 CPU-s in 90 s
  "distributed/redis-faults.test.js", // 36 CPU-s in 110 s
  "dashboard/sizing-lab.browser.test.js", // 33 CPU-s in 95 s
  "dashboard/lab.browser.test.js", // 33 CPU-s in 95 s
  "distributed/redis-peers-data.test.js", // 5 CPU-s in 29 s
];
/**
 * Slots for files that mostly wait, beside the busy ones. Two looked better in a replay of one
 * run's figures, but fresh-clone runs took the same time with one (ci42: 632 s, the shared phase
 * over at +566 s) as with two (ci37, ci38: 646 and 628 s, over at +565 and +559 s): the suite is
 * bound by its CPU seconds on 2 cores, and one slot crowds the machine less.
 */
const WAITING_AT_ONCE = 1;
const AT_ONCE = BUSY_AT_ONCE + WAITING_AT_ONCE;
/**
 * The longest heavy files (minutes, not seconds), by wall time, started first so that the shorter
 * ones fill the other slots around them instead of one long file running on alone at the end.
 */
const LONGEST_FIRST = [
  "notebook-diagnosing.test.js", // four QR factorisations of the seeds' size in one notebook
  "notebook-metrics.test.js", // QR factorisations on threads and on a cluster, their metrics
  "notebook-arrays.test.js", // a QR factorisation under three profilers
  "dashboard/cluster-lab.browser.test.js",
  "distributed/redis-faults.test.js", // mostly waits: leases, stalled checks, sleeping tasks
  "dashboard/sizing-lab.browser.test.js",
  "dashboard/lab.browser.test.js",
  "distributed/redis.test.js",
  "browser-quickstart.test.js",
  "metrics/panel.lab.test.js",
  "distributed/redis-faults-data.test.js",
  "package.test.js",
  "distributed/cluster-qr.test.js",
  "browser.test.js",
  "notebook.test.js", // the short user notebooks, the display bridge
];

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
 * A test file still running after this long fails and its process is killed: a wait without a
 * deadline of its own (a result that never comes) then costs one failed file instead of a suite
 * that never ends. The longest files take about two minutes here.
 */
const TEST_TIMEOUT_MS = 10 * 60 * 1000;
/** Node's test runner, as every run here starts it. */
const NODE_TEST = ["--test", "--test-reporter=spec", `--test-timeout=${TEST_TIMEOUT_MS}`];

/**
 * Runs one test file, measured, and prints its report whole when it ends, then its wall time, the
 * figure LONGEST_FIRST is ordered by, and its CPU seconds, the figure to compare runs by on a
 * shared machine. Resolves to its exit code.
 */
let measuredFiles = 0;
async function runMeasured(file) {
  const fileStarted = Date.now();
  const cpuFile = join(cpuDir, `file-${measuredFiles++}`);
  const run = [process.execPath, ...NODE_TEST, file];
  // The unit tier alone (--unit) sets up no Python: its files that run alone run unmeasured.
  const measured = env.TSDASK_PYTHON !== undefined;
  const { code, output } = await (measured ? capture(env.TSDASK_PYTHON, ["-c", CPU_SECONDS, cpuFile, ...run]) : capture(run[0], run.slice(1)));
  process.stdout.write(output);
  const seconds = ((Date.now() - fileStarted) / 1000).toFixed(0);
  const cpu = existsSync(cpuFile) ? Number(readFileSync(cpuFile, "utf8")) : undefined;
  cpuTotal += cpu ?? 0;
  const cpuText = cpu === undefined ? "" : ` (${cpu.toFixed(0)} CPU-s)`;
  // When it started too: with the wall and CPU times, a run's schedule can be replayed to try another packing.
  const startedAt = ((fileStarted - started) / 1000).toFixed(0);
  console.log(`${file}: ${code === 0 ? "passed" : `failed (exit code ${code})`} in ${seconds} s${cpuText}, from +${startedAt} s\n`);
  return code;
}

/**
 * One thing to run: a test file, or the unit tier's files in one runner. `slots`: how many of the
 * slots it takes; `busy`: how many cores it keeps busy (none for a file on MOSTLY_WAITS).
 */
const fileJob = (file) => ({ run: () => runMeasured(file), slots: 1, busy: MOSTLY_WAITS.some((name) => file === `build/test/${name}`) ? 0 : 1 });

/** The unit tier's files, two at a time (quick and in-process: both cores); the report printed whole at the end. */
function unitTierJob(group) {
  const run = async () => {
    const tierStarted = Date.now();
    const { code, output } = await capture(process.execPath, [...NODE_TEST, "--test-concurrency=2", ...group]);
    process.stdout.write(output);
    const seconds = ((Date.now() - tierStarted) / 1000).toFixed(0);
    const startedAt = ((tierStarted - started) / 1000).toFixed(0);
    console.log(`the unit tier (${group.length} test files): ${code === 0 ? "passed" : `failed (exit code ${code})`} in ${seconds} s, from +${startedAt} s\n`);
    return code;
  };
  return { run, slots: 2, busy: 2 };
}

/**
 * Runs `jobs` in the order given (node's own runner starts files in order of name, which left the
 * longest file to run on alone at the end), as many at a time as fit in `atOnce` slots with at
 * most `busyAtOnce` busy cores: a job that does not fit yet lets a later one that does go first.
 * Resolves to the last failing exit code, or 0.
 */
function runInOrder(jobs, { atOnce, busyAtOnce }) {
  const queue = [...jobs];
  let slots = 0;
  let busy = 0;
  let failed = 0;
  return new Promise((resolve) => {
    const fill = () => {
      for (;;) {
        const next = queue.findIndex((job) => slots + job.slots <= atOnce && busy + job.busy <= busyAtOnce);
        if (next === -1) break;
        const [job] = queue.splice(next, 1);
        slots += job.slots;
        busy += job.busy;
        job.run().then((code) => {
          slots -= job.slots;
          busy -= job.busy;
          if (code !== 0) failed = code;
          fill();
        });
      }
      if (slots === 0 && queue.length === 0) resolve(failed);
    };
    fill();
  });
}

const started = Date.now();
const alone = files.filter((path) => RUN_ALONE.some((name) => path.endsWith(`/${name}`)));
const unit = files.filter((path) => UNIT_TEST.test(path) && !alone.includes(path));
const rank = (path) => {
  const index = LONGEST_FIRST.findIndex((name) => path === `build/test/${name}`);
  return index === -1 ? LONGEST_FIRST.length : index;
};
const heavy = files.filter((path) => !unit.includes(path) && !alone.includes(path)).sort((a, b) => rank(a) - rank(b));
// The unit tier first, beside a heavy file that mostly waits, then the heavy files; last, one by
// one, those that run alone.
const together = [...(unit.length === 0 ? [] : [unitTierJob(unit)]), ...heavy.map(fileJob)];
const codes = [await runInOrder(together, { atOnce: AT_ONCE, busyAtOnce: BUSY_AT_ONCE }), await runInOrder(alone.map(fileJob), { atOnce: 1, busyAtOnce: 1 })];
rmSync(cpuDir, { recursive: true, force: true });
const cpuText = env.TSDASK_PYTHON === undefined ? "" : `; the non-unit ones used ${cpuTotal.toFixed(0)} CPU-s`;
console.log(`${files.length} test files in ${((Date.now() - started) / 1000).toFixed(0)} s${cpuText}`);
process.exit(codes.find((code) => code !== 0) ?? 0);
