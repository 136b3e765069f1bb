// Real `tsdask worker redis://…` processes for the Redis tests and benchmark (the CLI a user runs),
// optionally inside a network namespace. Every worker started here is killed when the test
// process ends (see ./children).
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { killOnExit } from "./children";
import { type RedisServer, expectEmpty } from "./redis-server";

export interface WorkerProcessOptions {
  readonly name: string;
  readonly nthreads?: number;
  readonly allowSource?: boolean;
  /** Run inside this network namespace (`ip netns exec`). */
  readonly netns?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly extraArgs?: readonly string[];
  /** The folder it is started in (default: the test's): its project's modules are the ones it runs. */
  readonly cwd?: string;
}

export interface WorkerProcess {
  readonly name: string;
  readonly pid: number;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM (it finishes running tasks and leaves); resolves when it exited. */
  stop(): Promise<void>;
  /** SIGKILL; resolves when it exited. */
  kill(): Promise<void>;
  readonly exited: Promise<number | null>;
}

/** How long a worker may take to leave after SIGTERM (it finishes its running tasks, a few seconds at most in the tests). */
const STOP_SECONDS = 60;

/** The `tsdask` command, compiled with the tests (this file runs from build/test/helpers). */
export const TSDASK_CLI = join(__dirname, "../../src/cli/index.js");

/** Starts a worker and resolves once it serves (or rejects with what it printed). */
export async function startWorker(url: string, options: WorkerProcessOptions): Promise<WorkerProcess> {
  const args = [TSDASK_CLI, "worker", url, "--name", options.name, "--nthreads", String(options.nthreads ?? 1), ...(options.extraArgs ?? [])];
  if (options.allowSource === true) args.push("--allow-source");
  const [command, commandArgs] = options.netns === undefined ? [process.execPath, args] : ["ip", ["netns", "exec", options.netns, process.execPath, ...args]];
  const child = spawn(command, commandArgs, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...options.env }, cwd: options.cwd });
  killOnExit(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`worker ${options.name} did not start within 30 s:\n${output}`));
    }, 30_000);
    const check = (): void => {
      if (!output.includes(`tsdask worker ${options.name}: serving`)) return;
      clearTimeout(timer);
      resolve();
    };
    child.stderr!.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${options.name} exited with code ${code}:\n${output}`));
    });
  });
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(name);
      // A worker a test froze (SIGSTOP) would never handle the signal otherwise.
      child.kill("SIGCONT");
    }
    // A worker that ignores SIGTERM is a fault to report, not a test file that waits forever.
    let ignored = false;
    const timer = setTimeout(() => {
      ignored = true;
      child.kill("SIGKILL");
    }, STOP_SECONDS * 1000);
    await exited;
    clearTimeout(timer);
    if (ignored) {
      throw new Error(`worker ${options.name} was still running ${STOP_SECONDS} s after ${name}; killed. Its output:\n${output.slice(-4000)}`);
    }
  };
  return {
    name: options.name,
    pid: child.pid!,
    output: () => output,
    stop: () => signal("SIGTERM"),
    kill: () => signal("SIGKILL"),
    exited,
  };
}

/** Runs `fn` while only worker `name` of `workers` takes jobs (the others stopped with SIGSTOP). */
export async function onlyOn<T>(workers: Iterable<WorkerProcess>, name: string, fn: () => Promise<T>): Promise<T> {
  const others = [...workers].filter((worker) => worker.name !== name);
  for (const worker of others) process.kill(worker.pid, "SIGSTOP");
  try {
    return await fn();
  } finally {
    for (const worker of others) process.kill(worker.pid, "SIGCONT");
  }
}

/** Σ start + i for i < n: what `total(ramp(n, start))` gives. */
export const rampSum = (n: number, start: number): number => n * start + (n * (n - 1)) / 2;

/** Lines of a worker's `output` that contain `text`. */
export function linesWith(output: string, text: string): string[] {
  return output.split("\n").filter((line) => line.includes(text));
}

/** The end of a Redis test: closes the client, stops the workers, checks Redis was left empty, stops the server. */
export async function closeRedisTest(client: { close(): Promise<void> } | undefined, workers: Iterable<WorkerProcess>, redis: Redis, server: RedisServer): Promise<void> {
  await client?.close();
  await Promise.all([...workers].map((worker) => worker.stop()));
  await expectEmpty(redis);
  redis.disconnect();
  await server.stop();
}
