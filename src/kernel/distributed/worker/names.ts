// How a worker names keys and values in what it reports.

import { formatKey, keyFromId } from "../../graph/keys";

/** Dask's repr of the key a keyId stands for: `'x'`, `('x', 0, 1)`. */
export function keyRepr(id: string): string {
  return formatKey(keyFromId(id));
}

/** A value's type name for records: its class (`Float64Array`, `Object`, `Map`) or primitive type (`number`). */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === "string" && name !== "" ? name : "Object";
}
