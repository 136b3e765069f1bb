// `tsdask worker redis://host:port [options]`: a worker of a Redis cluster on this machine,
// until SIGINT or SIGTERM (it then finishes its running tasks and leaves; a second signal ends
// it at once). The password comes from TSDASK_REDIS_PASSWORD or --password-file rather than the
// address, which every user of the machine sees in `ps`.

import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import bytes from "bytes-iec";
import { type ProfilingOptions, checkProfilingOptions } from "../kernel/profiling/hub";
import { PASSWORD_VARIABLE, type RedisTarget, parseRedisUrl, redisTargetOf } from "../kernel/distributed/redis/address";
import { DataListenerError, DataListenerOptionError, RedisAddressError, RedisConnectError } from "../kernel/distributed/redis/errors";
import { WorkerNameTakenError } from "../kernel/distributed/redis/registry";
import { RedisWorker } from "../kernel/distributed/redis/worker";
import { UsageError } from "./install";

export const WORKER_USAGE = [
  "  tsdask worker redis://[user@]host:port[/db] [--name NAME] [--nthreads N]",
  '                [--password-file FILE] [--memory-limit "4 GiB"] [--module-root DIR]... [--allow-source]',
  '                [--tls-ca FILE] [--listen tcp://HOST:PORT | --no-listen] [--contact-address HOST:PORT]',
  '                [--tls-cert FILE --tls-key FILE]',
  '                [--lock-duration SECONDS] [--stalled-interval SECONDS] [--allowed-failures N]',
  '                [--part-size "64 MiB"] [--hold-above "64 KiB"] [--peer-timeout SECONDS]',
  "                [--handoff-timeout SECONDS] [--death-timeout SECONDS]",
  "                [--profile-interval SECONDS] [--profile-cycle SECONDS] [--no-profile]",
  "                              run tasks for the clients of that Redis (rediss:// for TLS);",
  `                              the password: ${PASSWORD_VARIABLE} or --password-file (one in the address shows in ps);`,
  "                              runs only exports of modules in the project it was started in",
  "                              (not its node_modules) and tsdask's own, and pure built-ins",
  "                              (Math.*, JSON.parse...); --module-root DIR (repeatable) allows",
  "                              the modules under DIR too; --allow-source runs any function,",
  "                              source text too: anyone who can write to that Redis can then",
  "                              run any code here;",
  "                              peers fetch data from it at --listen (default: a free port on the",
  "                              interface that reaches Redis; tls:// with --tls-cert and --tls-key,",
  "                              --tls-ca also checks peers' certificates) once they prove they know",
  "                              their client's secret in Redis; --no-listen: no data listener;",
  "                              results above --hold-above stay in its memory (spilled to disk",
  "                              past 60 % of --memory-limit, paused past 80 %), Redis holds where",
  "                              they live, and peers and clients fetch them from --listen; a peer",
  "                              silent for --peer-timeout (default 30 s) is given up on;",
  "                              SIGTERM hands the results it alone keeps to peers (or Redis,",
  "                              past --handoff-timeout, default 20 s) before it leaves; with",
  "                              --death-timeout it leaves (exit code 1) once Redis has not",
  "                              answered for that long, else it waits for Redis as long as it takes",
].join("\n");

function positiveNumber(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`--${option} needs a positive number, got ${JSON.stringify(text)}`);
  return value;
}

export interface WorkerCommandOptions {
  readonly url: string;
  /** A file holding the password (its final line break dropped), instead of TSDASK_REDIS_PASSWORD. */
  readonly passwordFile?: string;
  readonly name?: string;
  readonly nthreads?: number;
  readonly memoryLimit?: number;
  readonly allowSource: boolean;
  /** Folders whose modules' exports may run besides the project's and tsdask's (--module-root, repeatable). */
  readonly moduleRoots?: readonly string[];
  readonly tlsCa?: string;
  /** The data listener's address (--listen), or false (--no-listen); default: on, a free port. */
  readonly listen?: string | false;
  readonly contactAddress?: string;
  /** The data listener's certificate and key files (PEM): peers connect with TLS. */
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly lockDuration?: number;
  readonly stalledInterval?: number;
  /** Times a task may be on a worker that died before it is given up (Dask's allowed-failures). */
  readonly allowedFailures?: number;
  readonly partSize?: number;
  /** Results above this many bytes stay in the worker's memory (default 64 KiB). */
  readonly holdAbove?: number;
  /** Seconds a peer may take to connect or stay silent while asked for data (default 30). */
  readonly peerTimeout?: number;
  /** Seconds a worker leaving on SIGTERM waits for peers to take what it keeps before writing the rest into Redis (default 20). */
  readonly handoffTimeout?: number;
  /** Seconds Redis may stay unreachable before the worker leaves (Dask's --death-timeout); default: no limit. */
  readonly deathTimeout?: number;
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
        "password-file": { type: "string" },
        nthreads: { type: "string" },
        "memory-limit": { type: "string" },
        "allow-source": { type: "boolean", default: false },
        "module-root": { type: "string", multiple: true },
        "tls-ca": { type: "string" },
        listen: { type: "string" },
        "no-listen": { type: "boolean", default: false },
        "contact-address": { type: "string" },
        "tls-cert": { type: "string" },
        "tls-key": { type: "string" },
        "lock-duration": { type: "string" },
        "stalled-interval": { type: "string" },
        "allowed-failures": { type: "string" },
        "part-size": { type: "string" },
        "hold-above": { type: "string" },
        "peer-timeout": { type: "string" },
        "handoff-timeout": { type: "string" },
        "death-timeout": { type: "string" },
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
    const text = values[option as "memory-limit" | "part-size" | "hold-above"];
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
  if (values["no-listen"] === true && values.listen !== undefined) throw new UsageError("--no-listen turns the data listener off: leave out --listen");
  if ((values["tls-cert"] === undefined) !== (values["tls-key"] === undefined)) throw new UsageError("--tls-cert and --tls-key go together: the data listener needs its certificate and its key");
  const moduleRoots = values["module-root"];
  for (const folder of moduleRoots ?? []) {
    if (statSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true) throw new UsageError(`--module-root needs a folder that exists, got ${JSON.stringify(folder)}`);
  }
  return {
    url: positionals[0],
    ...(values["password-file"] === undefined ? {} : { passwordFile: values["password-file"] }),
    name: values.name,
    nthreads,
    memoryLimit: size("memory-limit"),
    allowSource: values["allow-source"] ?? false,
    tlsCa: values["tls-ca"],
    ...(values["no-listen"] === true ? { listen: false } : values.listen === undefined ? {} : { listen: values.listen }),
    ...(values["contact-address"] === undefined ? {} : { contactAddress: values["contact-address"] }),
    ...(values["tls-cert"] === undefined ? {} : { tlsCert: values["tls-cert"], tlsKey: values["tls-key"] }),
    lockDuration: positiveNumber("lock-duration", values["lock-duration"]),
    stalledInterval: positiveNumber("stalled-interval", values["stalled-interval"]),
    allowedFailures,
    partSize: size("part-size"),
    holdAbove: size("hold-above"),
    peerTimeout: positiveNumber("peer-timeout", values["peer-timeout"]),
    handoffTimeout: positiveNumber("handoff-timeout", values["handoff-timeout"]),
    deathTimeout: positiveNumber("death-timeout", values["death-timeout"]),
    ...(profile === undefined ? {} : { profile }),
    ...(moduleRoots === undefined ? {} : { moduleRoots }),
  };
}

/** A password file that cannot be used; names the file. */
class PasswordFileError extends Error {}

/**
 * The address with its password: from the address, else --password-file, else
 * TSDASK_REDIS_PASSWORD. The variable is then removed from this process's environment, so the
 * task threads and the processes they start do not inherit it.
 */
function withPassword(address: RedisTarget, passwordFile: string | undefined): RedisTarget {
  let target = address;
  if (passwordFile !== undefined) {
    if (target.hasPassword) throw new UsageError("the address has a password and --password-file gives one too: give it in one place");
    target = target.orPassword(readPasswordFile(passwordFile));
  }
  target = redisTargetOf(target);
  delete process.env[PASSWORD_VARIABLE];
  return target;
}

/** The file's text without its final line break (what `echo secret > file` adds). */
function readPasswordFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new PasswordFileError(`cannot read the password file ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  const password = text.replace(/\r?\n$/, "");
  if (password === "") throw new PasswordFileError(`the password file ${JSON.stringify(path)} is empty`);
  return password;
}

/** The contents of the file an option names; a file that cannot be read is a usage error naming both. */
function readOptionFile(option: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(`--${option} ${JSON.stringify(path)} cannot be read: ${(error as Error).message}`);
  }
}

/**
 * Makes `ps` show this process's command with the address without its password. Linux shows
 * the new title in /proc/PID/cmdline too, but only from here on: `ps` showed the password while
 * the worker started, and a launching `npx` and the shell's history still hold it.
 */
function hidePasswordFromPs(args: readonly string[], url: string, shown: string): void {
  process.title = ["tsdask", "worker", ...args.map((arg) => (arg === url ? shown : arg))].join(" ");
}

export async function workerCommand(args: readonly string[]): Promise<void> {
  const options = parseWorkerArgs(args);
  let worker: RedisWorker;
  try {
    const address = parseRedisUrl(options.url);
    if (address.hasPassword) hidePasswordFromPs(args, options.url, address.display);
    const target = withPassword(address, options.passwordFile);
    worker = await RedisWorker.start({
      url: target,
      name: options.name,
      nthreads: options.nthreads,
      memoryLimit: options.memoryLimit,
      allowSource: options.allowSource,
      moduleRoots: options.moduleRoots,
      tls: options.tlsCa === undefined ? undefined : { ca: readOptionFile("tls-ca", options.tlsCa) },
      lockDuration: options.lockDuration,
      stalledInterval: options.stalledInterval,
      maxStalledCount: options.allowedFailures,
      partSize: options.partSize,
      holdAbove: options.holdAbove,
      peerTimeout: options.peerTimeout,
      handoffTimeout: options.handoffTimeout,
      deathTimeout: options.deathTimeout,
      profile: options.profile,
      listen: options.listen,
      contactAddress: options.contactAddress,
      peerTls: options.tlsCert === undefined ? undefined : { cert: readOptionFile("tls-cert", options.tlsCert), key: readOptionFile("tls-key", options.tlsKey!) },
    });
  } catch (error) {
    // Redis unreachable, a wrong password, a name in use: the message says it all.
    if (
      error instanceof RedisConnectError ||
      error instanceof WorkerNameTakenError ||
      error instanceof RedisAddressError ||
      error instanceof PasswordFileError ||
      error instanceof DataListenerOptionError ||
      error instanceof DataListenerError
    ) {
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
    void worker.close().then(() => exitSoon());
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // The worker logged why and freed what it held.
  void worker.givenUp.then(() => exitSoon(1));
}

/**
 * Once the worker has closed it holds nothing of its own: the process ends by itself, or after 5 s
 * if a library's handle still waits on Redis.
 */
function exitSoon(code?: number): void {
  if (code !== undefined) process.exitCode = code;
  setTimeout(() => process.exit(), 5000).unref();
}
