// Folds a thread's tagged samples into Dask's profile trees, one window per profile cycle: the
// samples taken in a task go to that task's prefix (the compute profile, cut at the frame that
// called the task's function, as Dask cuts at worker.py), the others to the administrative
// profile. Idle samples are dropped. Each frame is a node per function, `name;filename;line`.
//
// The fold names frames where they run (compiled JavaScript); `withSourceLocations` moves them
// to their sources (TypeScript lines, the line's text) when someone reads the windows. Reading
// source maps costs a worker ~35 ms of CPU when its first profile is folded: paid only by a
// reader, it stays out of every computation nobody profiles on purpose.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProfileWindow } from "../../protocol/profile";
import { ProfileBuilder } from "../../protocol/profile";
import type { ProfileNode } from "../../protocol/records";
import { type Key, keyPrefix } from "../graph/keys";
import { originalLocation, sourceLine } from "./source-lines";
import type { ThreadProfile } from "./thread";
import type { SampledFrame } from "./thread-sampler";

export interface FoldOptions {
  /** Seconds per window (Dask's profile-cycle-interval); windows start at multiples of it. */
  readonly cycle: number;
  /** The thread's name in the windows. */
  readonly source: string;
  /** The key of the thread's task number `task`; undefined: unknown (its samples count as administrative). */
  readonly keyOf: (task: number) => Key | undefined;
  /** Files whose frames run tasks: a task's stack starts after the innermost of them. Default: tsdask's task runners. */
  readonly runnerFiles?: ReadonlySet<string>;
}

/** The files that call task functions: the expression evaluator and the executors around it. */
export const TASK_RUNNER_FILES: ReadonlySet<string> = new Set(
  ["../graph/spec.js", "../scheduler/executor.js", "../execution/worker-main.js"].map((path) => resolve(__dirname, path)),
);

/**
 * The schedulers' own loop: a stack in it that did not reach a task runner is scheduling work,
 * whatever task's interval it fell in. An async task's interval lasts until the loop has seen its
 * promise settle and marked its end, and on a crowded machine a sample of the loop in between fell
 * in that task (a fresh-clone run's statprof test, once in five).
 */
const SCHEDULER_LOOP_FILES: ReadonlySet<string> = new Set(["../scheduler/loop.js"].map((path) => resolve(__dirname, path)));

/** This module's folder: a task's samples taken in the profiler's own marks around it are not the task's work. */
const PROFILER_FOLDER = __dirname;

interface Frame {
  readonly identifier: string;
  readonly description: ProfileNode["description"];
  /** The runtime's own frames around JavaScript: dropped from the outside of a stack. */
  readonly outer: boolean;
  readonly runner: boolean;
  /** The schedulers' loop (SCHEDULER_LOOP_FILES). */
  readonly loop: boolean;
  /** The profiler's own code (marking a task's start and end). */
  readonly profiler: boolean;
  /** Node's module loader (a `require` inside a task): left out of every stack, as Dask leaves its own machinery out. */
  readonly loader: boolean;
}

/** Where Node's module loader runs: ~66 nested frames per `require`, none of them the task's work. */
const MODULE_LOADER_URL = "node:internal/modules/";

const IDLE = "(idle)";
const ROOT = "(root)";

export function fileOf(url: string, line: number): string {
  if (url.startsWith("file://")) {
    try {
      return fileURLToPath(url);
    } catch {
      return url;
    }
  }
  if (url !== "") return url;
  return line < 0 ? "<runtime>" : "<anonymous>";
}

/**
 * Frames described so far, per set of runner files, by `name\nurl\nline0\nhottest line`: V8 numbers
 * a profile's nodes afresh at every hand-over, but a thread's functions stay the same, so each is
 * described once rather than once per cycle. Bounded: cleared when full.
 */
const describedFrames = new WeakMap<ReadonlySet<string>, Map<string, Frame>>();
const MAX_DESCRIBED_FRAMES = 20_000;

function describeFrame(sampled: SampledFrame, hotLine: number, runnerFiles: ReadonlySet<string>): Frame {
  let described = describedFrames.get(runnerFiles);
  if (described === undefined) describedFrames.set(runnerFiles, (described = new Map()));
  const [functionName, url, line0] = sampled;
  const cacheKey = `${functionName}\n${url}\n${line0}\n${hotLine}`;
  let frame = described.get(cacheKey);
  if (frame !== undefined) return frame;
  const wasm = wasmFunctionSource(url, functionName);
  const filename = wasm?.filename ?? fileOf(url, line0);
  const name = wasm?.name ?? (functionName === "" ? "(anonymous)" : functionName);
  // A WebAssembly frame's "line" is a byte offset in its module: no line of its source.
  const firstLine = line0 >= 0 && wasm === undefined ? line0 + 1 : 0;
  frame = {
    identifier: identifierOf(name, filename, firstLine),
    // Its line's text comes with the source location (withSourceLocations).
    description: { filename, name, line_number: hotLine > 0 && wasm === undefined ? hotLine : firstLine, line: "" },
    outer: url.startsWith("node:") || (url === "" && line0 < 0),
    runner: runnerFiles.has(filename),
    loop: SCHEDULER_LOOP_FILES.has(filename),
    profiler: dirname(filename) === PROFILER_FOLDER,
    loader: url.startsWith(MODULE_LOADER_URL),
  };
  if (described.size >= MAX_DESCRIBED_FRAMES) described.clear();
  described.set(cacheKey, frame);
  return frame;
}

const identifierOf = (name: string, filename: string, firstLine: number): string => `${name};${filename};${firstLine}`;

/**
 * Where a WebAssembly function comes from, when its name says: V8 files it under the module's hash
 * ("wasm://wasm/babbc0be"), but AssemblyScript names functions by source path ("asm/gemm/multiplyStrips",
 * as tsdask's array kernels are built), so the frame shows as multiplyStrips in asm/gemm.ts.
 */
function wasmFunctionSource(url: string, functionName: string): { filename: string; name: string } | undefined {
  if (!url.startsWith("wasm://")) return undefined;
  const slash = functionName.lastIndexOf("/");
  if (slash <= 0 || slash === functionName.length - 1) return undefined;
  return { filename: `${functionName.slice(0, slash)}.ts`, name: functionName.slice(slash + 1) };
}

/** Frames at their sources, by compiled identifier and line. Bounded: cleared when full. */
const sourceFrames = new Map<string, { identifier: string; description: ProfileNode["description"] }>();

/**
 * A frame named where it ran, at its source instead: compiled code (TypeScript's output) at its
 * source's lines where a source map says so, and the text of its line either way.
 */
function atSource(node: ProfileNode): { identifier: string; description: ProfileNode["description"] } {
  const { identifier, description } = node;
  const cacheKey = `${identifier}\n${description.line_number}`;
  let frame = sourceFrames.get(cacheKey);
  if (frame !== undefined) return frame;
  const { name } = description;
  // The identifier ends with the function's first line, after the name and file the description holds.
  let filename = description.filename;
  let firstLine = Number(identifier.slice(identifier.lastIndexOf(";") + 1));
  let lineNumber = description.line_number;
  const definition = originalLocation(filename, firstLine);
  const hottest = lineNumber === firstLine ? definition : originalLocation(filename, lineNumber);
  if (definition !== undefined && hottest?.filename === definition.filename) {
    filename = definition.filename;
    firstLine = definition.line;
    lineNumber = hottest.line;
  }
  frame = { identifier: identifierOf(name, filename, firstLine), description: { filename, name, line_number: lineNumber, line: sourceLine(filename, lineNumber) } };
  if (sourceFrames.size >= MAX_DESCRIBED_FRAMES) sourceFrames.clear();
  sourceFrames.set(cacheKey, frame);
  return frame;
}

/** `tree` with every frame at its source (frames that land on one source location are merged). */
function treeAtSource(tree: ProfileNode): ProfileNode {
  type Node = { identifier: string; count: number; description: ProfileNode["description"]; children: Record<string, Node> };
  const root: Node = { identifier: tree.identifier, count: tree.count, description: tree.description, children: {} };
  const walk: [from: ProfileNode, into: Node][] = [[tree, root]];
  while (walk.length > 0) {
    const [from, into] = walk.pop()!;
    for (const child of Object.values(from.children)) {
      const { identifier, description } = atSource(child);
      const target = (into.children[identifier] ??= { identifier, count: 0, description, children: {} });
      target.count += child.count;
      walk.push([child, target]);
    }
  }
  return root;
}

/** Windows as folded, with their frames at their sources: what a reader of profiles is given. */
export function withSourceLocations(windows: readonly ProfileWindow[]): ProfileWindow[] {
  return windows.map((window) => ({
    ...window,
    compute: Object.fromEntries(Object.entries(window.compute).map(([prefix, tree]) => [prefix, treeAtSource(tree)])),
    administrative: treeAtSource(window.administrative),
  }));
}

/** Sample counts per stack node, the unit a window's trees are built from (one tree walk per distinct stack, not per sample). */
type NodeCounts = Map<number, number>;

function countNode(counts: NodeCounts, node: number): void {
  counts.set(node, (counts.get(node) ?? 0) + 1);
}

export function foldThreadProfile(profile: ThreadProfile, options: FoldOptions): ProfileWindow[] {
  const { cycle, source, keyOf } = options;
  const runnerFiles = options.runnerFiles ?? TASK_RUNNER_FILES;
  const { frames, nodeFrame, nodeParent, nodeLine, samples, times, sampleTask, nearEdge } = profile;

  // Per node: its stack, outermost first, without V8's "(root)".
  const stacks: (Frame[] | undefined)[] = [];
  const stackOf = (node: number): Frame[] => {
    let stack = stacks[node];
    if (stack === undefined) {
      stack = [];
      for (let n = node; n >= 0; n = nodeParent[n]) {
        const sampled = frames[nodeFrame[n]];
        const [functionName, url, line0] = sampled;
        if (functionName === ROOT && url === "" && line0 < 0) continue;
        const frame = describeFrame(sampled, nodeLine[n], runnerFiles);
        if (!frame.loader) stack.push(frame);
      }
      stacks[node] = stack.reverse();
    }
    return stack;
  };
  // Per node: the frames of the task's own code, or undefined when they are the profiler's marks.
  const ownStacks = new Map<number, readonly Frame[] | undefined>();
  const ownStackOf = (node: number): readonly Frame[] | undefined => {
    if (ownStacks.has(node)) return ownStacks.get(node);
    const own = taskFrames(stackOf(node));
    const kept = own[0]?.profiler === true ? undefined : own;
    ownStacks.set(node, kept);
    return kept;
  };
  // Per node: whether its stack reached a task runner, or else is in the scheduler's loop.
  const reaches = new Map<number, { readonly runner: boolean; readonly loopOnly: boolean }>();
  const reachOf = (node: number): { readonly runner: boolean; readonly loopOnly: boolean } => {
    let reach = reaches.get(node);
    if (reach === undefined) {
      const stack = stackOf(node);
      const runner = stack.some((frame) => frame.runner);
      reaches.set(node, (reach = { runner, loopOnly: !runner && stack.some((frame) => frame.loop) }));
    }
    return reach;
  };

  // First count samples per window, prefix and node; then build each window's trees from the counts.
  const windows = new Map<number, { compute: Map<string, NodeCounts>; administrative: NodeCounts }>();
  const prefixOf = new Map<number, string | undefined>();
  for (let i = 0; i < samples.length; i++) {
    const node = samples[i];
    if (frames[nodeFrame[node]][0] === IDLE) continue;
    const time = Math.floor(times[i] / cycle) * cycle;
    let window = windows.get(time);
    if (window === undefined) windows.set(time, (window = { compute: new Map(), administrative: new Map() }));
    const task = sampleTask[i];
    let prefix: string | undefined;
    // A stack that reached the task's runner is the task's. One that did not is, except at the
    // task's very edge, and except the scheduler's loop, which never is.
    const reach = task >= 0 ? reachOf(node) : undefined;
    if (reach !== undefined && (reach.runner || (nearEdge[i] !== 1 && !reach.loopOnly))) {
      if (!prefixOf.has(task)) {
        const key = keyOf(task);
        prefixOf.set(task, key === undefined ? undefined : keyPrefix(key));
      }
      prefix = prefixOf.get(task);
    }
    if (prefix === undefined || ownStackOf(node) === undefined) {
      countNode(window.administrative, node);
      continue;
    }
    let counts = window.compute.get(prefix);
    if (counts === undefined) window.compute.set(prefix, (counts = new Map()));
    countNode(counts, node);
  }
  const build = (counts: NodeCounts, stack: (node: number) => readonly Frame[]): ProfileNode => {
    const builder = new ProfileBuilder();
    for (const [node, count] of counts) builder.add(stack(node), count);
    return builder.tree;
  };
  return [...windows].sort((a, b) => a[0] - b[0]).map(([time, window]) => ({
    time,
    stop: time + cycle,
    source,
    compute: Object.fromEntries([...window.compute].map(([prefix, counts]) => [prefix, build(counts, (node) => ownStackOf(node)!)])),
    administrative: build(window.administrative, stackOf),
  }));
}

/** The frames of a task's own code: after the innermost runner frame, else after the runtime's outer frames. */
function taskFrames(stack: readonly Frame[]): readonly Frame[] {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i].runner) return stack.slice(i + 1);
  let first = 0;
  while (first < stack.length - 1 && stack[first].outer) first++;
  return stack.slice(first);
}
