// ResourceProfiler: memory and CPU of the kernel process and all its descendants over time
// (Dask's ResourceData), sampled on a separate thread.

import { join } from "node:path";
import type { Graph } from "../graph/graph";
import type { State } from "../callbacks/state";
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from "node:worker_threads";
import { checkNames } from "../names";
import { processCpuMicros } from "./sampler";
import * as P from "./sampler-protocol";
import { Recorder } from "./recorder";
import { type ProfileSnapshot, type ResourceData, type Visualizable, now } from "./types";

export interface ResourceProfilerOptions {
  /** Seconds between samples (default 1). */
  readonly dt?: number;
}

/** A profiler dropped while its sampler thread waits (used per call and never closed) takes the thread with it. */
const abandoned = new FinalizationRegistry<Worker>((worker) => void worker.terminate());

/** Longest a stop waits for the sampler's last sample (it normally answers within milliseconds). */
const STOP_TIMEOUT_MS = 2000;
/** Longest a start waits for a running sampler to take its baseline (a millisecond or so). */
const START_TIMEOUT_MS = 200;

/**
 * Sampler threads no profiler holds, paused, for the next one: starting a thread takes ~20 ms,
 * which a block around a short computation would otherwise pay every time. Unref'd like every
 * sampler thread; one left idle for IDLE_LIFETIME_MS ends.
 */
const idleThreads: SamplerThread[] = [];
const MAX_IDLE_THREADS = 1;
const IDLE_LIFETIME_MS = 60_000;

/**
 * Samples memory (MB) and CPU (% of one core, summed over processes) every `dt` seconds.
 * In a withCallbacks block it samples for the whole block, Dask's way, and its results appear
 * when the block ends; registered or per-call, it samples from each computation's start to its
 * finish. The sampler thread is never counted, never keeps Node running, and is given back with
 * `close()`, `unregister()` or the end of the block (one idle thread is kept for the next profiler).
 */
export class ResourceProfiler extends Recorder<null> implements Visualizable {
  results: ResourceData[] = [];
  readonly dt: number;
  private thread: SamplerThread | undefined = undefined;
  /** Computations outside a block that are running now; sampling pauses when none is. */
  private computing = 0;

  constructor(options: ResourceProfilerOptions = {}) {
    super();
    checkNames(options, ["dt"], "ResourceProfiler option");
    const { dt = 1 } = options;
    if (typeof dt !== "number" || !(dt > 0) || !Number.isFinite(dt)) {
      throw new TypeError(`ResourceProfiler option dt must be a number of seconds > 0, got ${dt}`);
    }
    this.dt = dt;
  }

  protected newRun(): null {
    return null;
  }

  override clear(): void {
    super.clear();
    this.results = [];
  }

  override blockStart(time: number): void {
    const outermost = !this.inBlock;
    super.blockStart(time);
    if (outermost) this.begin(time);
  }

  override blockEnd(time: number): void {
    super.blockEnd(time);
    if (!this.inBlock) this.collect(true);
  }

  override start(): void {
    super.start();
    if (!this.inBlock && this.computing++ === 0) this.begin(now());
  }

  override finish(dsk: Graph, state: State): void {
    // Collect first: the span then ends after the final sample.
    if (!this.inBlock && this.computing > 0 && --this.computing === 0) this.collect(false);
    super.finish(dsk, state);
  }

  /** Stops sampling and gives the sampler thread back (one is taken again when needed). Safe to call twice. */
  close(): void {
    const thread = this.detach();
    if (thread === undefined) return;
    try {
      thread.pause();
    } catch (error) {
      thread.end();
      throw error;
    }
    releaseSamplerThread(thread);
  }

  override unregister(): void {
    super.unregister();
    this.close();
  }

  override [Symbol.dispose](): void {
    super[Symbol.dispose]();
    this.close();
  }

  /** True while the sampler thread exists (between a start and `close()` or a block's end). */
  get running(): boolean {
    return this.thread !== undefined;
  }

  snapshot(): ProfileSnapshot {
    const { results } = this;
    const span = this.span(results[0]?.time, results.at(-1)?.time);
    // A block's end time is read before its profilers stop, so its final sample may come a moment later.
    return { kind: "resources", results: [...results], ...span, endTime: Math.max(span.endTime, results.at(-1)?.time ?? 0) };
  }

  private begin(time: number): void {
    if (this.thread === undefined) {
      this.thread = acquireSamplerThread();
      abandoned.register(this, this.thread.worker, this.thread);
    }
    this.thread.begin(time, this.dt);
  }

  /** Pauses sampling and takes the samples so far; `giveBack`: the profiler is done with its thread (a block's end). */
  private collect(giveBack: boolean): void {
    const thread = giveBack ? this.detach() : this.thread;
    if (thread === undefined) return;
    let samples: [number, number, number][];
    try {
      samples = thread.pause();
    } catch (error) {
      if (this.thread === thread) this.detach(); // a failed sampler ends; the next start takes another
      thread.end();
      throw error;
    }
    if (giveBack) releaseSamplerThread(thread);
    for (const [time, mem, cpu] of samples) this.results.push({ time, mem, cpu });
  }

  /** Takes the sampler thread away from this profiler, for stopping it. */
  private detach(): SamplerThread | undefined {
    const thread = this.thread;
    this.thread = undefined;
    if (thread !== undefined) abandoned.unregister(thread);
    return thread;
  }
}

/** A sampler thread for a new profiler (ResourceProfiler, MemorySampler): an idle one, or a new one. */
export function acquireSamplerThread(): SamplerThread {
  return idleThreads.pop()?.wake() ?? new SamplerThread();
}

/** A paused thread no profiler needs any more (its samples are collected): kept idle for the next one, or ended. */
export function releaseSamplerThread(thread: SamplerThread): void {
  if (idleThreads.length >= MAX_IDLE_THREADS || thread.failed) {
    thread.end();
    return;
  }
  idleThreads.push(thread);
  thread.idleFor(IDLE_LIFETIME_MS, () => {
    const at = idleThreads.indexOf(thread);
    if (at >= 0) idleThreads.splice(at, 1);
    thread.end();
  });
}

/** The main thread's side of one sampler thread. */
export class SamplerThread {
  private readonly control = new SharedArrayBuffer(P.CONTROL_BYTES);
  private readonly ints = new Int32Array(this.control, 0, 4);
  private readonly floats = new Float64Array(this.control, 16, P.FLOAT_SLOTS);
  private readonly port: MessagePort;
  readonly worker: Worker;
  private failure: Error | undefined = undefined;
  private idleTimer: NodeJS.Timeout | undefined = undefined;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const data: P.SamplerThreadData = { control: this.control, port: port2 };
    this.worker = new Worker(join(__dirname, "sampler-worker.js"), { workerData: data, transferList: [port2] });
    this.worker.on("error", (error) => (this.failure = error));
    this.worker.unref();
  }

  get failed(): boolean {
    return this.failure !== undefined || Atomics.load(this.ints, P.ACK) === P.FAILED;
  }

  /** Parked: runs `expire` unless taken again within `ms` (the timer never keeps Node running). */
  idleFor(ms: number, expire: () => void): void {
    this.idleTimer = setTimeout(expire, ms).unref();
  }

  /** Taken from the idle threads. */
  wake(): this {
    clearTimeout(this.idleTimer);
    return this;
  }

  /**
   * Starts a sampling session every `dt` seconds whose first interval begins at `time`; the
   * first sample comes `firstSampleAfter` seconds in (at most dt).
   */
  begin(time: number, dt: number, firstSampleAfter = P.FIRST_SAMPLE_AFTER): void {
    this.floats[P.BASE_TIME] = time;
    this.floats[P.BASE_CPU] = processCpuMicros();
    this.floats[P.DT] = dt;
    this.floats[P.FIRST_AFTER] = firstSampleAfter;
    const session = Atomics.add(this.ints, P.SESSION, 1) + 1; // after the baseline: the sampler reads it when it sees the new session
    Atomics.store(this.ints, P.COMMAND, P.RUN);
    Atomics.notify(this.ints, P.COMMAND);
    // A thread that has run before answers at once: wait for it to read the descendants' CPU
    // times, or work they do right away would count before the start. (A new thread is still
    // booting, ~20 ms; waiting for it would cost every first block that.)
    if (session > 1 && !this.failed) Atomics.wait(this.ints, P.STARTED, session - 1, START_TIMEOUT_MS);
  }

  /** Pauses and returns the samples taken since the last call, the final one included. */
  pause(): [number, number, number][] {
    const ack = Atomics.load(this.ints, P.ACK);
    Atomics.store(this.ints, P.COMMAND, P.PAUSE);
    Atomics.notify(this.ints, P.COMMAND);
    // The sampler answers after one last sample (a millisecond or so; longer only while it boots).
    if (ack !== P.FAILED) Atomics.wait(this.ints, P.ACK, ack, STOP_TIMEOUT_MS);
    const samples: [number, number, number][] = [];
    let error: string | undefined;
    for (let message = receiveMessageOnPort(this.port); message !== undefined; message = receiveMessageOnPort(this.port)) {
      const value = message.message as [number, number, number] | { error: string };
      if (Array.isArray(value)) samples.push(value);
      else error = value.error;
    }
    const failure = error ?? this.failure?.message;
    if (failure !== undefined) {
      this.failure ??= new Error(failure);
      throw new Error(`ResourceProfiler: the sampler thread failed: ${failure}`);
    }
    return samples;
  }

  /** Ends the thread now. */
  end(): void {
    clearTimeout(this.idleTimer);
    this.port.close();
    void this.worker.terminate();
  }
}
