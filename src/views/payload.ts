// Checks an output's data against the protocol before anything is drawn: outputs come from
// kernels and from saved notebooks of unknown origin, so nothing is assumed about their shape.
import type { FpmData, FpmSelection, FpmSource } from "../protocol/fpm";
import type { MetricContext, MetricRecord, SpanRecord } from "../protocol/records";
import {
  type FpmPayload,
  type ClusterPayload,
  type ClusterWorkerInfo,
  type Payload,
  type PlotPayload,
  type ProfilePayload,
  type ProfileViewData,
  type ProgressGroup,
  type ProgressPayload,
  type ProgressState,
  PROTOCOL_VERSION,
} from "../protocol";

/** Raised for data this extension cannot draw; the message is shown in place of the output. */
export class PayloadError extends Error {}

const STATES: readonly ProgressState[] = ["running", "finished", "errored", "cancelled"];

type Fields = Readonly<Record<string, unknown>>;

function isFields(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function count(fields: Fields, name: string): number {
  const value = fields[name];
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new PayloadError(`"${name}" must be a non-negative number, got ${JSON.stringify(value)}`);
  }
  return value;
}

function text(fields: Fields, name: string): string {
  const value = fields[name];
  if (typeof value !== "string") throw new PayloadError(`"${name}" must be a string, got ${JSON.stringify(value)}`);
  return value;
}

function progressGroup(value: unknown, index: number): ProgressGroup {
  if (!isFields(value)) throw new PayloadError(`groups[${index}] must be an object`);
  return { name: text(value, "name"), done: count(value, "done"), total: count(value, "total") };
}

function progress(fields: Fields, base: { id: string; seq: number }): ProgressPayload {
  const state = fields.state;
  if (!STATES.includes(state as ProgressState)) {
    throw new PayloadError(`"state" must be one of ${STATES.join(", ")}, got ${JSON.stringify(state)}`);
  }
  const groups = fields.groups ?? [];
  if (!Array.isArray(groups)) throw new PayloadError(`"groups" must be an array`);
  return {
    version: PROTOCOL_VERSION,
    kind: "progress",
    ...base,
    done: count(fields, "done"),
    total: count(fields, "total"),
    elapsed: count(fields, "elapsed"),
    state: state as ProgressState,
    groups: groups.map(progressGroup),
  };
}

function plot(fields: Fields, base: { id: string; seq: number }): PlotPayload {
  if (!isFields(fields.spec)) throw new PayloadError(`"spec" must be a Vega-Lite specification object`);
  return { version: PROTOCOL_VERSION, kind: "plot", ...base, spec: fields.spec };
}

function strings(fields: Fields, name: string): string[] {
  const value = fields[name];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    throw new PayloadError(`"${name}" must be an array of strings`);
  }
  return value;
}

function finite(fields: Fields, name: string): number {
  const value = fields[name];
  if (typeof value !== "number" || !Number.isFinite(value)) throw new PayloadError(`"${name}" must be a number, got ${JSON.stringify(value)}`);
  return value;
}

function list<T>(fields: Fields, name: string, item: (value: Fields, where: string) => T): T[] {
  const value = fields[name];
  if (!Array.isArray(value)) throw new PayloadError(`"${name}" must be an array`);
  return value.map((entry, i) => {
    if (!isFields(entry)) throw new PayloadError(`${name}[${i}] must be an object`);
    return item(entry, `${name}[${i}]`);
  });
}

const CONTEXTS: readonly MetricContext[] = ["execute", "gather-dep", "get-data", "memory-monitor"];

function metric(fields: Fields, where: string): MetricRecord {
  if (!CONTEXTS.includes(fields.context as MetricContext)) throw new PayloadError(`${where}.context must be one of ${CONTEXTS.join(", ")}`);
  for (const name of ["span", "prefix"]) {
    if (fields[name] !== undefined && typeof fields[name] !== "string") throw new PayloadError(`${where}.${name} must be a string`);
  }
  return {
    context: fields.context as MetricContext,
    ...(fields.span === undefined ? {} : { span: fields.span as string }),
    ...(fields.prefix === undefined ? {} : { prefix: fields.prefix as string }),
    activity: text(fields, "activity"),
    unit: text(fields, "unit"),
    value: finite(fields, "value"),
  };
}

function spanRecord(fields: Fields, where: string): SpanRecord {
  const parent = fields.parent;
  if (parent !== null && typeof parent !== "string") throw new PayloadError(`${where}.parent must be a span id or null`);
  const states = fields.states;
  if (!isFields(states) || !Object.values(states).every((n) => typeof n === "number")) throw new PayloadError(`${where}.states must map states to counts`);
  const intervals = fields.intervals;
  if (
    intervals !== undefined &&
    !(Array.isArray(intervals) && intervals.every((i) => Array.isArray(i) && i.length === 3 && i.every((n) => typeof n === "number" && Number.isFinite(n))))
  ) {
    throw new PayloadError(`${where}.intervals must be [start, stop, threads] triples`);
  }
  return {
    id: text(fields, "id"),
    name: strings(fields, "name"),
    parent,
    children: strings(fields, "children"),
    enqueued: finite(fields, "enqueued"),
    start: finite(fields, "start"),
    stop: finite(fields, "stop"),
    done: fields.done === true,
    states: states as SpanRecord["states"],
    activeCpuSeconds: finite(fields, "activeCpuSeconds"),
    ...(intervals === undefined ? {} : { intervals: intervals as SpanRecord["intervals"] }),
    nbytesTotal: finite(fields, "nbytesTotal"),
    metrics: list(fields, "metrics", metric),
  };
}

function fpmData(value: unknown): FpmData {
  if (!isFields(value)) throw new PayloadError(`"data" must be an object`);
  let source: FpmSource | undefined;
  if (value.source !== undefined) {
    if (!isFields(value.source)) throw new PayloadError(`"source" must be an object`);
    source = { description: text(value.source, "description"), transfers: value.source.transfers === true };
  }
  return { metrics: list(value, "metrics", metric), spans: list(value, "spans", spanRecord), time: finite(value, "time"), ...(source === undefined ? {} : { source }) };
}

function fpmSelection(value: unknown): FpmSelection {
  if (!isFields(value)) throw new PayloadError(`"selection" must be an object`);
  return { spans: strings(value, "spans"), functions: strings(value, "functions"), unit: text(value, "unit") };
}

function fpm(fields: Fields, base: { id: string; seq: number }): FpmPayload {
  return { version: PROTOCOL_VERSION, kind: "fpm", ...base, data: fpmData(fields.data), selection: fpmSelection(fields.selection) };
}

function clusterWorker(value: unknown, index: number): ClusterWorkerInfo {
  if (!isFields(value)) throw new PayloadError(`workers[${index}] must be an object`);
  return {
    name: text(value, "name"),
    address: text(value, "address"),
    nthreads: count(value, "nthreads"),
    memoryLimit: count(value, "memoryLimit"),
    pid: count(value, "pid"),
  };
}

function cluster(fields: Fields, base: { id: string; seq: number }): ClusterPayload {
  const status = fields.status;
  if (status !== "running" && status !== "closed") throw new PayloadError(`"status" must be "running" or "closed", got ${JSON.stringify(status)}`);
  const link = fields.dashboardLink;
  if (link !== null && typeof link !== "string") throw new PayloadError(`"dashboardLink" must be a string or null`);
  if (!Array.isArray(fields.workers)) throw new PayloadError(`"workers" must be an array`);
  return {
    version: PROTOCOL_VERSION,
    kind: "cluster",
    ...base,
    title: text(fields, "title"),
    name: text(fields, "name"),
    status,
    transport: text(fields, "transport"),
    dashboardLink: link,
    workers: fields.workers.map(clusterWorker),
    threads: count(fields, "threads"),
    memory: count(fields, "memory"),
  };
}

function frame(value: unknown, index: number): readonly [string, string, string, number, string] {
  if (!Array.isArray(value) || value.length !== 5 || ![0, 1, 2, 4].every((i) => typeof value[i] === "string") || !Number.isFinite(value[3])) {
    throw new PayloadError(`profile frame ${index} must be [identifier, name, filename, line_number, line]`);
  }
  return value as unknown as readonly [string, string, string, number, string];
}

/** A packed tree: [frame index (−1 for the root), count, ...children], checked without recursion. */
function packedTree(value: unknown, frames: number, where: string): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!Array.isArray(node) || node.length < 2 || !Number.isInteger(node[0]) || node[0] < -1 || node[0] >= frames || !(Number.isFinite(node[1]) && node[1] >= 0)) {
      throw new PayloadError(`${where}: a profile tree node must be [frame index, count, ...children]`);
    }
    for (let i = 2; i < node.length; i++) stack.push(node[i]);
  }
}

function profileData(value: unknown): ProfileViewData {
  if (!isFields(value)) throw new PayloadError(`"data" must be an object`);
  const kind = value.kind;
  if (kind !== "compute" && kind !== "administrative") throw new PayloadError(`"kind" must be "compute" or "administrative", got ${JSON.stringify(kind)}`);
  const packed = value.profile;
  if (!isFields(packed)) throw new PayloadError(`"profile" must be an object`);
  if (!(typeof packed.interval === "number" && packed.interval > 0)) throw new PayloadError(`"interval" must be a positive number of seconds`);
  if (!Array.isArray(packed.frames) || !Array.isArray(packed.windows)) throw new PayloadError(`"frames" and "windows" must be arrays`);
  const frames = (packed.frames as unknown[]).map(frame).length;
  packed.windows.forEach((window: unknown, i: number) => {
    if (!isFields(window) || !Number.isFinite(window.time) || !Number.isFinite(window.stop) || typeof window.source !== "string" || !isFields(window.compute)) {
      throw new PayloadError(`profile window ${i} must have time, stop, source and compute`);
    }
    for (const tree of Object.values(window.compute)) packedTree(tree, frames, `window ${i}`);
    packedTree(window.administrative, frames, `window ${i}`);
  });
  for (const name of ["start", "stop"]) {
    if (value[name] !== undefined && !Number.isFinite(value[name])) throw new PayloadError(`"${name}" must be a number of epoch seconds`);
  }
  if (value.prefix !== undefined && typeof value.prefix !== "string") throw new PayloadError(`"prefix" must be a string`);
  return { ...(value as unknown as ProfileViewData), title: text(value, "title") };
}

function profile(fields: Fields, base: { id: string; seq: number }): ProfilePayload {
  return { version: PROTOCOL_VERSION, kind: "profile", ...base, data: profileData(fields.data) };
}

/** The payload in an output's data: an object, or its JSON text (what tslab's display.raw sends). */
export function parsePayload(data: unknown): Payload {
  let value = data;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new PayloadError("the output is a string that is not JSON");
    }
  }
  if (!isFields(value)) throw new PayloadError("the output is not a JSON object");
  if (value.version !== PROTOCOL_VERSION) {
    throw new PayloadError(
      `this output uses protocol version ${JSON.stringify(value.version)}; ` +
        `this extension understands version ${PROTOCOL_VERSION}. Install matching tsdask versions (npx tsdask install).`,
    );
  }
  const base = { id: text(value, "id"), seq: count(value, "seq") };
  switch (value.kind) {
    case "progress":
      return progress(value, base);
    case "plot":
      return plot(value, base);
    case "fpm":
      return fpm(value, base);
    case "cluster":
      return cluster(value, base);
    case "profile":
      return profile(value, base);
    default:
      throw new PayloadError(`unknown output kind ${JSON.stringify(value.kind)}`);
  }
}
