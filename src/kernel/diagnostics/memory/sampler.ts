// MemorySampler (Dask's distributed.diagnostics.MemorySampler): memory over time while blocks of
// code run, one labelled series per block, to compare implementations or watch a computation —
// a cluster's memory from its heartbeats while a Client is open, else this process tree's.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { MemorySample } from "../../../protocol/records";
import { showLatest } from "../../dashboard/latest";
import type { ProfilePlot } from "../visualize";
import { type MemoryMeasure, type MemoryPoint, type MemorySeries, measureNamed } from "../../../protocol/memory";
import type { DisplayHandle } from "../../display";
import { memoryPlot, type MemoryPlotOptions } from "./plot";
import { clusterSource } from "../cluster-source";
import { type MemorySource, localMemory } from "./source";

export interface MemorySampleOptions {
  /** A Dask MemoryState measure; default "process". */
  readonly measure?: MemoryMeasure | string;
  /** Seconds between samples; default 0.5 (Dask's). */
  readonly interval?: number;
  /** Where to measure; default: the sampler's source. */
  readonly source?: MemorySource;
}

/** Blocks that want the series recorded inside them (performanceReport's Memory tab). */
const seriesSinks = new AsyncLocalStorage<readonly ((series: MemorySeries) => void)[]>();

/** Runs `block`; every MemorySampler series finished inside it is also handed to `sink`. */
export function collectMemorySeries<T>(sink: (series: MemorySeries) => void, block: () => T): T {
  return seriesSinks.run([...(seriesSinks.getStore() ?? []), sink], block);
}

const OPTION_NAMES = ["measure", "interval", "source"];

export class MemorySampler {
  /** Dask's `ms.samples`: label → [epoch seconds, bytes] samples. */
  readonly samples = new Map<string, MemoryPoint[]>();
  /** The measure of each label's series. */
  readonly measures = new Map<string, MemoryMeasure>();
  private readonly chosenSource: MemorySource | undefined;

  /** `source`: where to measure; default: the open Client's cluster (heartbeats), else this process tree. */
  constructor(options: { readonly source?: MemorySource } = {}) {
    this.chosenSource = options.source;
  }

  /** Where the next sample block measures: the source given, else the open Client's cluster, else this process tree. */
  get source(): MemorySource {
    return this.chosenSource ?? clusterSource()?.memory ?? localMemory;
  }

  /**
   * Dask's `with ms.sample(label, measure=…, interval=…):` — samples memory while `block` runs
   * (the first sample at once) and keeps the series under `label` (a fresh id when undefined).
   * Returns the block's result; the series is kept even when the block throws.
   */
  async sample<T>(label: string | undefined, block: () => T | Promise<T>, options: MemorySampleOptions = {}): Promise<Awaited<T>> {
    if (label !== undefined && typeof label !== "string") throw new TypeError(`MemorySampler.sample: the label must be a string or undefined, got ${typeof label}`);
    if (typeof block !== "function") throw new TypeError(`MemorySampler.sample: the block to sample must be a function, got ${typeof block}`);
    if (options === null || typeof options !== "object") throw new TypeError(`MemorySampler.sample options must be an object`);
    for (const name of Object.keys(options)) {
      if (!OPTION_NAMES.includes(name)) throw new TypeError(`Unknown MemorySampler.sample option "${name}"; known: ${OPTION_NAMES.join(", ")}`);
    }
    const measure = measureNamed(options.measure ?? "process");
    const interval = options.interval ?? 0.5;
    if (typeof interval !== "number" || !(interval > 0) || !Number.isFinite(interval)) {
      throw new TypeError(`MemorySampler.sample: interval must be a number of seconds > 0, got ${String(interval)}`);
    }
    const key = label ?? randomUUID();
    const recording = (options.source ?? this.source).record(measure, interval);
    try {
      return await recording.run(async () => (await block()) as Awaited<T>);
    } finally {
      const points = await recording.stop();
      this.samples.set(key, points);
      this.measures.set(key, measure);
      for (const sink of seriesSinks.getStore() ?? []) sink({ label: key, measure, points });
      showLatest("MemorySampler", this, () => ({ memorySamples: this.toRecords() }));
    }
  }

  /** Every sample as `{ label, time, bytes, measure }` (records.ts MemorySample), series after series. */
  toRecords(): MemorySample[] {
    return [...this.samples].flatMap(([label, points]) => {
      const measure = this.measures.get(label) ?? "process";
      return points.map(([time, bytes]) => ({ label, time, bytes, measure }));
    });
  }

  /** The series, for plots and reports. */
  series(): MemorySeries[] {
    return [...this.samples].map(([label, points]) => ({ label, measure: this.measures.get(label) ?? "process", points }));
  }

  /**
   * One line per label (Dask's `ms.plot(align=…)`): `align: true` starts each series at 0 s;
   * memory in binary units; each line ends where its series ends.
   */
  plot(options: MemoryPlotOptions = {}): DisplayHandle<ProfilePlot> {
    return memoryPlot(this.series(), options);
  }
}
