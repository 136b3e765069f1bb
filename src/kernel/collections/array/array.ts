// The lazy chunked array: a shape, a chunking, and the task graph whose tuple keys
// [name, i, j] produce its blocks. Every operation returns a new array with one more layer.

import type { Key } from "../../graph/keys";
import { tagLayer } from "../../metrics/spans";
import { type GetOptions, computeGraph } from "../../scheduler/get";
import { tokenize } from "../tokenize";
import { type Chunk, allocate } from "./chunk";
import * as kernels from "./kernels";
import { matmul } from "./matmul";

/** Block sizes along each axis, Dask's tuple-of-tuples: `[[1000, 1000], [500]]`. */
export type Chunks = readonly (readonly number[])[];

/**
 * How to cut an array: one block size for every axis (`1000`), one per axis (`[1000, 500]`),
 * or the explicit sizes (`[[600, 400], [500]]`). Omitted: blocks of about 128 MiB.
 */
export type ChunksInput = number | readonly (number | readonly number[])[];

/** One layer of the graph: the tasks (or values) behind the blocks of one array. */
export type Layer = ReadonlyMap<Key, unknown>;

/** What `compute` returns: the whole array, row-major. */
export interface ComputedArray {
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

export interface AxisOptions {
  /** The axis to reduce (negative counts from the end); omitted: all of them. */
  readonly axis?: number;
}

type BlockIndex = readonly number[];

export class ChunkedArray {
  readonly shape: readonly number[];
  private merged: Map<Key, unknown> | undefined;

  constructor(
    /** The layer name of this array's blocks, `<op>-<token>`. */
    readonly name: string,
    readonly chunks: Chunks,
    /** Layer name → layer, for this array and every array it is computed from. */
    readonly layers: ReadonlyMap<string, Layer>,
  ) {
    this.shape = chunks.map((sizes) => sizes.reduce((total, size) => total + size, 0));
  }

  get ndim(): number {
    return this.shape.length;
  }

  get size(): number {
    return this.shape.reduce((total, extent) => total * extent, 1);
  }

  /** Blocks per axis. */
  get numblocks(): readonly number[] {
    return this.chunks.map((sizes) => sizes.length);
  }

  /** The task graph as one Map (Dask's `.dask`), keys such as `["normal-3f…", 0, 1]`. */
  get dask(): Map<Key, unknown> {
    if (this.merged === undefined) {
      this.merged = new Map();
      for (const layer of this.layers.values()) for (const [key, task] of layer) this.merged.set(key, task);
    }
    return this.merged;
  }

  /** The key of one block. */
  blockKey(index: BlockIndex): Key {
    return [this.name, ...index];
  }

  /** Every block's key, nested by axis like Dask's `__dask_keys__()`. */
  keys(): unknown[] {
    if (this.ndim === 0) return [this.blockKey([])];
    const nest = (prefix: number[], axis: number): unknown[] =>
      Array.from({ length: this.chunks[axis].length }, (_, i) =>
        axis === this.ndim - 1 ? this.blockKey([...prefix, i]) : nest([...prefix, i], axis + 1),
      );
    return nest([], 0);
  }

  add(other: ChunkedArray | number): ChunkedArray {
    return elementwise("add", kernels.add, this, other);
  }

  sub(other: ChunkedArray | number): ChunkedArray {
    return elementwise("sub", kernels.subtract, this, other);
  }

  mul(other: ChunkedArray | number): ChunkedArray {
    return elementwise("mul", kernels.multiply, this, other);
  }

  div(other: ChunkedArray | number): ChunkedArray {
    return elementwise("truediv", kernels.divide, this, other);
  }

  /** The transpose (a 1-d array is its own). */
  get T(): ChunkedArray {
    return this.transpose();
  }

  transpose(): ChunkedArray {
    if (this.ndim < 2) return this;
    const name = `transpose-${tokenize("transpose", this.name)}`;
    const layer = new Map<Key, unknown>();
    for (const [i, j] of blockIndices(this.numblocks)) layer.set([name, j, i], [kernels.transpose, this.blockKey([i, j])]);
    return this.derive(name, [this.chunks[1], this.chunks[0]], layer, [this]);
  }

  /**
   * The matrix product (vectors as in NumPy's dot). Each output block sums the products of the
   * block pairs along the contracted axis; the chunks along that axis must match.
   */
  dot(other: ChunkedArray): ChunkedArray {
    return dot(this, other);
  }

  matmul(other: ChunkedArray): ChunkedArray {
    return dot(this, other);
  }

  sum(options: AxisOptions = {}): ChunkedArray {
    return reduce(this, "sum", options.axis, false);
  }

  mean(options: AxisOptions = {}): ChunkedArray {
    return reduce(this, "mean", options.axis, true);
  }

  /**
   * Runs the graph and assembles the blocks into one row-major array. Runs on the "threads"
   * scheduler unless the options or the config choose another, as Dask's arrays do.
   */
  async compute(options?: GetOptions): Promise<ComputedArray> {
    const indices = blockIndices(this.numblocks);
    const keys = indices.map((index) => this.blockKey(index));
    const values = (await computeGraph(this.dask, keys, options ?? {}, "threads")) as unknown[];
    return assembleBlocks(this.chunks, this.name, ...values);
  }

  /**
   * Computes the blocks and returns an array whose graph holds them as values, in shared memory
   * (blocks that came back from worker processes are copied there), so thread workers get them without copies.
   */
  async persist(options?: GetOptions): Promise<ChunkedArray> {
    const blocks = await this.computeBlocks(options);
    const layer = new Map<Key, unknown>(blocks.map(([index, block]) => [this.blockKey(index), shared(block)]));
    return new ChunkedArray(this.name, this.chunks, new Map([[this.name, layer]]));
  }

  toString(): string {
    const chunksize = this.chunks.map((sizes) => Math.max(0, ...sizes));
    return `dask.array<${this.name.split("-")[0]}, shape=${tuple(this.shape)}, dtype=float64, chunksize=${tuple(chunksize)}>`;
  }

  /** A new array built from this one's layers, the inputs' layers, and one new layer. */
  derive(name: string, chunks: Chunks, layer: Layer, inputs: readonly ChunkedArray[], extra: ReadonlyMap<string, Layer> = new Map()): ChunkedArray {
    // The new layers' tasks belong to the span this array is built in (see span()).
    tagLayer(layer);
    for (const extraLayer of extra.values()) tagLayer(extraLayer);
    const layers = new Map<string, Layer>();
    for (const input of inputs) for (const [layerName, inputLayer] of input.layers) layers.set(layerName, inputLayer);
    for (const [layerName, extraLayer] of extra) layers.set(layerName, extraLayer);
    layers.set(name, layer);
    return new ChunkedArray(name, chunks, layers);
  }

  private async computeBlocks(options?: GetOptions): Promise<[BlockIndex, Chunk][]> {
    const indices = blockIndices(this.numblocks);
    const keys = indices.map((index) => this.blockKey(index));
    // Dask computes arrays on its threaded scheduler: their kernels are module exports, so they ship.
    const values = (await computeGraph(this.dask, keys, options ?? {}, "threads")) as unknown[];
    return indices.map((index, at) => [index, checkBlock(values[at], keys[at], this.blockShape(index))]);
  }

  private blockShape(index: BlockIndex): number[] {
    return index.map((i, axis) => this.chunks[axis][i]);
  }
}

/**
 * The whole array from the blocks of layer `name`, given in row-major block order (what `compute`
 * returns). A module export, so a cluster worker can run it as the last task of `client.compute(array)`.
 */
export function assembleBlocks(chunks: Chunks, name: string, ...blocks: unknown[]): ComputedArray {
  const shape = chunks.map((sizes) => sizes.reduce((total, size) => total + size, 0));
  const ndim = shape.length;
  const data = new Float64Array(shape.reduce((total, extent) => total * extent, 1));
  const starts = chunks.map(offsets);
  const numblocks = chunks.map((sizes) => sizes.length);
  blockIndices(numblocks).forEach((index, at) => {
    const expected = index.map((i, axis) => chunks[axis][i]);
    const block = checkBlock(blocks[at], [name, ...index], expected);
    if (ndim < 2) {
      data.set(block.data, ndim === 0 ? 0 : starts[0][index[0]]);
      return;
    }
    const [rows, cols] = block.shape;
    const width = shape[1];
    const top = starts[0][index[0]];
    const left = starts[1][index[1]];
    for (let r = 0; r < rows; r++) data.set(block.data.subarray(r * cols, (r + 1) * cols), (top + r) * width + left);
  });
  return { shape, data };
}

/** Every block index of an array with these block counts, row-major; `[[]]` for a 0-d array. */
export function blockIndices(numblocks: readonly number[]): number[][] {
  let indices: number[][] = [[]];
  for (const count of numblocks) {
    indices = indices.flatMap((prefix) => Array.from({ length: count }, (_, i) => [...prefix, i]));
  }
  return indices;
}

/** Where each block starts along one axis. */
export function offsets(sizes: readonly number[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const size of sizes) {
    starts.push(at);
    at += size;
  }
  return starts;
}

/** The explicit block sizes for `shape`, checked. */
export function normalizeChunks(chunks: ChunksInput | undefined, shape: readonly number[]): number[][] {
  for (const extent of shape) {
    if (!Number.isInteger(extent) || extent < 0) throw new RangeError(`Array shape must hold whole numbers ≥ 0, got ${tuple(shape)}`);
  }
  if (chunks === undefined) {
    // About 128 MiB of float64 per block, split evenly over the axes.
    const edge = Math.max(1, Math.floor(Math.pow(16 * 1024 * 1024, 1 / Math.max(1, shape.length))));
    return shape.map((extent) => regular(extent, Math.min(extent, edge)));
  }
  const perAxis: readonly (number | readonly number[])[] = typeof chunks === "number" ? shape.map(() => chunks) : chunks;
  if (perAxis.length !== shape.length) {
    throw new RangeError(`chunks ${JSON.stringify(chunks)} has ${perAxis.length} entries for a ${shape.length}-d shape ${tuple(shape)}`);
  }
  return perAxis.map((spec, axis) => {
    if (typeof spec === "number") {
      if (!Number.isInteger(spec) || spec < 1) throw new RangeError(`Block size must be a whole number ≥ 1, got ${spec} for axis ${axis}`);
      return regular(shape[axis], spec);
    }
    const total = spec.reduce((sum, size) => sum + size, 0);
    if (total !== shape[axis] || spec.some((size) => !Number.isInteger(size) || size < 0)) {
      throw new RangeError(`chunks ${tuple(spec)} for axis ${axis} do not add up to its length ${shape[axis]}`);
    }
    return [...spec];
  });
}

function regular(extent: number, size: number): number[] {
  if (extent === 0) return [0];
  const sizes = Array.from({ length: Math.floor(extent / size) }, () => size);
  if (extent % size !== 0) sizes.push(extent % size);
  return sizes;
}

/** Python's tuple repr, for messages that match Dask's. */
export function tuple(values: readonly unknown[]): string {
  return values.length === 1 ? `(${values[0]},)` : `(${values.join(", ")})`;
}

function chunksRepr(chunks: Chunks): string {
  return tuple(chunks.map(tuple));
}

function sameChunks(a: Chunks, b: Chunks): boolean {
  return a.length === b.length && a.every((sizes, axis) => sizes.length === b[axis].length && sizes.every((size, i) => size === b[axis][i]));
}

type BinaryKernel = (left: Chunk | number, right: Chunk | number) => Chunk;

function elementwise(op: string, kernel: BinaryKernel, left: ChunkedArray, right: ChunkedArray | number): ChunkedArray {
  if (typeof right === "number") {
    const name = `${op}-${tokenize(op, left.name, right)}`;
    const layer = new Map<Key, unknown>();
    for (const index of blockIndices(left.numblocks)) layer.set([name, ...index], [kernel, left.blockKey(index), right]);
    return left.derive(name, left.chunks, layer, [left]);
  }
  if (!(right instanceof ChunkedArray)) throw new TypeError(`${op}: the other operand must be an array or a number, got ${typeof right}`);
  if (left.shape.length !== right.shape.length || left.shape.some((extent, axis) => extent !== right.shape[axis])) {
    throw new RangeError(`${op}: shapes ${tuple(left.shape)} and ${tuple(right.shape)} differ (broadcasting is not supported)`);
  }
  if (!sameChunks(left.chunks, right.chunks)) {
    throw new RangeError(`${op}: chunks differ: ${chunksRepr(left.chunks)} and ${chunksRepr(right.chunks)}; build both arrays with the same chunks`);
  }
  const name = `${op}-${tokenize(op, left.name, right.name)}`;
  const layer = new Map<Key, unknown>();
  for (const index of blockIndices(left.numblocks)) {
    layer.set([name, ...index], [kernel, left.blockKey(index), right.blockKey(index)]);
  }
  return left.derive(name, left.chunks, layer, [left, right]);
}

function dot(left: ChunkedArray, right: ChunkedArray): ChunkedArray {
  if (!(right instanceof ChunkedArray)) throw new TypeError(`dot: the other operand must be an array`);
  if (left.ndim < 1 || left.ndim > 2 || right.ndim < 1 || right.ndim > 2) {
    throw new RangeError(`dot: needs 1-d or 2-d arrays, got shapes ${tuple(left.shape)} and ${tuple(right.shape)}`);
  }
  const inner = left.ndim - 1;
  if (left.shape[inner] !== right.shape[0]) {
    throw new RangeError(
      `dot: shapes ${tuple(left.shape)} and ${tuple(right.shape)} not aligned: ${left.shape[inner]} (dim ${inner}) != ${right.shape[0]} (dim 0)`,
    );
  }
  if (!sameChunks([left.chunks[inner]], [right.chunks[0]])) {
    throw new RangeError(
      `dot: chunks along the contracted axis differ: ${tuple(left.chunks[inner])} and ${tuple(right.chunks[0])}; build both arrays with matching chunks`,
    );
  }
  const rowBlocks = left.ndim === 2 ? left.numblocks[0] : 0;
  const colBlocks = right.ndim === 2 ? right.numblocks[1] : 0;
  const contracted = right.numblocks[0];
  const outChunks = [...(left.ndim === 2 ? [left.chunks[0]] : []), ...(right.ndim === 2 ? [right.chunks[1]] : [])];
  const outIndices = blockIndices([...(rowBlocks > 0 ? [rowBlocks] : []), ...(colBlocks > 0 ? [colBlocks] : [])]);
  const token = tokenize("dot", left.name, right.name);
  const productName = `dot-${token}`;
  const products = new Map<Key, unknown>();
  const sums = new Map<Key, unknown>();
  const sumName = `sum-${token}`;
  for (const out of outIndices) {
    const i = left.ndim === 2 ? [out[0]] : [];
    const j = right.ndim === 2 ? [out[out.length - 1]] : [];
    const parts: Key[] = [];
    for (let p = 0; p < contracted; p++) {
      const key: Key = contracted === 1 ? [productName, ...out] : [productName, ...out, p];
      products.set(key, [matmul, left.blockKey([...i, p]), right.blockKey([p, ...j])]);
      parts.push(key);
    }
    if (contracted > 1) sums.set([sumName, ...out], [kernels.sumBlocks, parts, 1]);
  }
  if (contracted === 1) return left.derive(productName, outChunks, products, [left, right]);
  return left.derive(sumName, outChunks, sums, [left, right], new Map([[productName, products]]));
}

function reduce(array: ChunkedArray, op: "sum" | "mean", axisOption: number | undefined, average: boolean): ChunkedArray {
  let axis: number | null = null;
  if (axisOption !== undefined) {
    if (!Number.isInteger(axisOption) || axisOption >= array.ndim || axisOption < -array.ndim) {
      throw new RangeError(`${op}: axis ${axisOption} is out of bounds for a ${array.ndim}-d array`);
    }
    axis = axisOption < 0 ? axisOption + array.ndim : axisOption;
  }
  if (array.ndim <= 1) axis = null;
  const token = tokenize(op, array.name, axis);
  const partialName = op === "sum" ? `sum-${token}` : `mean_chunk-${token}`;
  const outName = op === "sum" ? `sum-aggregate-${token}` : `mean_agg-aggregate-${token}`;
  const divisor = average ? (axis === null ? array.size : array.shape[axis]) : 1;
  const partials = new Map<Key, unknown>();
  const groups = new Map<string, { out: number[]; parts: Key[] }>();
  for (const index of blockIndices(array.numblocks)) {
    const key: Key = [partialName, ...index];
    partials.set(key, [kernels.sumBlock, array.blockKey(index), axis]);
    const out = axis === null ? [] : index.filter((_, at) => at !== axis);
    const id = out.join(",");
    if (!groups.has(id)) groups.set(id, { out, parts: [] });
    groups.get(id)!.parts.push(key);
  }
  const aggregates = new Map<Key, unknown>();
  for (const { out, parts } of groups.values()) aggregates.set([outName, ...out], [kernels.sumBlocks, parts, divisor]);
  const outChunks = axis === null ? [] : array.chunks.filter((_, at) => at !== axis);
  return array.derive(outName, outChunks, aggregates, [array], new Map([[partialName, partials]]));
}

function shared(block: Chunk): Chunk {
  if (block.data.buffer instanceof SharedArrayBuffer) return block;
  const data = allocate(block.data.length);
  data.set(block.data);
  return { shape: block.shape, data };
}

function checkBlock(value: unknown, key: Key, expected: readonly number[]): Chunk {
  const block = value as Chunk;
  if (
    block === null ||
    typeof block !== "object" ||
    !(block.data instanceof Float64Array) ||
    !Array.isArray(block.shape) ||
    block.shape.length !== expected.length ||
    block.shape.some((extent, axis) => extent !== expected[axis])
  ) {
    const got = block !== null && typeof block === "object" && Array.isArray(block.shape) ? tuple(block.shape) : typeof value;
    throw new Error(`Block ${JSON.stringify(key)} should be a float64 block of shape ${tuple(expected)}, got ${got}`);
  }
  return block;
}
