// What every tsdask Vega-Lite spec shares, built in the kernel or in the browser.

/** A Vega-Lite specification as plain JSON-able data (users may restyle it before rendering). */
export type VegaLiteSpec = Record<string, unknown>;

export const VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json";
/** The selection parameter that zooms and pans the shared time axis. */
export const ZOOM_PARAM = "zoom";
