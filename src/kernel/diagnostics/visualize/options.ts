// The options of visualize(), checked once so that a typo fails loudly (Dask silently ignored
// or half-applied unknown keywords) instead of being dropped.

/** A Vega colour scheme name ("tableau20", "category10", "viridis", …) or a list of CSS colours. */
export type Palette = string | readonly string[];

export interface VisualizeOptions {
  /** Plot width in pixels (each stacked plot). Default 800. */
  readonly width?: number;
  /** Height in pixels of each stacked plot. Default 250. */
  readonly height?: number;
  /** Title above the top plot. Default "Profile Results". */
  readonly title?: string;
  /** Colours of the task groups. Default: tableau20's ten strong shades, then its ten light ones. */
  readonly palette?: Palette;
  /** Where the standalone HTML file goes when saving. Default "profile.html". */
  readonly filename?: string;
  /**
   * Open the saved file in a browser. Default false: tsdask runs in kernels and on servers
   * where there is no browser to open, so nothing is opened unless asked for.
   */
  readonly show?: boolean;
  /** Write the standalone HTML file. Default: true outside a notebook, false inside one. */
  readonly save?: boolean;
  /** Vega-Lite `config` merged into the spec (fonts, axis styles, …). */
  readonly config?: Readonly<Record<string, unknown>>;
}

/** The options with their defaults filled in (save stays optional: it depends on where we run). */
export interface ResolvedOptions {
  readonly width: number;
  readonly height: number;
  readonly title: string;
  readonly palette: Palette;
  readonly filename: string;
  readonly show: boolean;
  readonly save: boolean | undefined;
  readonly config: Readonly<Record<string, unknown>> | undefined;
}

export const DEFAULT_OPTIONS = {
  width: 800,
  height: 250,
  title: "Profile Results",
  palette: "tableau20",
  filename: "profile.html",
  show: false,
} as const;

const OPTION_NAMES = ["width", "height", "title", "palette", "filename", "show", "save", "config"];

export function resolveOptions(options: VisualizeOptions | undefined): ResolvedOptions {
  if (options === undefined) options = {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`visualize options must be an object, got ${describeValue(options)}`);
  }
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw new TypeError(`Unknown visualize option "${name}"; known options: ${OPTION_NAMES.join(", ")}`);
    }
  }
  const { width, height, title, palette, filename, show, save, config } = options;
  for (const [name, value] of [["width", width], ["height", height]] as const) {
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value > 0)) {
      throw new TypeError(`Option ${name} must be a positive number of pixels, got ${describeValue(value)}`);
    }
  }
  if (title !== undefined && typeof title !== "string") throw new TypeError(`Option title must be a string, got ${describeValue(title)}`);
  if (palette !== undefined) checkPalette(palette);
  if (filename !== undefined && (typeof filename !== "string" || filename.length === 0)) {
    throw new TypeError(`Option filename must be a non-empty string, got ${describeValue(filename)}`);
  }
  for (const [name, value] of [["show", show], ["save", save]] as const) {
    if (value !== undefined && typeof value !== "boolean") throw new TypeError(`Option ${name} must be true or false, got ${describeValue(value)}`);
  }
  if (config !== undefined && (config === null || typeof config !== "object" || Array.isArray(config))) {
    throw new TypeError(`Option config must be a Vega-Lite config object, got ${describeValue(config)}`);
  }
  return {
    width: width ?? DEFAULT_OPTIONS.width,
    height: height ?? DEFAULT_OPTIONS.height,
    title: title ?? DEFAULT_OPTIONS.title,
    palette: palette ?? DEFAULT_OPTIONS.palette,
    filename: filename ?? DEFAULT_OPTIONS.filename,
    show: show ?? DEFAULT_OPTIONS.show,
    save,
    config,
  };
}

function checkPalette(palette: unknown): void {
  if (typeof palette === "string" && palette.length > 0) return;
  if (Array.isArray(palette) && palette.length > 0 && palette.every((c) => typeof c === "string" && c.length > 0)) return;
  throw new TypeError(`Option palette must be a Vega scheme name or a non-empty list of colours, got ${describeValue(palette)}`);
}

function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : String(value);
}
