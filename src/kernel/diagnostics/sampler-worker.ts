// The ResourceProfiler's sampler thread. It samples on its own clock, so measurements continue
// while the main thread is busy in a long synchronous task, and talks to the main thread through
// shared memory only: the main thread can pause it and collect its samples synchronously (from a
// `finish` hook) without waiting out a `dt`. A paused thread waits for its next session, which
// may be another profiler's.

import { workerData } from "node:worker_threads";
import { now } from "../clock";
import { type Sample, newSampler } from "./sampler";
import * as P from "./sampler-protocol";

const { control, port } = workerData as P.SamplerThreadData;
const ints = new Int32Array(control, 0, 4);
const floats = new Float64Array(control, 16, P.FLOAT_SLOTS);

function post(sample: Sample): void {
  port.postMessage([sample.time, sample.mem, sample.cpu]);
}

/** Runs until the main thread ends the thread (or a sample fails). */
async function run(): Promise<never> {
  const sampler = newSampler();
  let session = 0;
  let open = false; // the current session has an interval not yet closed by a sample
  let next = 0;
  let dt = 1;
  for (;;) {
    const command = Atomics.load(ints, P.COMMAND);
    const latest = Atomics.load(ints, P.SESSION);
    if (latest !== session) {
      // A new start: the interval begins at the baseline the main thread took then.
      session = latest;
      dt = floats[P.DT];
      await sampler.restart({ time: floats[P.BASE_TIME], cpuMicros: floats[P.BASE_CPU] });
      Atomics.store(ints, P.STARTED, session);
      Atomics.notify(ints, P.STARTED);
      open = true;
      next = floats[P.BASE_TIME] + Math.min(dt, floats[P.FIRST_AFTER]);
    }
    if (command === P.RUN) {
      const wait = next - now();
      if (wait > 0) {
        Atomics.wait(ints, P.COMMAND, P.RUN, wait * 1000);
        continue;
      }
      post(await sampler.sample());
      // After a slow sample, carry on from now: never a burst of catch-up samples.
      next = Math.max(next + dt, now());
      continue;
    }
    // Pause: one last sample up to this moment, so even a short run gets a real one; then wait
    // for the next session (the main thread ends the thread when nobody needs it).
    if (open) {
      post(await sampler.sample());
      open = false;
    }
    Atomics.add(ints, P.ACK, 1);
    Atomics.notify(ints, P.ACK);
    Atomics.wait(ints, P.COMMAND, P.PAUSE);
  }
}

run().catch((error: unknown) => {
  // Tell the main thread why, and release it if it is waiting for an answer.
  port.postMessage({ error: error instanceof Error ? error.message : String(error) });
  Atomics.store(ints, P.ACK, P.FAILED);
  Atomics.notify(ints, P.ACK);
  port.close();
});
