// The task-stream plot (Dask's /status task stream, seed 003's colours) as a pure function of
// the columns: one row per worker thread, a rectangle per task phase — compute coloured by task
// prefix (visualize's rules: the busiest prefixes get colours, the rest share "other"), transfer
// red, disk orange, deserialize grey, failed tasks black. Hover shows key, phase, duration and
// bytes; the wheel zooms the time axis. Above DETAIL_LIMIT phases it shows per-row time bins
// (never a slab of sub-pixel marks). Built in the kernel (notebook, report) and in the browser
// (the dashboard's live panel), so both draw the same thing.

import { formatBytes, formatTime, naturalOrder } from "../format";
import { DETAIL_LIMIT, binIntervals, binnedEncoding, seconds } from "./bins";
import { rankGroups } from "./groups";
import { ACTIONS, type TaskStreamColumns } from "./taskstream-table";
import { VEGA_LITE_SCHEMA, type VegaLiteSpec, ZOOM_PARAM } from "./vega";

/**
 * tableau20 without its reds, oranges and greys, strong shades first: those hues mean transfer,
 * disk and deserialize here, so a prefix never looks like a phase.
 */
export const PREFIX_PALETTE = [
  "#4c78a8", "#54a24b", "#b79a20", "#439894", "#d67195", "#b279a2", "#9e765f",
  "#9ecae9", "#88d27a", "#f2cf5b", "#83bcb6", "#fcbfd2", "#d6a5c9", "#d8b5a5",
];
/** Seed 003's phase colours, and black for a failed task's compute. */
export const PHASE_COLORS: Readonly<Record<string, string>> = {
  transfer: "#d62728",
  "disk-read": "#ff7f0e",
  "disk-write": "#ff7f0e",
  deserialize: "#9a9a9a",
  error: "#000000",
};
const OTHER = "other";
const OTHER_COLOR = "#d9d9d9";
const ROW_PX = 26;

export interface TaskStreamSpecOptions {
  readonly width: number;
  /** Plot height in pixels; default: 26 px per row, 140–640. */
  readonly height?: number;
  readonly title: string;
  /** Colours for the prefixes (phase colours are fixed). */
  readonly palette: readonly string[];
  readonly config?: Readonly<Record<string, unknown>>;
  /**
   * For a live view fed window after window: leave out what changes with every window (the
   * subtitle's counts, the time domain, which then comes from the data) so the view streams the
   * new rows into the same plot, keeping its zoom and hover, instead of drawing a new one.
   */
  readonly stableShape?: boolean;
}

/** Rows: the (worker, thread) pairs that ran something, "main" first, then by worker and thread. */
export function streamRows(table: TaskStreamColumns): { labels: string[]; rowOfTask: Int32Array } {
  const pairs = new Map<string, { worker: string; thread: number }>();
  const pairOf: string[] = [];
  for (let task = 0; task < table.taskCount; task++) {
    const worker = table.workers.list[table.worker[task]];
    const thread = table.thread[task];
    const id = `${worker}\u0000${thread}`;
    pairOf.push(id);
    if (!pairs.has(id)) pairs.set(id, { worker, thread });
  }
  const threadsOf = new Map<string, number>();
  for (const { worker } of pairs.values()) threadsOf.set(worker, (threadsOf.get(worker) ?? 0) + 1);
  const sorted = [...pairs].sort(([, a], [, b]) => {
    if ((a.worker === "main") !== (b.worker === "main")) return a.worker === "main" ? -1 : 1;
    return naturalOrder(table.workerLabel(a.worker), table.workerLabel(b.worker)) || a.thread - b.thread;
  });
  // A worker with one thread is one row named after it; Dask's `worker-thread` otherwise.
  const label = ({ worker, thread }: { worker: string; thread: number }): string => {
    const name = table.workerLabel(worker);
    return (threadsOf.get(worker) ?? 0) > 1 && String(thread) !== worker ? `${name}-${thread}` : name;
  };
  const index = new Map(sorted.map(([id], i) => [id, i]));
  return { labels: sorted.map(([, pair]) => label(pair)), rowOfTask: Int32Array.from(pairOf, (id) => index.get(id)!) };
}

/** The colour group of each phase: its prefix (or "other") for compute, "error" for failed compute, else the phase. */
function colorGroups(table: TaskStreamColumns): { groupOfPhase: string[]; domain: string[] } {
  const busy = new Map<string, number>();
  for (let phase = 0; phase < table.phaseCount; phase++) {
    const task = table.phaseTask[phase];
    if (table.phaseAction[phase] !== 0 || !table.ok[task]) continue;
    const prefix = table.prefixes.list[table.prefix[task]];
    busy.set(prefix, (busy.get(prefix) ?? 0) + Math.max(0, table.phaseStop[phase] - table.phaseStart[phase]));
  }
  const weights = new Map([...busy].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
  const { named, colorGroup } = rankGroups(weights);
  const groupOfPhase: string[] = [];
  const used = new Set<string>();
  for (let phase = 0; phase < table.phaseCount; phase++) {
    const task = table.phaseTask[phase];
    const action = table.phaseAction[phase];
    const group = action !== 0 ? ACTIONS[action] : !table.ok[task] ? "error" : colorGroup(table.prefixes.list[table.prefix[task]]);
    groupOfPhase.push(group);
    used.add(group);
  }
  return { groupOfPhase, domain: [...named, ...(used.has(OTHER) ? [OTHER] : []), ...Object.keys(PHASE_COLORS).filter((g) => used.has(g))] };
}

/** The Vega-Lite spec of the stream; a pure function of the table. */
export function taskStreamSpec(table: TaskStreamColumns, options: TaskStreamSpecOptions): VegaLiteSpec {
  const rows = streamRows(table);
  const { groupOfPhase, domain } = colorGroups(table);
  const range = domain.map((group, i) => PHASE_COLORS[group] ?? (group === OTHER ? OTHER_COLOR : options.palette[i % options.palette.length]));
  let origin = Infinity;
  let end = -Infinity;
  for (let phase = 0; phase < table.phaseCount; phase++) {
    origin = Math.min(origin, table.phaseStart[phase]);
    end = Math.max(end, table.phaseStop[phase]);
  }
  if (!Number.isFinite(origin)) [origin, end] = [0, 1];
  const span = Math.max(end - origin, 1e-6);
  const detailed = table.phaseCount <= DETAIL_LIMIT;
  const values = detailed ? phaseMarks(table, rows.rowOfTask, rows.labels, groupOfPhase, origin) : binnedMarks(table, rows, groupOfPhase, domain, origin, span, options.width);
  const height = options.height ?? Math.min(640, Math.max(140, rows.labels.length * ROW_PX));
  const tasks = `${table.taskCount} task${table.taskCount === 1 ? "" : "s"} on ${rows.labels.length} thread${rows.labels.length === 1 ? "" : "s"}`;
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: options.stableShape === true ? options.title : { text: options.title, subtitle: detailed ? tasks : `${tasks}, shown in time bins (${table.phaseCount} phases)` },
    width: options.width,
    height,
    data: { values },
    params: [{ name: ZOOM_PARAM, select: { type: "interval", encodings: ["x"] }, bind: "scales" }],
    mark: detailed ? { type: "rect", stroke: "white", strokeWidth: 0.5, strokeOpacity: 0.7 } : { type: "rect" },
    encoding: {
      x: { field: "t", type: "quantitative", title: "Time (s)", scale: { ...(options.stableShape !== true && { domain: [0, span] }), zero: false, nice: false }, axis: { grid: false } },
      x2: { field: "t2" },
      y: { field: "row", type: "nominal", title: "Worker thread", scale: { domain: rows.labels.length > 0 ? rows.labels : ["main"], paddingInner: 0.2 }, axis: { ticks: false, domain: false } },
      color: { field: "color", type: "nominal", title: "Prefix / phase", scale: { domain, range }, legend: { symbolLimit: domain.length } },
      ...(detailed
        ? {
            tooltip: [
              { field: "key", type: "nominal", title: "Key" },
              { field: "phase", type: "nominal", title: "Phase" },
              { field: "prefix", type: "nominal", title: "Prefix" },
              { field: "duration", type: "nominal", title: "Duration" },
              { field: "t", type: "quantitative", title: "Start (s)", format: ".6~f" },
              { field: "bytes", type: "nominal", title: "Bytes" },
              { field: "from", type: "nominal", title: "From" },
              { field: "row", type: "nominal", title: "Worker thread" },
              { field: "status", type: "nominal", title: "Status" },
            ],
          }
        : binnedEncoding("row", "Worker thread", "Phases")),
    },
    config: { view: { stroke: null }, axis: { labelLimit: 200 }, legend: { labelLimit: 220 }, ...options.config },
  };
}

function phaseMarks(table: TaskStreamColumns, rowOfTask: Int32Array, labels: readonly string[], groups: readonly string[], origin: number): object[] {
  const marks: object[] = [];
  for (let phase = 0; phase < table.phaseCount; phase++) {
    const task = table.phaseTask[phase];
    const start = table.phaseStart[phase];
    const stop = table.phaseStop[phase];
    const source = table.sourceOf(phase);
    marks.push({
      t: seconds(start - origin),
      t2: seconds(stop - origin),
      row: labels[rowOfTask[task]],
      color: groups[phase],
      key: table.keyText(task),
      phase: ACTIONS[table.phaseAction[phase]],
      prefix: table.prefixes.list[table.prefix[task]],
      duration: formatTime(Math.max(0, stop - start)),
      bytes: formatBytes(table.nbytes[task]),
      status: table.ok[task] ? "OK" : "error",
      ...(source === undefined ? {} : { from: table.workerLabel(source) }),
    });
  }
  return marks;
}

function binnedMarks(
  table: TaskStreamColumns,
  rows: ReturnType<typeof streamRows>,
  groups: readonly string[],
  domain: readonly string[],
  origin: number,
  span: number,
  width: number,
): object[] {
  const colorIndex = new Map(domain.map((group, i) => [group, i]));
  const rowOfPhase = new Int32Array(table.phaseCount);
  const colors = new Int32Array(table.phaseCount);
  for (let phase = 0; phase < table.phaseCount; phase++) {
    rowOfPhase[phase] = rows.rowOfTask[table.phaseTask[phase]];
    colors[phase] = colorIndex.get(groups[phase])!;
  }
  const bins = binIntervals(
    { starts: table.phaseStart, ends: table.phaseStop, rows: rowOfPhase, colors, rowLabels: rows.labels, colorDomain: domain },
    origin,
    span,
    width,
  );
  return bins.map(({ worker, ...bin }) => ({ ...bin, row: worker }));
}

