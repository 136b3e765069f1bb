// Child processes a test starts (servers, workers) die with the test process, and their folders
// go: on exit, and on SIGINT/SIGTERM/SIGHUP (a test run interrupted or timed out), which would
// otherwise orphan them.
import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";

const children = new Set<ChildProcess>();
const folders = new Set<string>();

function cleanUp(): void {
  for (const child of children) {
    // A stopped child would not die of SIGTERM later; SIGKILL works on it as it is.
    child.kill("SIGKILL");
  }
  children.clear();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders.clear();
}

process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    cleanUp();
    process.kill(process.pid, signal);
  });
}

/** Removes `folder` when the test process ends; `forget()` once the test removed it itself. */
export function removeOnExit(folder: string): { forget(): void } {
  folders.add(folder);
  return { forget: () => void folders.delete(folder) };
}

/** Kills `child` when the test process ends, unless it exited by then. */
export function killOnExit(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => children.delete(child));
}
