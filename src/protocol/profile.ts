// Statistical profiles as data: Dask's profile trees (records.ts ProfileNode) cut into cycle
// windows per sampled thread, and the pure functions the kernel (StatisticalProfiler, reports,
// later the cluster's `client.profile`) and the browser views (time-window brushing, prefix
// selection, the icicle) share: merge, select, timeline, a compact wire form, and the layout.

import type { ProfileNode, ProfileTimelinePoint } from "./records";

/** The samples of one sampled thread in one cycle window (Dask's `(time, state)` history entries). */
export interface ProfileWindow {
  /** Start of the window, epoch seconds (a multiple of the cycle, so windows of all threads line up). */
  readonly time: number;
  /** End of the window. */
  readonly stop: number;
  /** The sampled thread: "main", a pool worker id, later a cluster worker's address. */
  readonly source: string;
  /** Task prefix → samples taken while a task of that prefix ran (the compute profile). */
  readonly compute: Readonly<Record<string, ProfileNode>>;
  /** Samples taken outside tasks, idle excluded: the administrative profile. */
  readonly administrative: ProfileNode;
}

/** What to select: a time range (epoch s, windows overlapping it), task prefixes, sampled threads. */
export interface ProfileQuery {
  readonly start?: number;
  readonly stop?: number;
  /** One prefix or several; absent: all. */
  readonly prefix?: string | readonly string[];
  readonly sources?: readonly string[];
}

export type ProfileKind = "compute" | "administrative";

// ---- Trees ------------------------------------------------------------------------------------

interface MutableNode {
  identifier: string;
  count: number;
  description: ProfileNode["description"];
  children: Record<string, MutableNode>;
}

const ROOT_DESCRIPTION: ProfileNode["description"] = { filename: "", name: "", line_number: 0, line: "" };

/** Dask's `profile.create()`: the empty tree. */
export function emptyProfile(): ProfileNode {
  return { identifier: "root", count: 0, description: ROOT_DESCRIPTION, children: {} };
}

/**
 * Dask's `profile.merge`: children united by identifier, counts summed, each description from the
 * first tree that has the node. Iterative, so a deep recursion in user code cannot overflow the stack.
 */
export function mergeProfiles(trees: Iterable<ProfileNode>): ProfileNode {
  const merged: MutableNode = { identifier: "root", count: 0, description: ROOT_DESCRIPTION, children: {} };
  for (const tree of trees) addProfile(merged, tree);
  return merged;
}

/** Adds `source`'s counts into `target` in place (target is a tree this module built). */
function addProfile(target: MutableNode, source: ProfileNode): void {
  const stack: [MutableNode, ProfileNode][] = [[target, source]];
  while (stack.length > 0) {
    const [into, from] = stack.pop()!;
    into.count += from.count;
    for (const [identifier, child] of Object.entries(from.children)) {
      let existing = into.children[identifier];
      if (existing === undefined) {
        existing = into.children[identifier] = { identifier, count: 0, description: child.description, children: {} };
      }
      stack.push([existing, child]);
    }
  }
}

/**
 * Deepest stack kept, innermost frames first (V8 samples at most 255 frames; Dask keeps 100):
 * trees stay shallow enough for recursive walks and JSON.
 */
export const MAX_STACK_DEPTH = 256;

/** A tree under construction from stacks: each stack counts once on every node along it (leaf included). */
export class ProfileBuilder {
  readonly root: MutableNode = { identifier: "root", count: 0, description: ROOT_DESCRIPTION, children: {} };

  /** Adds one sample whose stack is `frames`, outermost first. */
  add(frames: readonly { readonly identifier: string; readonly description: ProfileNode["description"] }[], count = 1): void {
    let node = this.root;
    node.count += count;
    for (const frame of frames.length > MAX_STACK_DEPTH ? frames.slice(-MAX_STACK_DEPTH) : frames) {
      let child = node.children[frame.identifier];
      if (child === undefined) child = node.children[frame.identifier] = { identifier: frame.identifier, count: 0, description: frame.description, children: {} };
      child.count += count;
      node = child;
    }
  }

  get tree(): ProfileNode {
    return this.root;
  }
}

// ---- Windows ----------------------------------------------------------------------------------

function prefixSet(prefix: ProfileQuery["prefix"]): ReadonlySet<string> | undefined {
  if (prefix === undefined) return undefined;
  return new Set(typeof prefix === "string" ? [prefix] : prefix);
}

/** The windows overlapping [start, stop) of the given sources (Dask bisects its history by time the same way). */
export function selectWindows(windows: readonly ProfileWindow[], query: ProfileQuery = {}): ProfileWindow[] {
  const { start = -Infinity, stop = Infinity, sources } = query;
  const wanted = sources === undefined ? undefined : new Set(sources);
  return windows.filter((w) => w.stop > start && w.time < stop && (wanted === undefined || wanted.has(w.source)));
}

/** The merged compute profile of the selected windows and prefixes (Dask's `client.profile(key=…, start, stop)`). */
export function computeProfile(windows: readonly ProfileWindow[], query: ProfileQuery = {}): ProfileNode {
  const prefixes = prefixSet(query.prefix);
  const trees: ProfileNode[] = [];
  for (const window of selectWindows(windows, query)) {
    for (const [prefix, tree] of Object.entries(window.compute)) if (prefixes === undefined || prefixes.has(prefix)) trees.push(tree);
  }
  return mergeProfiles(trees);
}

/** The merged administrative profile of the selected windows (Dask's `server=True`). */
export function administrativeProfile(windows: readonly ProfileWindow[], query: ProfileQuery = {}): ProfileNode {
  return mergeProfiles(selectWindows(windows, query).map((w) => w.administrative));
}

export function profileOf(windows: readonly ProfileWindow[], kind: ProfileKind, query: ProfileQuery = {}): ProfileNode {
  return kind === "compute" ? computeProfile(windows, query) : administrativeProfile(windows, query);
}

/** Task prefixes with their sample counts, busiest first. */
export function profilePrefixes(windows: readonly ProfileWindow[]): { prefix: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const window of windows) for (const [prefix, tree] of Object.entries(window.compute)) counts.set(prefix, (counts.get(prefix) ?? 0) + tree.count);
  return [...counts].map(([prefix, count]) => ({ prefix, count })).sort((a, b) => b.count - a.count || (a.prefix < b.prefix ? -1 : 1));
}

/**
 * Samples over time (Dask's `get_profile_metadata`): the windows of every source summed into bins
 * of `bin` seconds (default: the windows' own length), sorted by time, with every prefix in each point.
 */
export function profileTimeline(windows: readonly ProfileWindow[], options: { kind?: ProfileKind; bin?: number } = {}): ProfileTimelinePoint[] {
  const kind = options.kind ?? "compute";
  const bin = options.bin ?? Math.max(1e-9, shortestWindow(windows));
  const points = new Map<number, { count: number; byPrefix: Record<string, number> }>();
  for (const window of windows) {
    const time = Math.floor(window.time / bin + 1e-9) * bin;
    let point = points.get(time);
    if (point === undefined) points.set(time, (point = { count: 0, byPrefix: {} }));
    if (kind === "administrative") {
      point.count += window.administrative.count;
      continue;
    }
    for (const [prefix, tree] of Object.entries(window.compute)) {
      point.count += tree.count;
      point.byPrefix[prefix] = (point.byPrefix[prefix] ?? 0) + tree.count;
    }
  }
  return [...points].sort((a, b) => a[0] - b[0]).map(([time, point]) => ({ time, ...point }));
}

/** The windows' cycle: the shortest window (the last one of a run may be cut short). */
function shortestWindow(windows: readonly ProfileWindow[]): number {
  let shortest = Infinity;
  for (const window of windows) shortest = Math.min(shortest, window.stop - window.time);
  return Number.isFinite(shortest) ? shortest : 1;
}

/**
 * At most `maxWindows` windows, all sources together: neighbouring windows merge into equal time
 * bins. Bounds what a notebook output or a report carries, whatever the run's length.
 */
export function coarsenWindows(windows: readonly ProfileWindow[], maxWindows: number): ProfileWindow[] {
  if (windows.length === 0) return [];
  let first = Infinity;
  let last = -Infinity;
  for (const window of windows) {
    first = Math.min(first, window.time);
    last = Math.max(last, window.stop);
  }
  const cycle = shortestWindow(windows);
  const bins = Math.max(1, Math.ceil((last - first) / cycle - 1e-9));
  const width = bins <= maxWindows ? cycle : ((last - first) / maxWindows) * (1 + 1e-12);
  const groups = new Map<number, ProfileWindow[]>();
  for (const window of windows) {
    const index = Math.floor((window.time - first) / width + 1e-9);
    let group = groups.get(index);
    if (group === undefined) groups.set(index, (group = []));
    group.push(window);
  }
  return [...groups].sort((a, b) => a[0] - b[0]).map(([index, group]) => {
    const time = first + index * width;
    return mergeWindows(group, { time, stop: Math.min(last, time + width), source: "all" });
  });
}

/** `windows` as one window (trees of the same prefix merged) with the given time, stop and source. */
export function mergeWindows(windows: readonly ProfileWindow[], as: Pick<ProfileWindow, "time" | "stop" | "source">): ProfileWindow {
  if (windows.length === 1) return { ...windows[0], ...as };
  const compute: Record<string, ProfileNode[]> = {};
  for (const window of windows) for (const [prefix, tree] of Object.entries(window.compute)) (compute[prefix] ??= []).push(tree);
  const merged: Record<string, ProfileNode> = {};
  for (const [prefix, trees] of Object.entries(compute)) merged[prefix] = mergeProfiles(trees);
  return { ...as, compute: merged, administrative: mergeProfiles(windows.map((w) => w.administrative)) };
}

// ---- The compact form (notebook outputs, reports) -------------------------------------------

/** A tree node as [frame index, count, ...children]; the root's frame index is -1. */
export type PackedNode = readonly [number, number, ...PackedNode[]];

/** Windows with every frame's description stored once: outputs stay small whatever the tree count. */
export interface PackedProfile {
  /** Seconds between samples: a count × interval is time. */
  readonly interval: number;
  /** [identifier, name, filename, line_number, line] per frame. */
  readonly frames: readonly (readonly [string, string, string, number, string])[];
  readonly windows: readonly {
    readonly time: number;
    readonly stop: number;
    readonly source: string;
    readonly compute: Readonly<Record<string, PackedNode>>;
    readonly administrative: PackedNode;
  }[];
}

export function packProfile(windows: readonly ProfileWindow[], interval: number): PackedProfile {
  const frames: [string, string, string, number, string][] = [];
  const frameIndex = new Map<string, number>();
  const pack = (node: ProfileNode, isRoot: boolean): PackedNode => {
    let index = -1;
    if (!isRoot) {
      const found = frameIndex.get(node.identifier);
      if (found !== undefined) index = found;
      else {
        const { name, filename, line_number, line } = node.description;
        index = frames.push([node.identifier, name, filename, line_number, line]) - 1;
        frameIndex.set(node.identifier, index);
      }
    }
    return [index, node.count, ...Object.values(node.children).map((child) => pack(child, false))];
  };
  return {
    interval,
    frames,
    windows: windows.map((w) => ({
      time: w.time,
      stop: w.stop,
      source: w.source,
      compute: Object.fromEntries(Object.entries(w.compute).map(([prefix, tree]) => [prefix, pack(tree, true)])),
      administrative: pack(w.administrative, true),
    })),
  };
}

export function unpackProfile(packed: PackedProfile): ProfileWindow[] {
  const unpack = (node: PackedNode): ProfileNode => {
    const [index, count, ...children] = node;
    const frame = packed.frames[index];
    const childNodes: Record<string, ProfileNode> = {};
    for (const child of children) {
      const built = unpack(child);
      childNodes[built.identifier] = built;
    }
    if (frame === undefined) return { identifier: "root", count, description: ROOT_DESCRIPTION, children: childNodes };
    const [identifier, name, filename, line_number, line] = frame;
    return { identifier, count, description: { name, filename, line_number, line }, children: childNodes };
  };
  return packed.windows.map((w) => ({
    time: w.time,
    stop: w.stop,
    source: w.source,
    compute: Object.fromEntries(Object.entries(w.compute).map(([prefix, tree]) => [prefix, unpack(tree)])),
    administrative: unpack(w.administrative),
  }));
}

// ---- Drawing -----------------------------------------------------------------------------------

/** One rectangle of the icicle: x0/x1 are fractions of the shown root's width, depth 0 is the root. */
export interface IcicleCell {
  readonly node: ProfileNode;
  readonly depth: number;
  readonly x0: number;
  readonly x1: number;
  /** Identifiers from the shown root down to this node: what a click zooms to. */
  readonly path: readonly string[];
}

/**
 * The icicle of `tree` (Dask's `plot_data`, children ordered busiest first rather than first seen):
 * a child's width is its share of its parent, the rest of the parent is its own time. Cells thinner
 * than `minWidth` (a fraction of the root) are left out, so a huge tree still draws a bounded number of marks.
 */
export function icicleLayout(tree: ProfileNode, options: { minWidth?: number; maxDepth?: number } = {}): IcicleCell[] {
  const { minWidth = 0, maxDepth = 200 } = options;
  const cells: IcicleCell[] = [];
  if (tree.count <= 0) return cells;
  const stack: IcicleCell[] = [{ node: tree, depth: 0, x0: 0, x1: 1, path: [] }];
  while (stack.length > 0) {
    const cell = stack.pop()!;
    cells.push(cell);
    if (cell.depth >= maxDepth) continue;
    const children = Object.values(cell.node.children).sort((a, b) => b.count - a.count || (a.identifier < b.identifier ? -1 : 1));
    const scale = (cell.x1 - cell.x0) / cell.node.count;
    let x = cell.x0;
    const next: IcicleCell[] = [];
    for (const child of children) {
      const width = child.count * scale;
      if (width >= minWidth && child.count > 0) next.push({ node: child, depth: cell.depth + 1, x0: x, x1: x + width, path: [...cell.path, child.identifier] });
      x += width;
    }
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]);
  }
  return cells;
}

/** The node at `path` below `tree` (identifiers from its children down), or undefined. */
export function subtreeAt(tree: ProfileNode, path: readonly string[]): ProfileNode | undefined {
  let node: ProfileNode | undefined = tree;
  for (const identifier of path) {
    node = node.children[identifier];
    if (node === undefined) return undefined;
  }
  return node;
}

/** Colours of source files: the same file has the same colour in every view (Dask colours by filename too). */
const FILE_COLORS = ["#4c78a8", "#72b7b2", "#54a24b", "#b279a2", "#9d755d", "#eeca3b", "#ff9da6", "#79706e", "#bab0ac", "#83bcb6", "#8cd17d", "#d4a6c8"];
/** Frames outside any file: the runtime's own (native functions, garbage collection, Node internals). */
export const RUNTIME_COLOR = "#c8c8c8";

export function frameColor(filename: string): string {
  if (filename === "" || filename.startsWith("<") || filename.startsWith("node:")) return RUNTIME_COLOR;
  let hash = 0;
  for (let i = 0; i < filename.length; i++) hash = (Math.imul(hash, 31) + filename.charCodeAt(i)) | 0;
  return FILE_COLORS[Math.abs(hash) % FILE_COLORS.length];
}

/** Base name of a frame's file, for labels. */
export function shortFilename(filename: string): string {
  const slash = Math.max(filename.lastIndexOf("/"), filename.lastIndexOf("\\"));
  return slash < 0 ? filename : filename.slice(slash + 1);
}
