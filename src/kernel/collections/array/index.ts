// tsdask/array: lazy chunked float64 arrays (1-d and 2-d) whose operations build Dask-style task
// graphs with tuple keys [name, i, j], for the schedulers and diagnostics in the rest of the kernel.
import { qr } from "./linalg";

export { ChunkedArray, type Chunks, type ChunksInput, type ComputedArray, type AxisOptions, type Layer } from "./array";
export { random, ones, zeros, fromArray, type CreationOptions, type RandomOptions, type NormalOptions } from "./creation";
export type { Chunk } from "./chunk";
export { qr };

/** `da.linalg`: `linalg.qr(a)` → `[q, r]`. */
export const linalg = { qr };
