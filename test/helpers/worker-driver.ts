// A stand-in scheduler for worker tests and benchmarks: it listens on a real Unix socket, forks real worker
// processes (the entry LocalCluster forks), answers their heartbeats on its own clock and lets a
// test send batches and wait for what the workers say.

import { type ChildProcess, fork } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { now } from "../../src/kernel/clock";
import { decodeBatch, encodeBatch } from "../../src/kernel/distributed/comm/batches";
import { Connection, listen } from "../../src/kernel/distributed/comm/connection";
import type { FromWorker, GatherReplyMessage, ToWorker, WorkerStartConfig } from "../../src/kernel/distributed/messages";
import { PeerClient } from "../../src/kernel/distributed/worker/peers";
import { workerEntryPath } from "../../src/kernel/distributed/worker";
import type { FnSpec } from "../../src/kernel/execution/wire";

type Op = FromWorker["op"];
type MessageOf<O extends Op> = Extract<FromWorker, { op: O }>;

/** Fixture functions by export name, as module specs the workers load. */
export function moduleFunction(name: string): FnSpec {
  return { kind: "module", path: require.resolve("../fixtures/cluster-tasks"), name };
}

export class WorkerHandle {
  /** Everything the worker sent, in order. */
  readonly received: FromWorker[] = [];
  /** Scheduler-clock times at which each message arrived (same order as `received`). */
  readonly receivedAt: number[] = [];
  private readonly waiters: { match: (message: FromWorker) => boolean; resolve: (message: FromWorker) => void }[] = [];
  connection: Connection | undefined;
  address = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Also answer heartbeats (tests of a scheduler that stops answering turn it off). */
  answerHeartbeats = true;
  stderr = "";

  constructor(
    readonly config: WorkerStartConfig,
    readonly child: ChildProcess,
  ) {
    child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  send(...messages: ToWorker[]): void {
    this.connection!.sendFrames(encodeBatch(messages));
  }

  /** Resolves with the first message (already received or to come) with `op` that satisfies `match`. */
  next<O extends Op>(op: O, match: (message: MessageOf<O>) => boolean = () => true, timeoutMs = 10_000): Promise<MessageOf<O>> {
    const matches = (message: FromWorker): boolean => message.op === op && match(message as MessageOf<O>);
    const found = this.received.find(matches);
    if (found !== undefined) return Promise.resolve(found as MessageOf<O>);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`Worker ${this.config.name}: no ${op} message within ${timeoutMs} ms; stderr: ${this.stderr}`));
      }, timeoutMs);
      const waiter = {
        match: matches,
        resolve: (message: FromWorker) => {
          clearTimeout(timer);
          resolve(message as MessageOf<O>);
        },
      };
      this.waiters.push(waiter);
    });
  }

  all<O extends Op>(op: O): MessageOf<O>[] {
    return this.received.filter((message) => message.op === op) as MessageOf<O>[];
  }

  /** Gathers results as the scheduler does: over a connection to the worker's data listener. */
  async gather(keys: readonly string[]): Promise<GatherReplyMessage> {
    const data = new PeerClient();
    try {
      const { value } = await data.request(this.address, { op: "gather", keys });
      return value as GatherReplyMessage;
    } finally {
      data.close();
    }
  }

  /** Runs `source` (a self-contained function of the worker view) on the worker; its result. */
  async run<T>(source: string): Promise<T> {
    const requestId = Math.floor(Math.random() * 1e9);
    this.send({ op: "run", requestId, fn: { kind: "source", source, method: false } });
    const reply = await this.next("run-reply", (message) => message.requestId === requestId);
    if (!reply.ok) throw new Error(`run failed on ${this.config.name}: ${JSON.stringify(reply.error)}`);
    return reply.value as T;
  }

  onMessage(message: FromWorker): void {
    this.received.push(message);
    this.receivedAt.push(now());
    if (message.op === "register") this.address = message.address;
    // Registration is answered like a heartbeat (the scheduler's clock, for the first offset estimate).
    if ((message.op === "heartbeat" || message.op === "register") && this.answerHeartbeats) {
      this.send({ op: "heartbeat-reply", time: now(), heartbeatInterval: 0.2 });
    }
    for (const waiter of [...this.waiters]) {
      if (waiter.match(message)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  }
}

export class FakeScheduler {
  readonly workers: WorkerHandle[] = [];
  /** Worker name → what to do when its connection registers. */
  private readonly pending = new Map<string, (connection: Connection, batch: FromWorker[]) => void>();
  private server: Server | undefined;
  private counter = 0;

  private constructor(readonly dir: string) {}

  get path(): string {
    return join(this.dir, "scheduler.sock");
  }

  static async start(): Promise<FakeScheduler> {
    const scheduler = new FakeScheduler(mkdtempSync(join(tmpdir(), "tsdask-worker-test-")));
    scheduler.server = await listen(scheduler.path, (connection) => scheduler.accept(connection));
    return scheduler;
  }

  /** Forks a worker and resolves once it has registered. */
  async spawn(options: Partial<WorkerStartConfig> = {}, env: NodeJS.ProcessEnv = {}): Promise<WorkerHandle> {
    const name = options.name ?? `w${this.counter++}`;
    const config: WorkerStartConfig = {
      name,
      schedulerPath: this.path,
      listenPath: join(this.dir, `${name}.sock`),
      nthreads: 1,
      memoryLimit: 0,
      localDirectory: join(this.dir, `${name}-files`),
      ...options,
    };
    const child = fork(workerEntryPath, [JSON.stringify(config)], { stdio: ["ignore", "inherit", "pipe", "ipc"], env: { ...process.env, ...env } });
    const handle = new WorkerHandle(config, child);
    this.workers.push(handle);
    const registered = new Promise<void>((resolve, reject) => {
      this.pending.set(name, (connection, first) => {
        handle.connection = connection;
        connection.on("message", (batch) => {
          for (const message of decodeBatch(batch) as FromWorker[]) handle.onMessage(message);
        });
        for (const message of first) handle.onMessage(message);
        resolve();
      });
      void handle.exited.then(({ code, signal }) => reject(new Error(`Worker ${name} exited (${code ?? signal}) before registering: ${handle.stderr}`)));
    });
    await registered;
    return handle;
  }

  /** Connections are matched to workers by the name in their register message. */
  private accept(connection: Connection): void {
    connection.once("message", (batch) => {
      const messages = decodeBatch(batch) as FromWorker[];
      const register = messages[0];
      if (register?.op !== "register") throw new Error(`The first message of a worker was ${JSON.stringify(register?.op)}`);
      const adopt = this.pending.get(register.name);
      this.pending.delete(register.name);
      adopt?.(connection, messages);
    });
  }

  /** Kills every worker still running. */
  async killAll(): Promise<void> {
    for (const worker of this.workers) {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill("SIGKILL");
      await worker.exited;
    }
  }

  /** Kills every worker still running, closes the listener, removes the folder. */
  async close(): Promise<void> {
    await this.killAll();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** True while `pid` is a live process. */
  static alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  static exists(path: string): boolean {
    return existsSync(path);
  }
}
