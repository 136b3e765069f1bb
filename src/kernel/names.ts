// Names given in an options object that nothing reads are mistakes: a TypeError names them and
// lists the known ones (Dask ignores unknown keywords, so a typo silently changes nothing).

/** `name` folded the way typos and Dask's spellings differ: case and underscores (`metric_name` → `metricname`). */
export function foldName(name: string): string {
  return name.replace(/_/g, "").toLowerCase();
}

/** The known name `name` is a misspelling of, up to case and underscores. */
export function nearName(name: string, known: readonly string[]): string | undefined {
  return known.find((candidate) => foldName(candidate) === foldName(name));
}

/**
 * Throws a TypeError unless `options` is an object whose own names are all `known`.
 * `what` names one entry in messages: "ProgressBar option", "config name".
 */
export function checkNames(options: unknown, known: readonly string[], what: string): void {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected an object of ${what}s (${known.join(", ")}), got ${options === null ? "null" : Array.isArray(options) ? "an array" : String(options)}`);
  }
  const unknown = Object.keys(options).filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  const near = unknown.length === 1 ? nearName(unknown[0]!, known) : undefined;
  const names = unknown.map((name) => `"${name}"`).join(", ");
  throw new TypeError(
    `Unknown ${what}${unknown.length > 1 ? "s" : ""} ${names}${near === undefined ? "" : ` (did you mean ${near}?)`}; known: ${known.join(", ")}`,
  );
}
