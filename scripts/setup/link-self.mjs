// Lets notebooks in this repository `import ... from "tsdask"` as users do: a symlink
// node_modules/tsdask → the repository root. tslab resolves a cell's imports from the notebook's
// directory upward, and a package cannot depend on itself, so npm alone never creates this.
// Run by `npm install` (prepare) and by the test runner; a no-op in an installed copy of tsdask.
import { existsSync, lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export function ensureSelfLink() {
  // A published tarball has no notebooks/ (package.json "files"): nothing to link for.
  if (!existsSync(join(root, "notebooks"))) return;
  const link = join(root, "node_modules/tsdask");
  const target = "..";
  const stat = lstatSync(link, { throwIfNoEntry: false });
  if (stat?.isSymbolicLink() && readlinkSync(link) === target) return;
  if (stat !== undefined) rmSync(link, { recursive: true, force: true });
  mkdirSync(join(root, "node_modules"), { recursive: true });
  symlinkSync(target, link, "dir");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureSelfLink();
