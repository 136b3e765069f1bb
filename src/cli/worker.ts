// `tsdask worker redis://host:port [options]`: a worker of a Redis cluster on this machine,
// until SIGINT or SIGTERM (it then finishes its running tasks and leaves; a second signal ends
// it at once).

import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import bytes from "bytes-iec";
import { type ProfilingOptions, checkProfilingOptions } from "../kernel/profiling/hub";
import { RedisAddressError, RedisConnectError } from "../kernel/distributed/redis/errors";
import { WorkerNameTakenError } from "../kernel/distributed/redis/registry";
import { RedisWorker } from "../kernel/distributed/redis/worker";
import { UsageError } from "./install";

export const WORKER_USAGE = [
  "  tsdask worker redis://[user:password@]host:port[/db] [--name NAME] [--nthreads N]",
  '                [--memory-limit "4 GiB"] [--module-root DIR]... [--allow-source] [--tls-ca FILE]',
  '                [--lock-duration SECONDS] [--stalled-interval SECONDS] [--allowed-failures N]',
  '                [--part-size "64 MiB"]',
  "                [--profile-interval SECONDS] [--profile-cycle SECONDS] [--no-profile]",
  "                              run tasks for the clients of that Redis (rediss:// for TLS);",
  "                              runs only exports of modules in the project it was started in",
  "                              (not its node_modules) and tsdask's own, and pure built-ins",
  "                              (Math.*, JSON.parse...); --module-root DIR (repeatable) allows",
  "                              the modules under DIR too; --allow-source runs any function,",
  "                              source text too: anyone who can write to that Redis can then",
  "                              run any code here",
].join("\n");

function positiveNumber(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`--${option} needs a positive number, got ${JSON.stringify(text)}`);
  return value;
}

export interface WorkerCommandOptions {
  readonly url: string;
  readonly name?: string;
  readonly nthreads?: number;
  readonly memoryLimit?: number;
  readonly allowSource: boolean;
  /** Folders whose modules' exports may run besides the project's and tsdask's (--module-root, repeatable). */
  readonly moduleRoots?: readonly string[];
  readonly tlsCa?: string;
  readonly lockDuration?: number;
  readonly stalledInterval?: number;
  /** Times a task may be on a worker that died before it is given up (Dask's allowed-failures). */
  readonly allowedFailures?: number;
  readonly partSize?: number;
  /** The statistical profiler's interval and cycle (seconds), or false (--no-profile); default Dask's. */
  readonly profile?: ProfilingOptions | false;
}

export function parseWorkerArgs(args: readonly string[]): WorkerCommandOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: "string" },
        nthreads: { type: "string" },
        "memory-limit": { type: "string" },
        "allow-source": { type: "boolean", default: false },
        "module-root": { type: "string", multiple: true },
        "tls-ca": { type: "string" },
        "lock-duration": { type: "string" },
        "stalled-interval": { type: "string" },
        "allowed-failures": { type: "string" },
        "part-size": { type: "string" },
        "profile-interval": { type: "string" },
        "profile-cycle": { type: "string" },
        "no-profile": { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError(`worker needs one Redis address (redis://host:port), got ${positionals.length}`);
  const nthreads = positiveNumber("nthreads", values.nthreads);
  if (nthreads !== undefined && !Number.isInteger(nthreads)) throw new UsageError(`--nthreads needs a whole number, got ${values.nthreads}`);
  const allowedFailuresText = values["allowed-failures"];
  const allowedFailures = allowedFailuresText === undefined ? undefined : Number(allowedFailuresText);
  if (allowedFailures !== undefined && !(Number.isInteger(allowedFailures) && allowedFailures >= 0)) {
    throw new UsageError(`--allowed-failures needs a whole number of 0 or more, got ${JSON.stringify(allowedFailuresText)}`);
  }
  const size = (option: string): number | undefined => {
    const text = values[option as "memory-limit" | "part-size"];
    if (text === undefined) return undefined;
    const parsedSize = bytes.parse(text);
    if (parsedSize === null || !(parsedSize > 0)) throw new UsageError(`--${option} needs a size such as "4 GiB" or "500 MB", got ${JSON.stringify(text)}`);
    return parsedSize;
  };
  const interval = positiveNumber("profile-interval", values["profile-interval"]);
  const cycle = positiveNumber("profile-cycle", values["profile-cycle"]);
  if (values["no-profile"] === true && (interval !== undefined || cycle !== undefined)) throw new UsageError("--no-profile turns the profiler off: leave out --profile-interval and --profile-cycle");
  let profile: ProfilingOptions | false | undefined;
  if (values["no-profile"] === true) profile = false;
  else if (interval !== undefined || cycle !== undefined) {
    try {
      profile = checkProfilingOptions({ ...(interval === undefined ? {} : { interval }), ...(cycle === undefined ? {} : { cycle }) }, "profiler");
    } catch (error) {
      throw new UsageError(`--profile-interval, --profile-cycle: ${(error as Error).message}`);
    }
  }
  const moduleRoots = values["module-root"];
  for (const folder of moduleRoots ?? []) {
    if (statSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true) throw new UsageError(`--module-root needs a folder that exists, got ${JSON.stringify(folder)}`);
  }
  return {
    url: positionals[0],
    name: values.name,
    nthreads,
    memoryLimit: size("memory-limit"),
    allowSource: values["allow-source"] ?? false,
    tlsCa: values["tls-ca"],
    lockDuration: positiveNumber("lock-duration", values["lock-duration"]),
    stalledInterval: positiveNumber("stalled-interval", values["stalled-interval"]),
    allowedFailures,
    partSize: size("part-size"),
    ...(profile === undefined ? {} : { profile }),
    ...(moduleRoots === undefined ? {} : { moduleRoots }),
  };
}

export async function workerCommand(args: readonly string[]): Promise<void> {
  const options = parseWorkerArgs(args);
  let worker: RedisWorker;
  try {
    worker = await RedisWorker.start({
      url: options.url,
      name: options.name,
      nthreads: options.nthreads,
      memoryLimit: options.memoryLimit,
      allowSource: options.allowSource,
      moduleRoots: options.moduleRoots,
      tls: options.tlsCa === undefined ? undefined : { ca: readFileSync(options.tlsCa) },
      lockDuration: options.lockDuration,
      stalledInterval: options.stalledInterval,
      maxStalledCount: options.allowedFailures,
      partSize: options.partSize,
      profile: options.profile,
    });
  } catch (error) {
    // Redis unreachable, a wrong password, a name in use: the message says it all.
    if (error instanceof RedisConnectError || error instanceof WorkerNameTakenError || error instanceof RedisAddressError) {
      process.stderr.write(`tsdask worker: ${error.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
  let signals = 0;
  const stop = (signal: NodeJS.Signals): void => {
    if (++signals > 1) process.exit(130);
    process.stderr.write(`tsdask worker ${worker.name}: ${signal}, finishing running tasks (again to stop at once)\n`);
    void worker.close();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
