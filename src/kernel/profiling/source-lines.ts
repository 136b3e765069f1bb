// Source text and source maps for profile descriptions (Dask reads lines through linecache): a
// frame of compiled JavaScript is shown where it came from — the TypeScript line — when the file
// has a source map (a `sourceMappingURL` comment) whose original source is readable. Files and
// maps are read once and kept for a while; anything that is not a readable local file gives "".

import { readFileSync, statSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Files (and maps) kept in memory at once; the least recently read goes first. */
const MAX_FILES = 256;
/** Larger files (bundles, generated code) are not read: their lines are not worth the memory. */
const MAX_BYTES = 4 * 1024 * 1024;

/** A small least-recently-used cache of what was read per file (null: nothing to read). */
class FileCache<T> {
  private readonly entries = new Map<string, T | null>();

  constructor(private readonly read: (filename: string) => T | null) {}

  get(filename: string): T | null {
    let entry = this.entries.get(filename);
    if (entry !== undefined) {
      this.entries.delete(filename);
      this.entries.set(filename, entry);
      return entry;
    }
    entry = this.read(filename);
    this.entries.set(filename, entry);
    if (this.entries.size > MAX_FILES) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }
}

function readText(filename: string): string | null {
  if (!isAbsolute(filename)) return null;
  try {
    return statSync(filename).size <= MAX_BYTES ? readFileSync(filename, "utf8") : null;
  } catch {
    return null; // gone, unreadable, or not a file: no text
  }
}

const lines = new FileCache((filename) => readText(filename)?.split(/\r?\n/) ?? null);

/** Line `line` (1-based) of `filename`, trimmed; "" when unknown. */
export function sourceLine(filename: string, line: number): string {
  if (line < 1) return "";
  return lines.get(filename)?.[line - 1]?.trim() ?? "";
}

interface FileMap {
  readonly map: SourceMap;
  /** Where the map's relative source paths start from. */
  readonly base: string;
}

const MAPPING_URL = /\/\/[#@] sourceMappingURL=(\S+)\s*$/;

const maps = new FileCache<FileMap>((filename) => {
  const text = lines.get(filename);
  if (text === null) return null;
  // The comment is on the last non-empty line.
  let last = text.length - 1;
  while (last > 0 && text[last].trim() === "") last--;
  const url = MAPPING_URL.exec(text[last] ?? "")?.[1];
  if (url === undefined) return null;
  try {
    if (url.startsWith("data:")) {
      const comma = url.indexOf(",");
      const body = url.slice(comma + 1);
      const json = url.slice(0, comma).endsWith(";base64") ? Buffer.from(body, "base64").toString("utf8") : decodeURIComponent(body);
      return { map: new SourceMap(JSON.parse(json)), base: dirname(filename) };
    }
    const path = url.startsWith("file:") ? fileURLToPath(url) : resolve(dirname(filename), decodeURIComponent(url));
    const json = readText(path);
    if (json === null) return null;
    const payload = JSON.parse(json) as { sourceRoot?: string };
    return { map: new SourceMap(payload as never), base: resolve(dirname(path), payload.sourceRoot ?? "") };
  } catch {
    return null; // a broken map: the compiled lines stay
  }
});

/**
 * Where line `line` (1-based) of the compiled `filename` came from, per its source map: the
 * original file and line, when the map says and the original file can be read (a package
 * shipped without its sources keeps its compiled lines).
 */
export function originalLocation(filename: string, line: number): { filename: string; line: number } | undefined {
  if (line < 1) return undefined;
  const fileMap = maps.get(filename);
  const text = lines.get(filename)?.[line - 1];
  if (fileMap === null || text === undefined) return undefined;
  // The line's first token: a mapping at column 0 of an indented line would be the previous line's.
  const column = text.length - text.trimStart().length;
  const entry = fileMap.map.findEntry(line - 1, column) as { generatedLine?: number; originalSource?: string; originalLine?: number };
  if (entry.generatedLine !== line - 1 || entry.originalSource === undefined || entry.originalLine === undefined) return undefined;
  const source = entry.originalSource.startsWith("file:") ? fileURLToPath(entry.originalSource) : resolve(fileMap.base, entry.originalSource);
  if (lines.get(source) === null) return undefined;
  return { filename: source, line: entry.originalLine + 1 };
}
