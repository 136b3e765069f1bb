// Typed-array columns of the scheduler's tables (ClusterState's tasks, the task-stream ring),
// grown by copying into a longer array.

export type NumberColumn = Uint8Array | Int32Array | Float64Array;

/** A column of `length` rows (made by `make`) starting with `old`'s rows. */
export function grownColumn<T extends NumberColumn>(old: T, make: new (length: number) => T, length: number): T {
  const next = new make(length);
  next.set(old);
  return next;
}
