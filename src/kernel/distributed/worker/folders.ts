// Temporary folders owned by a process — each LocalCluster's (sockets, workers' spill folders), each
// Redis worker's (spill files) — removed when their owner closes or — after a crash — by the next
// process that starts one of the same kind.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The kinds of folders, by the start of their names. */
export type FolderKind = "tsdask-cluster-" | "tsdask-worker-";

/** A fresh folder named after this process, so a later process can tell whether its owner is alive. */
export function makeOwnedFolder(kind: FolderKind): string {
  return mkdtempSync(join(tmpdir(), `${kind}${process.pid}-`));
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

/** Removes folders of `kind` left by processes that died without closing them. */
export function sweepStaleFolders(kind: FolderKind): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = new RegExp(`^${kind}(\\d+)-`).exec(name);
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
