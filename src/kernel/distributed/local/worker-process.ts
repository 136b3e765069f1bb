// One forked worker process, as LocalCluster's nanny sees it: started with a WorkerStartConfig,
// its output passed on to this process's (so a task's console.log shows in the notebook cell),
// its exit reported, its resident memory read from /proc.

import { type ChildProcess, fork } from "node:child_process";
import { closeSync, openSync, readSync, rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { workerExecArgv } from "../../execution/pool";
import type { WorkerAddress, WorkerStartConfig } from "../messages";
import { workerEntryPath } from "../worker";

export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class WorkerProcess {
  readonly address: WorkerAddress;
  readonly child: ChildProcess;
  readonly exited: Promise<WorkerExit>;
  exit: WorkerExit | undefined;
  /** Its stderr, the last few kB: why it failed to start, if it did. */
  private stderrTail = "";

  constructor(readonly config: WorkerStartConfig) {
    this.address = `unix://${config.listenPath}`;
    // A process group of its own: interrupting a Jupyter kernel signals the kernel's whole group,
    // which must stop the computation, not kill the workers. (A worker still exits with its
    // parent: its IPC channel closes.)
    this.child = fork(workerEntryPath, [JSON.stringify(config)], { silent: true, detached: true, execArgv: workerExecArgv() });
    this.child.stdout!.on("data", (chunk: Buffer) => process.stdout.write(chunk));
    this.child.stderr!.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk);
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
    });
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        // A worker killed outright leaves its folder and socket: the nanny removes them.
        rmSync(config.localDirectory, { recursive: true, force: true });
        rmSync(config.listenPath, { force: true });
        resolve(this.exit);
      });
    });
    // A fork that cannot start at all reports an error event instead of (or before) exiting.
    this.child.once("error", (error) => (this.stderrTail += `\n${error.message}`));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get name(): string {
    return this.config.name;
  }

  get stderr(): string {
    return this.stderrTail.trim();
  }

  /** How it exited, in words: "was killed by SIGKILL", "exited with code 1". */
  describeExit(): string {
    const exit = this.exit;
    if (exit === undefined) return "is running";
    return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.exit === undefined) this.child.kill(signal);
  }

  /** Whether this child (process, IPC channel, output pipes) may keep this process alive. */
  setKeepsAlive(keep: boolean): void {
    const handles = [this.child, this.child.channel, this.child.stdout as Readable & { ref?(): void; unref?(): void }, this.child.stderr as Readable & { ref?(): void; unref?(): void }];
    for (const handle of handles) {
      if (handle === null || handle === undefined) continue;
      const h = handle as { ref?(): void; unref?(): void };
      if (keep) h.ref?.();
      else h.unref?.();
    }
  }

  /** Resident bytes (/proc/<pid>/statm), or undefined where /proc cannot tell. */
  residentBytes(): number | undefined {
    if (this.exit !== undefined || this.pid < 0) return undefined;
    const pages = residentPages(this.pid);
    const size = pageSize();
    return pages === undefined || size === undefined ? undefined : pages * size;
  }
}

const statmBuffer = Buffer.alloc(256);

function residentPages(pid: number | "self"): number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/statm`, "r");
    const length = readSync(fd, statmBuffer, 0, statmBuffer.length, 0);
    const resident = Number(statmBuffer.toString("latin1", 0, length).split(" ")[1]);
    return Number.isFinite(resident) ? resident : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

let knownPageSize: number | undefined | null = null;

/** The kernel's page size: this process's RSS over its resident pages, to the nearest power of two. */
function pageSize(): number | undefined {
  if (knownPageSize === null) {
    const pages = residentPages("self");
    knownPageSize = pages === undefined || pages === 0 ? undefined : 2 ** Math.round(Math.log2(process.memoryUsage.rss() / pages));
  }
  return knownPageSize;
}
