// Checks a dashboard snapshot from a kernel before any panel reads it: the envelope must be right;
// a section of the wrong shape is dropped (and named in `errors`) so one bad section cannot break
// the other panels. The views still treat every string as untrusted text.
import { DASHBOARD_VERSION, type DashboardSectionName, type DashboardSnapshot } from "../../protocol/dashboard";

export class SnapshotError extends Error {}

type Fields = Readonly<Record<string, unknown>>;

const isFields = (value: unknown): value is Fields => typeof value === "object" && value !== null && !Array.isArray(value);

/** Each section's outer shape: a list, or an object with these list fields. */
const SECTION_SHAPES: Readonly<Record<DashboardSectionName, "list" | readonly string[]>> = {
  cluster: [],
  workers: "list",
  memory: [],
  progress: "list",
  metrics: ["metrics"],
  taskStream: ["records"],
  bandwidth: ["byType", "byWorkers"],
  profile: [],
  memorySamples: "list",
};

function sectionProblem(name: DashboardSectionName, value: unknown): string | undefined {
  const shape = SECTION_SHAPES[name];
  if (shape === "list") return Array.isArray(value) ? undefined : "not a list";
  if (!isFields(value)) return "not an object";
  const bad = shape.find((field) => !Array.isArray(value[field]));
  if (bad !== undefined) return `"${bad}" is not a list`;
  if (name === "profile" && !isFields(value.tree)) return '"tree" is not an object';
  if (name === "profile" && !(isFields(value.packed) && Array.isArray(value.packed.windows))) return '"packed" is not a packed profile';
  return undefined;
}

/** The snapshot in a message's data: an object, or its JSON text (tslab's public display API sends text). */
export function parseSnapshot(data: unknown): DashboardSnapshot {
  let value = data;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new SnapshotError("the dashboard snapshot is a string that is not JSON");
    }
  }
  if (!isFields(value)) throw new SnapshotError("the dashboard snapshot is not a JSON object");
  if (value.version !== DASHBOARD_VERSION) {
    throw new SnapshotError(
      `this kernel's dashboard feed uses version ${JSON.stringify(value.version)}; this extension understands version ${DASHBOARD_VERSION}. ` +
        "Install matching tsdask versions (npx tsdask install).",
    );
  }
  if (typeof value.source !== "string") throw new SnapshotError('"source" must be a string');
  if (typeof value.seq !== "number" || typeof value.time !== "number") throw new SnapshotError('"seq" and "time" must be numbers');
  const errors = Array.isArray(value.errors) ? value.errors.filter((error): error is string => typeof error === "string") : [];
  const snapshot: Record<string, unknown> = { version: DASHBOARD_VERSION, source: value.source, seq: value.seq, time: value.time };
  for (const name of Object.keys(SECTION_SHAPES) as DashboardSectionName[]) {
    if (value[name] === undefined) continue;
    const problem = sectionProblem(name, value[name]);
    if (problem === undefined) snapshot[name] = value[name];
    else errors.push(`the "${name}" section was dropped: ${problem}`);
  }
  if (errors.length > 0) snapshot.errors = errors;
  return snapshot as unknown as DashboardSnapshot;
}

/**
 * True when `next` should replace `current`: a newer snapshot of the same source, or any snapshot
 * of another source (a restarted kernel starts its sequence again).
 */
export function isNewer(next: DashboardSnapshot, current: DashboardSnapshot | undefined): boolean {
  return current === undefined || next.source !== current.source || next.seq > current.seq;
}
