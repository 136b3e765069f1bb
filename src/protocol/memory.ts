// Dask's MemoryState measures (records.ts ClusterMemory), by their TypeScript names, with Dask's
// snake_case spellings accepted so a seed line works as written; and MemorySampler's series.

import type { ClusterMemory } from "./records";

export type MemoryMeasure = keyof ClusterMemory;

export const MEASURES: readonly MemoryMeasure[] = [
  "process",
  "managed",
  "unmanaged",
  "unmanagedOld",
  "unmanagedRecent",
  "spilled",
  "managedTotal",
  "optimistic",
];

/** What each measure is, for plot titles. */
export const MEASURE_TITLES: Readonly<Record<MemoryMeasure, string>> = {
  process: "Process memory",
  managed: "Managed memory",
  unmanaged: "Unmanaged memory",
  unmanagedOld: "Unmanaged memory (old)",
  unmanagedRecent: "Unmanaged memory (recent)",
  spilled: "Spilled to disk",
  managedTotal: "Managed memory (RAM + disk)",
  optimistic: "Optimistic memory",
};

/** The measure a name stands for: `"managed_total"` and `"managedTotal"` alike. */
export function isMemoryMeasure(name: unknown): name is MemoryMeasure {
  return (MEASURES as readonly unknown[]).includes(name);
}

export function measureNamed(name: unknown): MemoryMeasure {
  if (typeof name === "string") {
    const camel = name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
    if (isMemoryMeasure(camel)) return camel;
  }
  throw new TypeError(`MemorySampler: unknown measure ${JSON.stringify(name)}; the measures are ${MEASURES.join(", ")} (Dask's snake_case names work too)`);
}

/** [epoch seconds, bytes] */
export type MemoryPoint = readonly [time: number, bytes: number];

/** One labelled series of samples. */
export interface MemorySeries {
  readonly label: string;
  readonly measure: MemoryMeasure;
  readonly points: readonly MemoryPoint[];
}
