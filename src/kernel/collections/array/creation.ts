// Ways to make an array: seeded random blocks, constant blocks, or the blocks of a typed array.

import { randomBytes } from "node:crypto";
import type { Key } from "../../graph/keys";
import { tagLayer } from "../../metrics/spans";
import { tokenize } from "../tokenize";
import { ChunkedArray, type ChunksInput, blockIndices, normalizeChunks, offsets, tuple } from "./array";
import { allocate } from "./chunk";
import * as kernels from "./kernels";
import { seedFromHex } from "./prng";

export interface CreationOptions {
  readonly chunks?: ChunksInput;
}

export interface RandomOptions extends CreationOptions {
  /** Same seed, shape and chunks → the same numbers, whatever scheduler runs them. Omitted: fresh numbers. */
  readonly seed?: number;
}

export interface NormalOptions extends RandomOptions {
  /** Mean (default 0). */
  readonly loc?: number;
  /** Standard deviation (default 1). */
  readonly scale?: number;
}

type Shape = number | readonly number[];

function shapeOf(shape: Shape): number[] {
  return typeof shape === "number" ? [shape] : [...shape];
}

/**
 * An array whose block at `index` comes from `task(blockShape, index)`. Seeded arrays derive each
 * block's seed from the array's token and the block index, so a block never depends on the others.
 */
function fromBlockTasks(op: string, shape: Shape, chunks: ChunksInput | undefined, params: unknown[], task: (blockShape: number[], token: string, index: number[]) => unknown[]): ChunkedArray {
  const dims = shapeOf(shape);
  const normalized = normalizeChunks(chunks, dims);
  const token = tokenize(op, dims, normalized, ...params);
  const name = `${op}-${token}`;
  const layer = new Map<Key, unknown>();
  for (const index of blockIndices(normalized.map((sizes) => sizes.length))) {
    const blockShape = index.map((i, axis) => normalized[axis][i]);
    layer.set([name, ...index], task(blockShape, token, index));
  }
  tagLayer(layer);
  return new ChunkedArray(name, normalized, new Map([[name, layer]]));
}

function seedParam(seed: number | undefined): unknown {
  if (seed !== undefined && !Number.isFinite(seed)) throw new TypeError(`seed must be a finite number, got ${seed}`);
  return seed ?? randomBytes(16).toString("hex");
}

/** Uniform samples in [0, 1), like `da.random.random`. */
export function randomArray(shape: Shape, options: RandomOptions = {}): ChunkedArray {
  return fromBlockTasks("random_sample", shape, options.chunks, [seedParam(options.seed)], (blockShape, token, index) => [
    kernels.randomSample,
    seedFromHex(tokenize(token, index)),
    blockShape,
  ]);
}

/** Normal samples, like `da.random.normal(loc, scale, size)`. */
export function normal(shape: Shape, options: NormalOptions = {}): ChunkedArray {
  const loc = options.loc ?? 0;
  const scale = options.scale ?? 1;
  return fromBlockTasks("normal", shape, options.chunks, [seedParam(options.seed), loc, scale], (blockShape, token, index) => [
    kernels.normal,
    seedFromHex(tokenize(token, index)),
    blockShape,
    loc,
    scale,
  ]);
}

/** Seeded random arrays, `da.random.random` and `da.random.normal`. */
export const random = { random: randomArray, normal };

export function ones(shape: Shape, options: CreationOptions = {}): ChunkedArray {
  return fromBlockTasks("ones", shape, options.chunks, [], (blockShape) => [kernels.full, blockShape, 1]);
}

export function zeros(shape: Shape, options: CreationOptions = {}): ChunkedArray {
  return fromBlockTasks("zeros", shape, options.chunks, [], (blockShape) => [kernels.full, blockShape, 0]);
}

/**
 * An array over the numbers of `values` (row-major, `shape` given). Like `da.from_array`, the
 * values sit in the graph once, under `array-original-<token>`, and each block is a task slicing them.
 */
export function fromArray(values: ArrayLike<number>, shape: Shape, options: CreationOptions = {}): ChunkedArray {
  const dims = shapeOf(shape);
  if (dims.length > 2) throw new RangeError(`fromArray: 0-d, 1-d and 2-d arrays are supported, got shape ${tuple(dims)}`);
  const expected = dims.reduce((total, extent) => total * extent, 1);
  if (values === null || typeof values !== "object" || typeof values.length !== "number") {
    throw new TypeError(`fromArray: values must be a typed array or an array of numbers`);
  }
  if (values.length !== expected) {
    throw new RangeError(`fromArray: ${values.length} values do not fill shape ${tuple(dims)} (${expected} elements)`);
  }
  // Shared memory already is used as it is (like Dask's from_array, the graph refers to it).
  const shared = values instanceof Float64Array && values.buffer instanceof SharedArrayBuffer;
  const source = { shape: dims, data: shared ? values : copyToShared(values) };
  const normalized = normalizeChunks(options.chunks, dims);
  const token = tokenize(source.data, dims, normalized);
  const original = `array-original-${token}`;
  const name = `array-${token}`;
  const layer = new Map<Key, unknown>();
  const starts = normalized.map(offsets);
  for (const index of blockIndices(normalized.map((sizes) => sizes.length))) {
    const blockShape = index.map((i, axis) => normalized[axis][i]);
    const blockStarts = index.map((i, axis) => starts[axis][i]);
    layer.set([name, ...index], [kernels.getBlock, original, blockStarts, blockShape]);
  }
  const originalLayer = new Map<Key, unknown>([[original, source]]);
  tagLayer(layer);
  return new ChunkedArray(name, normalized, new Map([[original, originalLayer], [name, layer]]));
}

function copyToShared(data: ArrayLike<number>): Float64Array {
  const shared = allocate(data.length);
  shared.set(data);
  return shared;
}
