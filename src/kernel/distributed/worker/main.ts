// The cluster worker program: LocalCluster forks it with a WorkerStartConfig as JSON in the first
// argument. It exits when the scheduler's connection or the parent's IPC channel goes away, on
// SIGTERM / SIGINT, or when told to close, removing its folder first; it never runs orphaned.

import { rmSync } from "node:fs";
import type { WorkerStartConfig } from "../messages";
import { Worker } from "./worker";

function readConfig(): WorkerStartConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error("tsdask worker: expected a WorkerStartConfig as JSON in the first argument");
  try {
    return JSON.parse(text) as WorkerStartConfig;
  } catch (error) {
    throw new Error(`tsdask worker: the first argument is not JSON (${(error as Error).message})`);
  }
}

const config = readConfig();
let worker: Worker | undefined;

function exit(code: number): void {
  // Whatever went wrong, the folder goes (the nanny removes it too if this process is killed).
  rmSync(config.localDirectory, { recursive: true, force: true });
  process.exit(code);
}

function stop(reason: string): void {
  if (worker === undefined) exit(0);
  else void worker.close(reason);
}

process.on("disconnect", () => stop("its parent went away"));
process.on("SIGTERM", () => stop("it received SIGTERM"));
process.on("SIGINT", () => stop("it received SIGINT"));
process.on("uncaughtException", (error) => {
  process.stderr.write(`tsdask worker ${config.name}: ${error.stack ?? error}\n`);
  exit(1);
});

Worker.start(config, () => exit(0)).then(
  (started) => {
    worker = started;
    // The parent left while this worker was starting.
    if (process.send !== undefined && !process.connected) stop("its parent went away");
  },
  (error: Error) => {
    process.stderr.write(`tsdask worker ${config.name} could not start: ${error.message}\n`);
    exit(1);
  },
);
