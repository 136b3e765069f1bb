// Child processes a test starts (servers, workers) die with the test process: on exit, and on
// SIGINT/SIGTERM/SIGHUP (a test run interrupted or timed out), which would otherwise orphan them.
import type { ChildProcess } from "node:child_process";

const children = new Set<ChildProcess>();

function killAll(): void {
  for (const child of children) {
    // A stopped child would not die of SIGTERM later; SIGKILL works on it as it is.
    child.kill("SIGKILL");
  }
  children.clear();
}

process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    killAll();
    process.kill(process.pid, signal);
  });
}

/** Kills `child` when the test process ends, unless it exited by then. */
export function killOnExit(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => children.delete(child));
}
