// Compiling a notebook cell the way tslab does: its own TypeScript (5.0.4) with its hard-coded
// cell options, in a folder whose node_modules/tsdask is this repository, as a user's would be.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Ts = typeof import("typescript");
export const tslabTypeScript = require("@tslab/typescript-for-tslab") as Ts;
const root = join(__dirname, "..", "..", "..");

/** Runs `fn` in a fresh project folder with tsdask installed (a link to this repository). */
export async function inUserProject<T>(fn: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "tsdask-user-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(root, join(dir, "node_modules", "tsdask"), "dir");
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The type errors tslab would report for `source` as a cell in `dir` (none: an empty list). */
export function cellDiagnostics(dir: string, source: string): string[] {
  const ts = tslabTypeScript;
  const file = join(dir, "cell.ts");
  writeFileSync(file, source);
  const program = ts.createProgram([file], {
    // tslab's cell options (shared/research/tslab-check.md §2), with the @types/node it ships.
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2022.d.ts"],
    moduleResolution: ts.ModuleResolutionKind.NodeJs,
    esModuleInterop: true,
    noEmit: true,
    typeRoots: [join(root, "node_modules/tslab/node_modules/@types"), join(root, "node_modules/@types")],
    types: ["node"],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}
