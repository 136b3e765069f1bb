// The profiler's side of a pool worker (thread or process): samples the worker's own thread while
// the pool has profiling on, numbers the tasks it runs, and sends its samples once per cycle and
// whenever the pool asks. worker-main calls taskStarted/taskEnded around each task.

import type { ProfileMessage, ProfilerControl } from "./messages";
import { SampledThread, type ThreadProfile } from "./thread";

let thread: SampledThread | undefined;
let timer: ReturnType<typeof setInterval> | undefined;
let runningTask = -1;
/** Whether a task has run on this worker yet, profiled or not. */
let ranTasks = false;

/** Marks the start of a task (numbered only while profiling is on). */
export function taskStarted(): void {
  ranTasks = true;
  if (thread !== undefined) runningTask = thread.taskStarted();
}

export function taskEnded(): void {
  if (thread !== undefined && runningTask >= 0) thread.taskEnded(runningTask);
  runningTask = -1;
}

/** True when the batch holds anything but idle time. */
function worthSending(profile: ThreadProfile): boolean {
  for (let i = 0; i < profile.samples.length; i++) {
    if (profile.sampleTask[i] >= 0 || profile.frames[profile.nodeFrame[profile.samples[i]]][0] !== "(idle)") return true;
  }
  return false;
}

export function onProfilerControl(message: ProfilerControl, send: (message: ProfileMessage) => void): void {
  switch (message.action) {
    case "start": {
      if (thread !== undefined) return;
      try {
        thread = new SampledThread(message.interval, !ranTasks);
      } catch {
        // No inspector in this Node build: the worker runs its tasks unsampled rather than fail.
        return;
      }
      // Between batches the worker's event loop runs this; during a long task it waits, and the
      // task's samples (timestamped) go out with the next cycle.
      timer = setInterval(() => {
        const profile = thread?.collect();
        if (profile !== undefined && worthSending(profile)) send({ type: "profile", profile });
      }, message.cycle * 1000);
      timer.unref();
      return;
    }
    case "collect":
      send({ type: "profile", profile: thread?.collect(), request: message.request });
      return;
    case "stop": {
      if (thread === undefined) return;
      clearInterval(timer);
      const profile = thread.stop();
      thread = undefined;
      runningTask = -1;
      send({ type: "profile", profile, final: true });
    }
  }
}
