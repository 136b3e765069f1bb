// Folds a thread's tagged samples into Dask's profile trees, one window per profile cycle: the
// samples taken in a task go to that task's prefix (the compute profile, cut at the frame that
// called the task's function, as Dask cuts at worker.py), the others to the administrative
// profile. Idle samples are dropped. Each frame is a node per function, `name;filename;line`.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProfileWindow } from "../../protocol/profile";
import { ProfileBuilder } from "../../protocol/profile";
import type { ProfileNode } from "../../protocol/records";
import { type Key, keyPrefix } from "../graph/keys";
import { originalLocation, sourceLine } from "./source-lines";
import type { ThreadProfile } from "./thread";

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
  ["../graph/spec.js", "../scheduler/executor.js", "../scheduler/pool/worker-main.js"].map((path) => resolve(__dirname, path)),
);

/** This module's folder: a task's samples taken in the profiler's own marks around it are not the task's work. */
const PROFILER_FOLDER = __dirname;

interface Frame {
  readonly identifier: string;
  readonly description: ProfileNode["description"];
  /** The runtime's own frames around JavaScript: dropped from the outside of a stack. */
  readonly outer: boolean;
  readonly runner: boolean;
  /** The profiler's own code (marking a task's start and end). */
  readonly profiler: boolean;
}

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

export function foldThreadProfile(profile: ThreadProfile, options: FoldOptions): ProfileWindow[] {
  const { cycle, source, keyOf } = options;
  const runnerFiles = options.runnerFiles ?? TASK_RUNNER_FILES;
  const { frames, nodeFrame, nodeParent, nodeLine, samples, times, sampleTask, nearEdge } = profile;

  // Per node: its frame as a tree node (the description from the node's own hottest line).
  const nodeFrames: Frame[] = [];
  const frameOf = (node: number): Frame => {
    let frame = nodeFrames[node];
    if (frame === undefined) {
      const [functionName, url, line0] = frames[nodeFrame[node]];
      const compiled = fileOf(url, line0);
      const name = functionName === "" ? "(anonymous)" : functionName;
      let filename = compiled;
      let firstLine = line0 >= 0 ? line0 + 1 : 0;
      let lineNumber = nodeLine[node] > 0 ? nodeLine[node] : firstLine;
      // Compiled code (TypeScript's output) is shown at its source's lines, where a source map says.
      const definition = originalLocation(compiled, firstLine);
      const hottest = lineNumber === firstLine ? definition : originalLocation(compiled, lineNumber);
      if (definition !== undefined && hottest?.filename === definition.filename) {
        filename = definition.filename;
        firstLine = definition.line;
        lineNumber = hottest.line;
      }
      frame = nodeFrames[node] = {
        identifier: `${name};${filename};${firstLine}`,
        description: { filename, name, line_number: lineNumber, line: sourceLine(filename, lineNumber) },
        outer: url.startsWith("node:") || (url === "" && line0 < 0),
        runner: runnerFiles.has(compiled),
        profiler: dirname(compiled) === PROFILER_FOLDER,
      };
    }
    return frame;
  };
  // Per node: its stack, outermost first, without V8's "(root)".
  const stacks: (Frame[] | undefined)[] = [];
  const stackOf = (node: number): Frame[] => {
    let stack = stacks[node];
    if (stack === undefined) {
      stack = [];
      for (let n = node; n >= 0; n = nodeParent[n]) {
        const [functionName, url, line0] = frames[nodeFrame[n]];
        if (!(functionName === ROOT && url === "" && line0 < 0)) stack.push(frameOf(n));
      }
      stacks[node] = stack.reverse();
    }
    return stack;
  };

  const windows = new Map<number, { compute: Map<string, ProfileBuilder>; administrative: ProfileBuilder }>();
  const prefixOf = new Map<number, string | undefined>();
  for (let i = 0; i < samples.length; i++) {
    const node = samples[i];
    if (frames[nodeFrame[node]][0] === IDLE) continue;
    const time = Math.floor(times[i] / cycle) * cycle;
    let window = windows.get(time);
    if (window === undefined) windows.set(time, (window = { compute: new Map(), administrative: new ProfileBuilder() }));
    const stack = stackOf(node);
    const task = sampleTask[i];
    let prefix: string | undefined;
    // At a task's very edge, only a stack that reached the task's runner is the task's.
    if (task >= 0 && !(nearEdge[i] === 1 && !stack.some((frame) => frame.runner))) {
      if (!prefixOf.has(task)) {
        const key = keyOf(task);
        prefixOf.set(task, key === undefined ? undefined : keyPrefix(key));
      }
      prefix = prefixOf.get(task);
    }
    if (prefix === undefined) {
      window.administrative.add(stack);
      continue;
    }
    const own = taskFrames(stack);
    if (own[0]?.profiler === true) {
      window.administrative.add(stack);
      continue;
    }
    let builder = window.compute.get(prefix);
    if (builder === undefined) window.compute.set(prefix, (builder = new ProfileBuilder()));
    builder.add(own);
  }
  return [...windows].sort((a, b) => a[0] - b[0]).map(([time, window]) => ({
    time,
    stop: time + cycle,
    source,
    compute: Object.fromEntries([...window.compute].map(([prefix, builder]) => [prefix, builder.tree])),
    administrative: window.administrative.tree,
  }));
}

/** The frames of a task's own code: after the innermost runner frame, else after the runtime's outer frames. */
function taskFrames(stack: readonly Frame[]): readonly Frame[] {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i].runner) return stack.slice(i + 1);
  let first = 0;
  while (first < stack.length - 1 && stack[first].outer) first++;
  return stack.slice(first);
}
