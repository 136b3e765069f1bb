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
  return cellsDiagnostics(dir, { cell: source }).cell;
}

/**
 * The type errors tslab would report for each of `cells` (name → source), each a cell of its own
 * in `dir`, from one program: checking the shipped .d.ts files, the lib and @types/node costs 5–10
 * CPU-s per program, a cell little. An error in a file that is no cell (a .d.ts) is every cell's.
 */
export function cellsDiagnostics<Name extends string>(dir: string, cells: Readonly<Record<Name, string>>): Record<Name, string[]> {
  const ts = tslabTypeScript;
  const names = Object.keys(cells) as Name[];
  const fileOf = new Map<string, Name>();
  for (const name of names) {
    const file = join(dir, `${name}.ts`);
    writeFileSync(file, cells[name]);
    fileOf.set(file, name);
  }
  const program = ts.createProgram([...fileOf.keys()], {
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
  const errors = Object.fromEntries(names.map((name) => [name, [] as string[]])) as Record<Name, string[]>;
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const cell = diagnostic.file === undefined ? undefined : fileOf.get(diagnostic.file.fileName);
    for (const name of cell === undefined ? names : [cell]) errors[name].push(text);
  }
  return errors;
}

/**
 * A test file's cells compiled together once, on the first test that asks (cellsDiagnostics),
 * in a fresh user project; each test then reads its own cell's errors.
 */
export function compiledOnce<Name extends string>(cells: Readonly<Record<Name, string>>): (name: Name) => Promise<string[]> {
  let compiled: Promise<Record<Name, string[]>> | undefined;
  return async (name) => (await (compiled ??= inUserProject((dir) => cellsDiagnostics(dir, cells))))[name];
}
