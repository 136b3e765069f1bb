// Checks an output's data against the protocol before anything is drawn: outputs come from
// kernels and from saved notebooks of unknown origin, so nothing is assumed about their shape.
import {
  type ClusterPayload,
  type ClusterWorkerInfo,
  type Payload,
  type PlotPayload,
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
    case "cluster":
      return cluster(value, base);
    default:
      throw new PayloadError(`unknown output kind ${JSON.stringify(value.kind)}`);
  }
}
