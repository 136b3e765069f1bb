// Deterministic tokens for values, like dask.base.tokenize: equal inputs give equal tokens,
// so rebuilding the same delayed expression yields the same keys.

import { createHash, type Hash } from "node:crypto";
import { keyOfCollection } from "../graph/spec";

/** A 32-hex-digit token of the given values. Functions count by name and source text. */
export function tokenize(...values: unknown[]): string {
  const hash = createHash("md5");
  const seen = new Set<object>();
  for (const value of values) feed(hash, value, seen);
  return hash.digest("hex");
}

function feed(hash: Hash, value: unknown, seen: Set<object>): void {
  switch (typeof value) {
    case "string":
      hash.update(`s${value.length}:`).update(value);
      return;
    case "number":
    case "boolean":
    case "bigint":
    case "undefined":
      hash.update(`${(typeof value)[0]}${String(value)};`);
      return;
    case "symbol":
      hash.update(`y${value.description ?? ""};`);
      return;
    case "function":
      hash.update(`f${value.name}:`).update(Function.prototype.toString.call(value));
      return;
  }
  if (value === null) {
    hash.update("null;");
    return;
  }
  const object = value as object;
  if (keyOfCollection in object) {
    hash.update("k").update(JSON.stringify((object as { [keyOfCollection]: unknown })[keyOfCollection]));
    return;
  }
  if (seen.has(object)) {
    hash.update("cycle;");
    return;
  }
  seen.add(object);
  if (ArrayBuffer.isView(object)) {
    hash.update(`v${object.constructor.name}:`).update(new Uint8Array(object.buffer, object.byteOffset, object.byteLength));
  } else if (object instanceof ArrayBuffer || object instanceof SharedArrayBuffer) {
    hash.update("b:").update(new Uint8Array(object));
  } else if (Array.isArray(object)) {
    hash.update(`a${object.length}[`);
    for (const item of object) feed(hash, item, seen);
    hash.update("]");
  } else if (object instanceof Map) {
    hash.update(`m${object.size}{`);
    for (const [k, v] of object) {
      feed(hash, k, seen);
      feed(hash, v, seen);
    }
    hash.update("}");
  } else if (object instanceof Set) {
    hash.update(`e${object.size}{`);
    for (const item of object) feed(hash, item, seen);
    hash.update("}");
  } else if (object instanceof Date) {
    hash.update(`d${object.getTime()};`);
  } else {
    hash.update(`o${object.constructor?.name ?? ""}{`);
    for (const name of Object.keys(object).sort()) {
      feed(hash, name, seen);
      feed(hash, (object as Record<string, unknown>)[name], seen);
    }
    hash.update("}");
  }
  seen.delete(object);
}
