// A real redis-server (Debian's, see scripts/setup/redis.mjs) for the Redis transport's tests:
// on a free loopback port (or an address in a network namespace the test made), no
// persistence, a private temporary folder, optionally a password or TLS. Every server started
// here is killed when the test process ends (see ./children).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { killOnExit, removeOnExit } from "./children";
import { freePort } from "./net";
import { waitFor } from "./wait";

export interface RedisServerOptions {
  /** `requirepass`: clients must AUTH with it. */
  readonly password?: string;
  /** Address to bind (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default: a free loopback port). */
  readonly port?: number;
  /** Run inside this network namespace (`ip netns exec`). */
  readonly netns?: string;
  /** Serve TLS only (Redis's `tls-port`) with these PEM files. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string };
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly password: string | undefined;
  /** `redis://[:password@]host:port` (or rediss:// for TLS). */
  readonly url: string;
  readonly pid: number;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its folder. */
  stop(): Promise<void>;
  /** Starts it (again) on the same address: empty, as a server without persistence comes back. */
  restartEmpty(): Promise<void>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) the server: connections stay open but nothing answers. */
  freeze(frozen: boolean): void;
}

function redisServerPath(): string {
  const path = process.env.TSDASK_REDIS_SERVER;
  if (path === undefined || path === "") throw new Error("TSDASK_REDIS_SERVER is not set: run the tests with `npm test`");
  return path;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "tsdask-redis-"));
  const folder = removeOnExit(dir);
  let child = await launch(options, host, port, dir);
  const scheme = options.tls === undefined ? "redis" : "rediss";
  const auth = options.password === undefined ? "" : `:${encodeURIComponent(options.password)}@`;
  const server: RedisServer = {
    host,
    port,
    password: options.password,
    url: `${scheme}://${auth}${host}:${port}`,
    get pid() {
      return child.pid ?? -1;
    },
    async stop() {
      await terminate(child);
      rmSync(dir, { recursive: true, force: true });
      folder.forget();
    },
    async restartEmpty() {
      await terminate(child);
      mkdirSync(dir, { recursive: true });
      child = await launch(options, host, port, dir);
    },
    freeze(frozen) {
      child.kill(frozen ? "SIGSTOP" : "SIGCONT");
    },
  };
  return server;
}

async function launch(options: RedisServerOptions, host: string, port: number, dir: string): Promise<ChildProcess> {
  const args = ["--bind", host, "--dir", dir, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"];
  args.push("--daemonize", "no", "--protected-mode", "no", "--loglevel", "notice", "--logfile", "");
  if (options.tls === undefined) {
    args.push("--port", String(port));
  } else {
    args.push("--port", "0", "--tls-port", String(port), "--tls-cert-file", options.tls.cert, "--tls-key-file", options.tls.key);
    args.push("--tls-ca-cert-file", options.tls.ca, "--tls-auth-clients", "no");
  }
  if (options.password !== undefined) args.push("--requirepass", options.password);
  const [command, commandArgs] =
    options.netns === undefined ? [redisServerPath(), args] : ["ip", ["netns", "exec", options.netns, redisServerPath(), ...args]];
  const child = spawn(command, commandArgs, { stdio: ["ignore", "pipe", "pipe"] });
  killOnExit(child);
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`redis-server did not start within 10 s:\n${output}`)), 10_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) done();
    };
    const onExit = (code: number | null): void => fail(new Error(`redis-server exited with code ${code}:\n${output}`));
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.stderr!.off("data", onData);
      child.off("exit", onExit);
    };
    const done = (): void => {
      cleanup();
      resolve();
    };
    const fail = (error: Error): void => {
      cleanup();
      child.kill("SIGKILL");
      reject(error);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", onExit);
  });
  // Keep draining its log so a full pipe never blocks it.
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGCONT");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Resolves once the server holds no key (clients closed, workers gone), within 10 s: BullMQ's
 * stalled-check marker of a worker that stopped before it saw the last client leave expires by
 * itself within the stalled interval (2 s). Fails listing the keys left.
 */
export async function expectEmpty(redis: Redis): Promise<void> {
  await waitFor("Redis to be empty once clients and workers are gone", async () => (await redis.dbsize()) === 0, 10).catch(async (error: Error) => {
    throw new Error(`${error.message}; left: ${(await redis.keys("*")).join(", ")}`);
  });
}
