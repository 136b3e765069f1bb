// One block of a chunked array as it travels between tasks: plain data, so worker threads
// receive it by structured clone, and the numbers sit in a SharedArrayBuffer (never copied).

/** A dense row-major block: `data.length` is the product of `shape` (1 for a 0-d block). */
export interface Chunk {
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

/** A zero-filled Float64Array over shared memory, so passing it to a worker thread copies nothing. */
export function allocate(length: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(length * Float64Array.BYTES_PER_ELEMENT));
}

export function sizeOf(shape: readonly number[]): number {
  let size = 1;
  for (const extent of shape) size *= extent;
  return size;
}
