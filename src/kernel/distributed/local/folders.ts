// Each LocalCluster's temporary folder (sockets, workers' spill folders), removed when the cluster
// closes, when this process exits, or — after a crash — by the next LocalCluster.start.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PREFIX = "tsdask-cluster-";

/** A fresh folder named after this process, so a later process can tell whether its owner is alive. */
export function makeClusterFolder(): string {
  return mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes cluster folders left by processes that died without closing their clusters. */
export function sweepStaleFolders(): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (match === null) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || alive(pid)) continue;
    const path = join(tmpdir(), name);
    try {
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // another process is sweeping it, or it is not ours to remove
    }
  }
  return removed;
}
