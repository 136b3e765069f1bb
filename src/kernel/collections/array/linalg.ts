// Linear algebra on chunked arrays: tall-and-skinny QR, the graph Dask builds for da.linalg.qr.

import type { Key } from "../../graph/keys";
import { tokenize } from "../tokenize";
import { ChunkedArray, type Layer, tuple } from "./array";
import { getitem, sliceRowsSideBySide } from "./kernels";
import { applyQ, householderQ, qrReflectors, qrStackedReflectors, stackedQColumns } from "./householder";

/**
 * Stage 2 forms its q in this many column ranges, one task each, so that half of its work runs in
 * parallel; more ranges than cores let the scheduler balance them against other tasks.
 */
const STAGE2_PIECES = 4;

/**
 * The QR factorisation of a tall-and-skinny array (one block across the columns, each block at
 * least as tall as it is wide), as [q, r]. Stage 1 factors every block, stage 2 factors the
 * stacked R factors and forms its Q in column ranges, stage 3 multiplies each block's Q by its
 * slice of the stage-2 Q.
 * Every layer is named `tsqr-<token>_…`, so diagnostics group them as "tsqr".
 */
export function qr(a: ChunkedArray): [ChunkedArray, ChunkedArray] {
  if (!(a instanceof ChunkedArray)) throw new TypeError("qr: expects an array");
  if (a.ndim !== 2) throw new RangeError(`qr: needs a 2-d array, got shape ${tuple(a.shape)}`);
  const [rowChunks, colChunks] = a.chunks;
  if (colChunks.length !== 1) {
    throw new RangeError(`qr: tall-and-skinny QR needs one block across the columns, got column chunks ${tuple(colChunks)}`);
  }
  const n = colChunks[0];
  const short = rowChunks.findIndex((rows) => rows < n);
  if (short >= 0) {
    throw new RangeError(`qr: every row block must have at least as many rows as the array has columns (${n}); block ${short} has ${rowChunks[short]}`);
  }
  const prefix = `tsqr-${tokenize("tsqr", a.name)}`;
  const blocks = rowChunks.length;
  const layers = new Map<string, Layer>();
  const addLayer = (suffix: string, fill: (layer: Map<Key, unknown>, name: string) => void): string => {
    const name = prefix + suffix;
    const layer = new Map<Key, unknown>();
    fill(layer, name);
    layers.set(name, layer);
    return name;
  };

  // Stage 1 keeps each block's Householder reflections instead of forming its q: stage 3 applies
  // them to its slice of the stage-2 q, which costs less than forming q and multiplying.
  const st1 = addLayer("_QR_st1", (layer, name) => {
    for (let i = 0; i < blocks; i++) layer.set([name, i, 0], [qrReflectors, a.blockKey([i, 0])]);
  });
  const r1 = addLayer("_R_st1", (layer, name) => {
    for (let i = 0; i < blocks; i++) layer.set([name, i, 0], [getitem, [st1, i, 0], 2]);
  });
  if (blocks === 1) {
    const q1 = addLayer("_Q_st1", (layer, name) => layer.set([name, 0, 0], [householderQ, [getitem, [st1, 0, 0], 0], [getitem, [st1, 0, 0], 1]]));
    const q = a.derive(q1, a.chunks, layers.get(q1)!, [a], layers);
    const r = a.derive(r1, [[n], [n]], layers.get(r1)!, [a], layers);
    return [q, r];
  }
  const st2 = addLayer("_QR_st2", (layer, name) => {
    layer.set([name, 0, 0], [qrStackedReflectors, Array.from({ length: blocks }, (_, i) => [r1, i, 0])]);
  });
  // Column j of the stage-2 q costs about j² (reflections 0 … j each touch it), so equal shares of
  // the work end at n·(p/P)^(1/3); multiples of 4 keep the SIMD kernel on its 4-column path.
  const bounds = [0];
  for (let p = 1; p <= STAGE2_PIECES; p++) {
    const end = p === STAGE2_PIECES ? n : Math.round((n * Math.cbrt(p / STAGE2_PIECES)) / 4) * 4;
    if (end > bounds[bounds.length - 1]) bounds.push(Math.min(end, n));
  }
  const q2Columns = addLayer("_Q_st2_cols", (layer, name) => {
    for (let p = 0; p + 1 < bounds.length; p++) {
      layer.set([name, 0, p], [stackedQColumns, [getitem, [st2, 0, 0], 0], [getitem, [st2, 0, 0], 1], bounds[p], bounds[p + 1]]);
    }
  });
  const pieces = Array.from({ length: bounds.length - 1 }, (_, p) => [q2Columns, 0, p]);
  const q2 = addLayer("_Q_st2", (layer, name) => {
    for (let i = 0; i < blocks; i++) layer.set([name, i, 0], [sliceRowsSideBySide, pieces, i * n, n]);
  });
  const r = addLayer("_R", (layer, name) => layer.set([name, 0, 0], [getitem, [st2, 0, 0], 2]));
  const q = addLayer("_Q_st3", (layer, name) => {
    for (let i = 0; i < blocks; i++) layer.set([name, i, 0], [applyQ, [getitem, [st1, i, 0], 0], [getitem, [st1, i, 0], 1], [q2, i, 0]]);
  });
  return [a.derive(q, a.chunks, layers.get(q)!, [a], layers), a.derive(r, [[n], [n]], layers.get(r)!, [a], layers)];
}
