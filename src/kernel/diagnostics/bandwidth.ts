// Bandwidth from transfer logs (records.ts TransferLogEntry, Dask's `transfer_incoming_log` /
// `transfer_outgoing_log`): summarised by data type and by worker pair — Dask's "Bandwidth Types"
// and "Bandwidth Workers" — and drawn as bars and a source × destination heatmap. The local
// schedulers move no data between workers; the cluster's workers supply these logs.

import { byteUnit, formatBytes, naturalOrder } from "../../protocol/format";
import type { BandwidthSummary, TransferLogEntry } from "../../protocol/records";
import type { DisplayHandle } from "../display";
import { present } from "../display/figure";
import { type ResolvedOptions, type VisualizeOptions, resolveOptions } from "./visualize/options";
import type { VegaLiteSpec } from "./visualize/plot";
import { VEGA_LITE_SCHEMA } from "../../protocol/plot/vega";
import { ProfilePlot } from "./visualize/visualize";

/** Each worker's transfer log, by worker address (what `client.run((w) => w.incomingTransferLog)` returns). */
export type TransferLogs = Readonly<Record<string, readonly TransferLogEntry[]>>;

/** One estimate with what it rests on: bytes moved and transfers counted. */
interface Measured {
  readonly bandwidth: number;
  readonly bytes: number;
  readonly transfers: number;
}

/** BandwidthSummary with the bytes and transfer counts behind each figure. */
export interface BandwidthDetail extends BandwidthSummary {
  readonly bytes: number;
  readonly transfers: number;
  readonly byType: readonly ({ readonly type: string } & Measured)[];
  readonly byWorkers: readonly ({ readonly source: string; readonly destination: string } & Measured)[];
}

/** Batches of values of more than one type count here in "by type" (Dask counts only single-type batches). */
export const MIXED_TYPES = "(several types)";
export const UNKNOWN_TYPE = "(unknown)";

export interface BandwidthOptions {
  /**
   * Which side's logs these are: "incoming" (default; `who` sent to the log's worker) or
   * "outgoing" (`who` asked the log's worker). Give one side: each transfer is in both.
   */
  readonly direction?: "incoming" | "outgoing";
}

/**
 * Bandwidth as bytes moved over time spent moving them, per type and per (source, destination)
 * pair: a time-weighted mean, so a few tiny transfers cannot swamp the estimate (Dask averages
 * per-batch bandwidths, and its scheduler sums them where it means to average).
 */
export function bandwidthSummary(logs: TransferLogs, options: BandwidthOptions = {}): BandwidthDetail {
  const direction = options.direction ?? "incoming";
  if (direction !== "incoming" && direction !== "outgoing") throw new TypeError(`Option direction must be "incoming" or "outgoing", got ${JSON.stringify(direction)}`);
  const totals = { bytes: 0, seconds: 0, transfers: 0 };
  const types = new Map<string, { bytes: number; seconds: number; transfers: number }>();
  const pairs = new Map<string, { source: string; destination: string; bytes: number; seconds: number; transfers: number }>();
  const add = <T extends { bytes: number; seconds: number; transfers: number }>(into: T, entry: TransferLogEntry): void => {
    into.bytes += entry.total;
    into.seconds += Math.max(entry.duration, 0.001);
    into.transfers += 1;
  };
  for (const [worker, log] of Object.entries(logs)) {
    if (!Array.isArray(log)) throw new TypeError(`The transfer log of worker ${worker} must be an array of log entries`);
    for (const entry of log) {
      add(totals, entry);
      const type = entry.types === undefined || entry.types.length === 0 ? UNKNOWN_TYPE : new Set(entry.types).size === 1 ? entry.types[0] : MIXED_TYPES;
      let byType = types.get(type);
      if (byType === undefined) types.set(type, (byType = { bytes: 0, seconds: 0, transfers: 0 }));
      add(byType, entry);
      const [source, destination] = direction === "incoming" ? [entry.who, worker] : [worker, entry.who];
      const id = `${source}\u0000${destination}`;
      let pair = pairs.get(id);
      if (pair === undefined) pairs.set(id, (pair = { source, destination, bytes: 0, seconds: 0, transfers: 0 }));
      add(pair, entry);
    }
  }
  const rate = (m: { bytes: number; seconds: number }): number => (m.seconds > 0 ? m.bytes / m.seconds : 0);
  return {
    total: rate(totals),
    bytes: totals.bytes,
    transfers: totals.transfers,
    byType: [...types]
      .map(([type, m]) => ({ type, bandwidth: rate(m), bytes: m.bytes, transfers: m.transfers }))
      .sort((a, b) => b.bandwidth - a.bandwidth || (a.type < b.type ? -1 : 1)),
    byWorkers: [...pairs.values()]
      .map(({ source, destination, ...m }) => ({ source, destination, bandwidth: rate(m), bytes: m.bytes, transfers: m.transfers }))
      .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.destination < b.destination ? -1 : a.destination > b.destination ? 1 : 0)),
  };
}

/** The logs with workers (log owners and peers) shown by name: cluster workers are known by long addresses. */
export function nameTransferLogs(logs: TransferLogs, workers: readonly { readonly address: string; readonly name: string }[]): TransferLogs {
  const names = new Map(workers.map((w) => [w.address, w.name]));
  const name = (address: string): string => names.get(address) ?? address;
  return Object.fromEntries(Object.entries(logs).map(([worker, log]) => [name(worker), log.map((entry) => ({ ...entry, who: name(entry.who) }))]));
}

const rateText = (bytesPerSecond: number): string => `${formatBytes(bytesPerSecond)}/s`;

/** Dask's "Bandwidth Types": a bar per data type. */
export function bandwidthTypesSpec(summary: BandwidthDetail, options: { width: number; title?: string }): VegaLiteSpec {
  const { unit, size } = byteUnit(Math.max(0, ...summary.byType.map((t) => t.bandwidth)));
  const values = summary.byType.map((t) => ({ type: t.type, value: t.bandwidth / size, rate: rateText(t.bandwidth), bytes: formatBytes(t.bytes), transfers: t.transfers }));
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: { text: options.title ?? "Bandwidth by type", subtitle: `all transfers: ${rateText(summary.total)} (${formatBytes(summary.bytes)} in ${summary.transfers})` },
    width: options.width,
    height: { step: 22 },
    data: { values },
    mark: { type: "bar", color: "#4c78a8" },
    encoding: {
      y: { field: "type", type: "nominal", sort: null, title: "Type" },
      x: { field: "value", type: "quantitative", title: `Bandwidth (${unit}/s)` },
      tooltip: [
        { field: "type", title: "Type" },
        { field: "rate", title: "Bandwidth" },
        { field: "bytes", title: "Moved" },
        { field: "transfers", title: "Transfers" },
      ],
    },
  };
}

/** Dask's "Bandwidth Workers": a source × destination heatmap. */
export function bandwidthWorkersSpec(summary: BandwidthDetail, options: { width: number; title?: string }): VegaLiteSpec {
  const { unit, size } = byteUnit(Math.max(0, ...summary.byWorkers.map((p) => p.bandwidth)));
  const workers = [...new Set(summary.byWorkers.flatMap((p) => [p.source, p.destination]))].sort(naturalOrder);
  const values = summary.byWorkers.map((p) => ({
    source: p.source,
    destination: p.destination,
    value: p.bandwidth / size,
    rate: rateText(p.bandwidth),
    bytes: formatBytes(p.bytes),
    transfers: p.transfers,
  }));
  const cell = Math.max(18, Math.min(60, Math.floor(options.width / Math.max(1, workers.length))));
  const axis = { type: "nominal", scale: { domain: workers }, axis: { labelLimit: 180 } };
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: { text: options.title ?? "Bandwidth by worker pair", subtitle: "source (row) → destination (column)" },
    width: cell * workers.length,
    height: cell * workers.length,
    data: { values },
    layer: [
      {
        mark: { type: "rect", stroke: "white" },
        encoding: {
          x: { field: "destination", title: "Destination", ...axis },
          y: { field: "source", title: "Source", ...axis },
          color: { field: "value", type: "quantitative", title: `${unit}/s`, scale: { scheme: "blues", zero: true } },
          tooltip: [
            { field: "source", title: "Source" },
            { field: "destination", title: "Destination" },
            { field: "rate", title: "Bandwidth" },
            { field: "bytes", title: "Moved" },
            { field: "transfers", title: "Transfers" },
          ],
        },
      },
    ],
  };
}

/** Both views, types above workers, shown or saved as visualize() does (default file bandwidth.html). */
export function bandwidthPlot(summary: BandwidthDetail, options?: VisualizeOptions): DisplayHandle<ProfilePlot> {
  const opts = bandwidthPlotOptions(options);
  return present(bandwidthFigure(summary, opts), opts, "Bandwidth plot");
}

/** bandwidthPlot's options, checked, with its defaults. */
export function bandwidthPlotOptions(options?: VisualizeOptions): ResolvedOptions {
  return resolveOptions({ title: "Bandwidth", filename: "bandwidth.html", ...options });
}

/** bandwidthPlot's figure, not shown yet. */
export function bandwidthFigure(summary: BandwidthDetail, opts: ResolvedOptions): ProfilePlot {
  const spec: VegaLiteSpec = {
    $schema: VEGA_LITE_SCHEMA,
    title: opts.title,
    vconcat: [bandwidthTypesSpec(summary, { width: opts.width }), bandwidthWorkersSpec(summary, { width: opts.width })].map(({ $schema: _schema, ...view }) => view),
    resolve: { scale: { color: "independent" } },
    config: { view: { stroke: null }, ...opts.config },
  };
  return new ProfilePlot(spec, `tsdask bandwidth: ${rateText(summary.total)} over ${summary.transfers} transfers`);
}
