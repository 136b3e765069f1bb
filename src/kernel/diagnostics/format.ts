// Text formatting shared by the progress bar's terminal and notebook outputs, matching Dask's
// strings byte for byte (dask.utils.format_time and ProgressBar._draw_bar).

import { formatTime } from "../../protocol/format";

export { formatTime };

/** Dask's bar without the leading `\r`: `[####      ] | 40% Completed | 1.20 s`. */
export function barText(fraction: number, elapsed: number, width: number): string {
  const bar = "#".repeat(Math.trunc(width * fraction)).padEnd(width, " ");
  return `[${bar}] | ${Math.trunc(100 * fraction)}% Completed | ${formatTime(elapsed)}`;
}
