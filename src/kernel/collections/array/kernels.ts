// Chunk kernels: the functions that array tasks call. Each is a plain module export that takes
// data (numbers, arrays of numbers, chunks) and returns a new chunk, so a worker thread can run
// it from this module by name.

import { type Chunk, allocate, sizeOf } from "./chunk";
import { type Seed, fillNormal, fillUniform } from "./prng";

/** Uniform samples in [0, 1), like numpy's random_sample. */
export function randomSample(seed: Seed, shape: readonly number[]): Chunk {
  const data = allocate(sizeOf(shape));
  fillUniform(seed, data);
  return { shape, data };
}

/** Normal samples with mean `loc` and standard deviation `scale`. */
export function normal(seed: Seed, shape: readonly number[], loc: number, scale: number): Chunk {
  const data = allocate(sizeOf(shape));
  fillNormal(seed, data, loc, scale);
  return { shape, data };
}

/** A block holding one value everywhere (ones, zeros). */
export function full(shape: readonly number[], value: number): Chunk {
  const data = allocate(sizeOf(shape));
  if (value !== 0) data.fill(value);
  return { shape, data };
}

/** The block of `source` that starts at `starts` and has `shape` (1-d or 2-d). */
export function getBlock(source: Chunk, starts: readonly number[], shape: readonly number[]): Chunk {
  const data = allocate(sizeOf(shape));
  if (shape.length <= 1) {
    const start = starts[0] ?? 0;
    data.set(source.data.subarray(start, start + data.length));
  } else {
    const [rows, cols] = shape;
    const width = source.shape[1];
    for (let i = 0; i < rows; i++) {
      const from = (starts[0] + i) * width + starts[1];
      data.set(source.data.subarray(from, from + cols), i * cols);
    }
  }
  return { shape, data };
}

/** Rows `start … start + count` of 2-d blocks laid side by side (one matrix split by columns). */
export function sliceRowsSideBySide(pieces: readonly Chunk[], start: number, count: number): Chunk {
  const cols = pieces.reduce((sum, piece) => sum + piece.shape[1], 0);
  const data = allocate(count * cols);
  let at = 0;
  for (const piece of pieces) {
    const width = piece.shape[1];
    for (let i = 0; i < count; i++) data.set(piece.data.subarray((start + i) * width, (start + i + 1) * width), i * cols + at);
    at += width;
  }
  return { shape: [count, cols], data };
}

/** Element `index` of a task result that is a list (a QR factorisation's [q, r]). */
export function getitem(values: readonly Chunk[], index: number): Chunk {
  return values[index];
}

type Operand = Chunk | number;

function elementwise(left: Operand, right: Operand, apply: (x: number, y: number) => number): Chunk {
  const shape = typeof left === "number" ? (right as Chunk).shape : left.shape;
  const out = allocate(sizeOf(shape));
  if (typeof left === "number") {
    const y = (right as Chunk).data;
    for (let i = 0; i < out.length; i++) out[i] = apply(left, y[i]);
  } else if (typeof right === "number") {
    const x = left.data;
    for (let i = 0; i < out.length; i++) out[i] = apply(x[i], right);
  } else {
    const x = left.data;
    const y = right.data;
    for (let i = 0; i < out.length; i++) out[i] = apply(x[i], y[i]);
  }
  return { shape, data: out };
}

export function add(left: Operand, right: Operand): Chunk {
  return elementwise(left, right, (x, y) => x + y);
}

export function subtract(left: Operand, right: Operand): Chunk {
  return elementwise(left, right, (x, y) => x - y);
}

export function multiply(left: Operand, right: Operand): Chunk {
  return elementwise(left, right, (x, y) => x * y);
}

export function divide(left: Operand, right: Operand): Chunk {
  return elementwise(left, right, (x, y) => x / y);
}

/** The transpose of a 2-d block (a 1-d block is its own transpose). */
export function transpose(block: Chunk): Chunk {
  if (block.shape.length < 2) return block;
  const [rows, cols] = block.shape;
  const source = block.data;
  const out = allocate(rows * cols);
  // Tiles keep both the reads and the writes within a few cache lines.
  const tile = 32;
  for (let i0 = 0; i0 < rows; i0 += tile) {
    const iEnd = Math.min(i0 + tile, rows);
    for (let j0 = 0; j0 < cols; j0 += tile) {
      const jEnd = Math.min(j0 + tile, cols);
      for (let i = i0; i < iEnd; i++) {
        for (let j = j0; j < jEnd; j++) out[j * rows + i] = source[i * cols + j];
      }
    }
  }
  return { shape: [cols, rows], data: out };
}

/** Sums a block over `axis` (0 or 1), or over everything when `axis` is null (a 0-d block). */
export function sumBlock(block: Chunk, axis: number | null): Chunk {
  const source = block.data;
  if (axis === null || block.shape.length === 1) {
    let total = 0;
    for (let i = 0; i < source.length; i++) total += source[i];
    const data = allocate(1);
    data[0] = total;
    return { shape: [], data };
  }
  const [rows, cols] = block.shape;
  if (axis === 0) {
    const data = allocate(cols);
    for (let i = 0; i < rows; i++) {
      const row = i * cols;
      for (let j = 0; j < cols; j++) data[j] += source[row + j];
    }
    return { shape: [cols], data };
  }
  const data = allocate(rows);
  for (let i = 0; i < rows; i++) {
    let total = 0;
    const row = i * cols;
    for (let j = 0; j < cols; j++) total += source[row + j];
    data[i] = total;
  }
  return { shape: [rows], data };
}

/** The element-wise sum of same-shaped blocks, divided by `divisor` (1 for a sum, the count for a mean). */
export function sumBlocks(parts: readonly Chunk[], divisor: number): Chunk {
  const { shape } = parts[0];
  const data = allocate(parts[0].data.length);
  for (const part of parts) {
    const source = part.data;
    for (let i = 0; i < data.length; i++) data[i] += source[i];
  }
  if (divisor !== 1) for (let i = 0; i < data.length; i++) data[i] /= divisor;
  return { shape, data };
}
