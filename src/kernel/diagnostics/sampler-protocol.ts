// The shared-memory handshake between ResourceProfiler (main thread) and its sampler thread.
// Int32 slots: COMMAND (RUN / PAUSE), SESSION (bumped by every start, after the baseline
// is written), ACK (bumped by the sampler once it has sampled and obeyed a PAUSE; −1 if
// it failed), STARTED (the session whose baseline the sampler has taken). Float64 slots: the baseline and sampling interval of the current session (a paused
// thread is reused by the next profiler, with its own interval).

import type { MessagePort } from "node:worker_threads";

export const COMMAND = 0;
export const SESSION = 1;
export const ACK = 2;
export const STARTED = 3;
export const RUN = 1;
export const PAUSE = 2;
export const FAILED = -1;

/**
 * Float64 slots, after the four Int32 ones: wall time (epoch s) and process CPU (µs) at the
 * start, dt (s), and how soon after the start the first sample comes (s).
 */
export const BASE_TIME = 0;
export const BASE_CPU = 1;
export const DT = 2;
export const FIRST_AFTER = 3;
export const FLOAT_SLOTS = 4;
export const CONTROL_BYTES = 16 + FLOAT_SLOTS * 8;

/** The first sample comes this soon after a start (seconds) even with a long dt. */
export const FIRST_SAMPLE_AFTER = 0.1;

export interface SamplerThreadData {
  readonly control: SharedArrayBuffer;
  /** Samples go here as [time, mem, cpu]; a failure as { error }. */
  readonly port: MessagePort;
}
