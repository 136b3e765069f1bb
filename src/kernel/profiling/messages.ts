// What a pool and its workers say to each other about profiling (beside the task messages in
// execution/wire.ts): the pool turns sampling on and off and asks for samples; a worker
// sends its tagged samples, when asked and once per cycle on its own.

import type { ThreadProfile } from "./thread";

export type ProfilerControl =
  | { readonly type: "profiler"; readonly action: "start"; readonly interval: number; readonly cycle: number }
  /** Send what was sampled so far now, answering `request`. */
  | { readonly type: "profiler"; readonly action: "collect"; readonly request: number }
  /** Send the last samples and stop sampling. */
  | { readonly type: "profiler"; readonly action: "stop" };

export interface ProfileMessage {
  readonly type: "profile";
  /** Absent when the worker was not sampling (a collect that crossed a stop). */
  readonly profile?: ThreadProfile;
  /** The collect request this answers, if any. */
  readonly request?: number;
  /** The answer to a stop: the session's last samples. */
  readonly final?: boolean;
}

export function isProfilerControl(message: unknown): message is ProfilerControl {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "profiler";
}
