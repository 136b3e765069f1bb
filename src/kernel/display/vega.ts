// Vega in Node: compiles a Vega-Lite spec and renders it headless (renderer "none") to SVG, and
// turns a Vega colour scheme name into a colour list. vega and vega-lite are ESM-only with
// top-level await, so they are loaded with a real dynamic import() (kept as such in our
// CommonJS); vega-scale has no top-level await, so Node's require(esm) loads it synchronously,
// which lets a plot's spec (with its colours) be built while the cell is still running.

import type { VegaLiteSpec } from "../../protocol/plot/vega";

export type { VegaLiteSpec };

const importVega = () => import("vega");
const importVegaLite = () => import("vega-lite");
type Vega = Awaited<ReturnType<typeof importVega>>;
type VegaLite = Awaited<ReturnType<typeof importVegaLite>>;

/** The part of vega-scale used here (the package ships no typings). */
interface VegaScale {
  /** A named scheme: a list of colours (categorical) or an interpolator over [0, 1] (continuous); undefined if unknown. */
  scheme(name: string): readonly string[] | ((t: number) => string) | undefined;
  /** `count` evenly spaced colours of an interpolator. */
  quantizeInterpolator(interpolator: (t: number) => string, count: number): string[];
}

// Each is loaded once per process, and only when needed: a palette name needs vega-scale alone.
let vegaModule: Promise<Vega> | undefined;
let vegaLiteModule: Promise<VegaLite> | undefined;
let vegaScaleModule: VegaScale | undefined;
const loadVega = (): Promise<Vega> => (vegaModule ??= importVega());
const loadVegaLite = (): Promise<VegaLite> => (vegaLiteModule ??= importVegaLite());
const loadVegaScale = (): VegaScale => (vegaScaleModule ??= require("vega-scale") as VegaScale);

/** Compiles Vega-Lite to Vega; a compile error or warning is an error here (our specs must be clean). */
export async function compileSpec(spec: VegaLiteSpec): Promise<Record<string, unknown>> {
  const vegaLite = await loadVegaLite();
  const problems: string[] = [];
  const note = (...message: unknown[]): void => void problems.push(message.map(String).join(" "));
  const logger = {
    level(): number {
      return 0;
    },
    error: note,
    warn: note,
    info: () => undefined,
    debug: () => undefined,
  };
  const compiled = vegaLite.compile(spec as never, { logger: logger as never }).spec;
  if (problems.length > 0) throw new Error(`Vega-Lite could not compile the plot cleanly: ${problems.join("; ")}`);
  return compiled as unknown as Record<string, unknown>;
}

/** A static SVG of the spec, rendered without a browser (text widths are estimated). */
export async function renderSVG(spec: VegaLiteSpec): Promise<string> {
  const [vega, compiled] = await Promise.all([loadVega(), compileSpec(spec)]);
  const view = new vega.View(vega.parse(compiled as never), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * The colours of a palette: a list is used as is; a Vega scheme name becomes its colours
 * (continuous schemes such as "viridis" are sampled `count` times). Unknown names are an error.
 */
export function paletteColors(palette: string | readonly string[], count: number): readonly string[] {
  if (typeof palette !== "string") return palette;
  const vegaScale = loadVegaScale();
  const scheme = vegaScale.scheme(palette);
  if (Array.isArray(scheme)) return scheme as readonly string[];
  if (typeof scheme === "function") return vegaScale.quantizeInterpolator(scheme, Math.max(2, count));
  throw new TypeError(`Option palette: "${palette}" is not a Vega colour scheme (try "tableau20", "category10", "viridis")`);
}
