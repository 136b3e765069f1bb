// Checks an output's data against the protocol before anything is drawn: outputs come from
// kernels and from saved notebooks of unknown origin, so nothing is assumed about their shape.
import {
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
    case "profile":
      return profile(value, base);
    default:
      throw new PayloadError(`unknown output kind ${JSON.stringify(value.kind)}`);
  }
}
