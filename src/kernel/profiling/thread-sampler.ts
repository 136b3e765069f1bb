// Samples the JavaScript stack of the thread that creates it, with V8's CPU profiler through
// node:inspector (works in the main thread, in worker threads and in child processes alike).
//
// V8 only hands samples over when a profile ends, and starting a profile from cold costs 7–15 ms
// (V8 logs every compiled function first). Two overlapping profiles avoid that: `collect()` starts
// the next profile before it ends the current one, so V8's sampler never stops and each hand-over
// costs ~0.3 ms. No sample is lost and none is counted twice: the ended profile is cut where the
// next one begins. Samples carry their own timestamps, so where a long task delays a hand-over,
// its samples still land in the right cycle window (and the task itself is never interrupted).
// Once a thread has been profiled its sampler never stops, only sleeps (see ThreadSampler).

import * as inspector from "node:inspector";
import { nowMs } from "../clock";

/** [function name, script URL, 0-based line of the function's start (−1 for the runtime's own)] */
export type SampledFrame = readonly [name: string, url: string, line: number];

/** What a thread sampled between two hand-overs, in a form that clones cheaply between threads. */
export interface SampleBatch {
  readonly frames: readonly SampledFrame[];
  /** Per stack node: its frame's index. */
  readonly nodeFrame: Int32Array;
  /** Per stack node: its caller's node index, −1 for the outermost frames. */
  readonly nodeParent: Int32Array;
  /** Per stack node: the 1-based line most of its own samples were on, 0 if it had none. */
  readonly nodeLine: Int32Array;
  /** Per sample: the innermost stack node. */
  readonly samples: Int32Array;
  /** Per sample: epoch seconds, the clock task timings use. */
  readonly times: Float64Array;
}

/** The V8 `.cpuprofile` parts read here. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
    readonly positionTicks?: readonly { readonly line: number; readonly ticks: number }[];
  }[];
  readonly startTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

/** The profile title prefix: our profiles never clash with a user's console.profile() calls. */
const TITLE = "tsdask-sampler-";
/** While nobody profiles, a thread's dormant samples are dropped this often (they only keep V8 profiling). */
const DORMANT_ROTATION_MS = 30_000;

/** This thread's sampler, once a profile has been taken here. */
let threadSampler: ThreadSampler | undefined;
/** Whether this thread's optimised code was discarded once, or never had to be (see wakeSampler). */
let discarded = false;

/**
 * This thread's sampler, sampling every `intervalSeconds` from now on. The first call discards
 * the thread's optimised code once (see discardOptimizedCode) unless the thread is `fresh`: it has
 * run nothing yet whose samples matter (a worker's thread before its first task), so nothing
 * optimised needs placing and the deoptimisation would only cost the warm-up again. Later calls
 * wake the dormant sampler.
 */
export function wakeSampler(intervalSeconds: number, fresh = false): ThreadSampler {
  if (threadSampler !== undefined && threadSampler.interval !== intervalSeconds) {
    threadSampler.close();
    threadSampler = undefined;
  }
  if (fresh) discarded = true;
  threadSampler ??= new ThreadSampler(intervalSeconds);
  threadSampler.wake();
  return threadSampler;
}

/**
 * V8's CPU profiler in this thread. Between profiles it stays dormant rather than stopping: code
 * V8 optimises while no profiler runs cannot be placed by a later profile (see
 * discardOptimizedCode), and discarding it again at every profile costs ~50–100 ms of CPU per
 * thread on the QR example (measured) — more than the sampling itself. Dormant sampling costs what
 * sampling costs (a stack walk per interval); its samples are dropped every 30 s.
 */
export class ThreadSampler {
  private readonly session = new inspector.Session();
  private generation = 0;
  private finished: CpuProfile | undefined;
  /** Epoch ms minus V8's profile clock (µs on the monotonic clock, as process.hrtime). */
  private readonly clockOffsetMs: number;
  private dormant: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  constructor(readonly interval: number) {
    this.session.connect();
    // Same-thread sessions answer synchronously, notifications included.
    this.session.on("Profiler.consoleProfileFinished", (message) => {
      this.finished = (message.params as { profile: CpuProfile }).profile;
    });
    this.session.post("Profiler.enable");
    if (!discarded) {
      discardOptimizedCode(this.session);
      discarded = true;
    }
    this.session.post("Profiler.setSamplingInterval", { interval: Math.max(1, Math.round(interval * 1e6)) });
    this.clockOffsetMs = nowMs() - Number(process.hrtime.bigint()) / 1e6;
    inspector.console.profile(this.title(this.generation));
  }

  /** Everything sampled since the last hand-over; sampling goes on. */
  collect(): SampleBatch {
    if (this.closed) throw new Error("tsdask: this thread's sampler was closed");
    const cut = Number(process.hrtime.bigint()) / 1e3;
    inspector.console.profile(this.title(this.generation + 1));
    return this.end(this.generation++, cut);
  }

  /** The last samples of a profile; the sampler goes dormant until the next wake(). */
  sleep(): SampleBatch {
    const batch = this.collect();
    this.dormant = setInterval(() => void this.collect(), DORMANT_ROTATION_MS);
    this.dormant.unref();
    return batch;
  }

  /** Drops what was sampled while dormant. */
  wake(): void {
    if (this.dormant === undefined) return;
    clearInterval(this.dormant);
    this.dormant = undefined;
    this.collect();
  }

  /** Stops V8's profiler in this thread for good (a profile with another interval follows). */
  close(): void {
    clearInterval(this.dormant);
    this.closed = true;
    this.finished = undefined;
    inspector.console.profileEnd(this.title(this.generation));
    this.session.post("Profiler.disable");
    this.session.disconnect();
  }

  private title(generation: number): string {
    return `${TITLE}${generation}`;
  }

  /** Ends profile `generation` and converts its samples taken before `cutMicros`. */
  private end(generation: number, cutMicros: number): SampleBatch {
    this.finished = undefined;
    inspector.console.profileEnd(this.title(generation));
    const profile = this.finished as CpuProfile | undefined;
    this.finished = undefined;
    if (profile === undefined) throw new Error("tsdask: V8's profiler returned no profile (is another inspector session profiling this thread?)");
    return toBatch(profile, cutMicros, this.clockOffsetMs);
  }
}

/**
 * V8 cannot place samples in code it optimised while no profiler ran (measured: an
 * on-stack-replaced `spin` reported as its caller `evaluate`, and so are functions optimised
 * between two profiles). Switching precise coverage on and off deoptimises everything once
 * (~3 ms, then the code warms up again); from then on the thread's profiler never stops (see
 * ThreadSampler), so every later sample lands in the right function. Skipped when Node collects
 * coverage itself (NODE_V8_COVERAGE, c8): turning coverage off would end that collection.
 */
function discardOptimizedCode(session: inspector.Session): void {
  if (process.env.NODE_V8_COVERAGE !== undefined) return;
  session.post("Profiler.startPreciseCoverage", { callCount: false, detailed: false });
  session.post("Profiler.stopPreciseCoverage");
}

function toBatch(profile: CpuProfile, cutMicros: number, clockOffsetMs: number): SampleBatch {
  const { nodes } = profile;
  const indexOf = new Map<number, number>();
  nodes.forEach((node, i) => indexOf.set(node.id, i));
  const frames: SampledFrame[] = [];
  const frameIndex = new Map<string, number>();
  const nodeFrame = new Int32Array(nodes.length);
  const nodeParent = new Int32Array(nodes.length).fill(-1);
  const nodeLine = new Int32Array(nodes.length);
  nodes.forEach((node, i) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName}\n${url}\n${lineNumber}`;
    let frame = frameIndex.get(key);
    if (frame === undefined) {
      frame = frames.push([functionName, url, lineNumber]) - 1;
      frameIndex.set(key, frame);
    }
    nodeFrame[i] = frame;
    for (const child of node.children ?? []) nodeParent[indexOf.get(child)!] = i;
    let best = 0;
    for (const { line, ticks } of node.positionTicks ?? []) {
      if (ticks > best) {
        best = ticks;
        nodeLine[i] = line;
      }
    }
  });
  const ids = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const samples = new Int32Array(ids.length);
  const times = new Float64Array(ids.length);
  let kept = 0;
  let micros = profile.startTime;
  for (let i = 0; i < ids.length; i++) {
    micros += deltas[i] ?? 0;
    if (micros >= cutMicros) break;
    // V8 records the thread's stack as a profile starts (the call to collect() that started it):
    // a sample of no interval's time, which would show the hand-over as this thread's busiest code.
    if (i === 0) continue;
    samples[kept] = indexOf.get(ids[i]) ?? 0;
    times[kept++] = (micros / 1e3 + clockOffsetMs) / 1e3;
  }
  // slice, not subarray: a view would carry the whole buffer to the thread that folds it.
  return { frames, nodeFrame, nodeParent, nodeLine, samples: samples.slice(0, kept), times: times.slice(0, kept) };
}
