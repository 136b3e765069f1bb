// Durations as Dask writes them (`dask.utils.parse_timedelta`): "20 s", "500ms", "2 minutes".

const SECONDS_PER_UNIT: ReadonlyMap<string, number> = (() => {
  const short: [string, number][] = [
    ["s", 1],
    ["ms", 1e-3],
    ["us", 1e-6],
    ["ns", 1e-9],
    ["m", 60],
    ["h", 3600],
    ["d", 86_400],
    ["w", 7 * 86_400],
    ["y", 52 * 7 * 86_400],
  ];
  const long: [string, number][] = [
    ["second", 1],
    ["minute", 60],
    ["hour", 3600],
    ["day", 86_400],
    ["week", 7 * 86_400],
    ["year", 52 * 7 * 86_400],
    ["millisecond", 1e-3],
    ["microsecond", 1e-6],
    ["nanosecond", 1e-9],
  ];
  return new Map([...short, ...long, ...long.map(([unit, seconds]): [string, number] => [unit + "s", seconds])]);
})();

/**
 * Seconds in `text`, a number and a unit as Dask's `parse_timedelta` reads them: spaces
 * ignored, units in any case (`"5S"`, `"3.3 milliseconds"`, `"2 w"`), a bare number is seconds,
 * a bare unit is one of it (`"ms"`). Throws a RangeError naming `option` otherwise.
 */
export function parseTimedelta(text: string, option: string): number {
  const refuse = (why: string): never => {
    throw new RangeError(`Option ${option} must be a duration such as "20 s", "500ms" or "2 minutes"; got ${JSON.stringify(text)} (${why})`);
  };
  const match = /^([0-9]*\.?[0-9]*(?:e[+-]?[0-9]+)?)([a-z]*)$/i.exec(text.replace(/ /g, ""));
  if (match === null || (match[1] === "" && match[2] === "")) return refuse("not a number and a unit");
  const [, number, unit] = match;
  const seconds = SECONDS_PER_UNIT.get(unit === "" ? "s" : unit.toLowerCase());
  if (seconds === undefined) return refuse(`unknown unit "${unit}"; known: ${[...SECONDS_PER_UNIT.keys()].join(", ")}`);
  const amount = number === "" ? 1 : Number(number);
  if (!Number.isFinite(amount)) return refuse("not a number");
  return amount * seconds;
}
