// The bridge to the notebook: sends MIME bundles through the tslab kernel's own tslab as display_data /
// update_display_data, throttled and coalesced (tslab drops bursts). Outside a kernel: false / null.
// displayNow / displayPlot show an output in the calling cell at once and complete it later.
import type { MimeBundle } from "../../protocol";
import { checkOptions, type LiveDisplay, type LiveDisplayOptions, ThrottledDisplay } from "./live";
import { kernelChannel } from "./tslab";

export { DEFAULT_MIN_INTERVAL_MS, type LiveDisplay, type LiveDisplayOptions } from "./live";
export { DisplayHandle, type DisplayArrivingOptions, type DisplayNowOptions, type UpdateOutput, displayArriving, displayNow } from "./handle";
export { displayPlot } from "./plot";
export type { VegaLiteSpec } from "./vega";
export type { MimeBundle };

/** True when this code runs in a tslab kernel's main thread, where displays reach the notebook. */
export function inNotebook(): boolean {
  return kernelChannel() !== null;
}

/**
 * A new output area in the running cell, updated in place at a bounded rate; null outside a
 * notebook. Nothing is shown until the first `update`.
 */
export function newLiveDisplay(options: LiveDisplayOptions = {}): LiveDisplay | null {
  const interval = checkOptions(options);
  const channel = kernelChannel();
  return channel === null ? null : new ThrottledDisplay(channel.newSlot(), interval);
}

/** Shows `bundle` once in the running cell; false (nothing shown) outside a notebook. */
export function display(bundle: MimeBundle): boolean {
  const live = newLiveDisplay();
  live?.update(bundle);
  return live !== null;
}
