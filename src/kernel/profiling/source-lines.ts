// The text of a source line, for profile descriptions (Dask reads them through linecache).
// Files are read once and kept for a while; anything that is not a readable local file gives "".

import { readFileSync, statSync } from "node:fs";
import { isAbsolute } from "node:path";

/** Files kept in memory at once; the least recently read goes first. */
const MAX_FILES = 256;
/** Larger files (bundles, generated code) are not read: their lines are not worth the memory. */
const MAX_BYTES = 4 * 1024 * 1024;
const cache = new Map<string, readonly string[] | null>();

function linesOf(filename: string): readonly string[] | null {
  let lines = cache.get(filename);
  if (lines !== undefined) {
    cache.delete(filename);
    cache.set(filename, lines);
    return lines;
  }
  lines = null;
  if (isAbsolute(filename)) {
    try {
      if (statSync(filename).size <= MAX_BYTES) lines = readFileSync(filename, "utf8").split(/\r?\n/);
    } catch {
      // gone, unreadable, or not a file: no text
    }
  }
  cache.set(filename, lines);
  if (cache.size > MAX_FILES) cache.delete(cache.keys().next().value!);
  return lines;
}

/** Line `line` (1-based) of `filename`, trimmed; "" when unknown. */
export function sourceLine(filename: string, line: number): string {
  if (line < 1) return "";
  return linesOf(filename)?.[line - 1]?.trim() ?? "";
}
