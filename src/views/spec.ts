// How a plot update is told apart from a new plot: the spec minus its data rows is the plot's
// shape; when the shape is unchanged only the named datasets need to reach the live Vega view.

type Rows = readonly unknown[];
type Json = Record<string, unknown>;

/** A spec split into its shape (everything but the data rows, plus the theme) and its named datasets. */
export interface SplitSpec {
  readonly spec: Json;
  readonly datasets: ReadonlyMap<string, Rows>;
  readonly shape: string;
}

const INLINE_PREFIX = "tsdask_inline_";

/**
 * Moves every inline `data: {values: [...]}` into top-level named `datasets`, which Vega-Lite
 * compiles to Vega datasets of the same name, the handle `view.change` needs.
 */
export function splitSpec(source: Readonly<Json>, theme: string): SplitSpec {
  const spec = structuredClone(source) as Json;
  const datasets = new Map<string, Rows>(Object.entries((spec.datasets ?? {}) as Record<string, Rows>));
  let inline = 0;
  const hoist = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(hoist);
    if (typeof node !== "object" || node === null) return;
    const fields = node as Json;
    const data = fields.data as Json | undefined;
    if (typeof data === "object" && data !== null && Array.isArray(data.values)) {
      const name = `${INLINE_PREFIX}${inline++}`;
      datasets.set(name, data.values);
      const { values: _values, ...rest } = data;
      fields.data = { ...rest, name };
    }
    for (const [key, value] of Object.entries(fields)) if (key !== "datasets") hoist(value);
  };
  hoist(spec);
  spec.datasets = Object.fromEntries(datasets);
  const shape = JSON.stringify([theme, { ...spec, datasets: [...datasets.keys()] }]);
  return { spec, datasets, shape };
}
