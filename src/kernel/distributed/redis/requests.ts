// Requests from the client to one Redis worker (client.run, client.profile): published on the
// worker's request channel, answered on this client's reply stream (read by ./outcomes). A
// profile request names its time range on Redis's clock and gets its windows back on it.

import type { Redis } from "ioredis";
import { type PackedProfile, packProfile } from "../../../protocol/profile";
import { packError } from "../../execution/wire";
import { DEFAULT_PROFILING } from "../../profiling/hub";
import type { FromWorker, ProfileReplyMessage, ProfileRequestMessage, WorkerAddress } from "../messages";
import type { WorkerClock } from "../worker/clock";
import type { AnsweredMessage, WorkerRequest } from "./jobs";
import { registry } from "./keys";

/**
 * Seconds a worker has to answer a profile request (its profiler waits at most 2 s for a busy
 * thread): a worker that is frozen, or died since its last heartbeat, is then left out of
 * client.profile rather than holding it until its registration expires.
 */
const PROFILE_REPLY_TIMEOUT = 5;

/** How often, and how far apart, a request to a worker not listening (yet) is sent again. */
const REQUEST_RETRIES = 20;
const REQUEST_RETRY_MS = 100;

export class WorkerRequests {
  /** Profile requests sent and not answered yet: requestId → what gives up on them. */
  private readonly profileTimers = new Map<number, NodeJS.Timeout>();

  constructor(
    private readonly redis: Redis,
    private readonly clientId: string,
    /** The server as errors name it. */
    private readonly description: string,
    /** This process's offset from Redis's clock. */
    private readonly clock: WorkerClock,
    /** Reports a reply as if `worker` sent it (a request nobody can answer is answered here). */
    private readonly report: (worker: WorkerAddress, messages: readonly FromWorker[]) => void,
  ) {}

  /** `client.run`, and adding or removing a worker plugin: answered with a run-reply. */
  run(worker: WorkerAddress, message: Exclude<AnsweredMessage, ProfileRequestMessage>): void {
    this.request(worker, message);
  }

  /**
   * Asks `worker` for its profile windows of a time range, both ways on the Redis server's clock.
   * It answers within PROFILE_REPLY_TIMEOUT, or is left out (an empty reply, as from a worker that
   * does not profile).
   */
  profile(worker: WorkerAddress, message: ProfileRequestMessage): void {
    const toRedis = (time: number | undefined): number | undefined => (time === undefined ? undefined : time - this.clock.offset);
    const timer = setTimeout(() => this.unansweredProfile(worker, message.requestId), PROFILE_REPLY_TIMEOUT * 1000);
    timer.unref();
    this.profileTimers.set(message.requestId, timer);
    this.request(worker, { ...message, start: toRedis(message.start), stop: toRedis(message.stop) });
  }

  /** A worker's profile reply with its windows on this process's clock; undefined if it came too late. */
  receivedProfile(reply: ProfileReplyMessage): ProfileReplyMessage | undefined {
    const timer = this.profileTimers.get(reply.requestId);
    if (timer === undefined) return undefined;
    clearTimeout(timer);
    this.profileTimers.delete(reply.requestId);
    const fromRedis = (time: number): number => time + this.clock.offset;
    const profile: PackedProfile = {
      ...reply.profile,
      windows: reply.profile.windows.map((window) => ({ ...window, time: fromRedis(window.time), stop: fromRedis(window.stop) })),
    };
    return { ...reply, profile };
  }

  /** Tells `worker` to drop values it keeps that this client forgot (no answer; a worker gone has dropped them). */
  free(worker: WorkerAddress, keys: readonly string[]): void {
    const request: WorkerRequest = { client: this.clientId, message: { op: "free-keys", keys } };
    this.redis.publish(registry.requests(worker), JSON.stringify(request)).catch(() => {});
  }

  /** Gives up on every request (the transport is closing). */
  close(): void {
    for (const timer of this.profileTimers.values()) clearTimeout(timer);
    this.profileTimers.clear();
  }

  private unansweredProfile(worker: WorkerAddress, requestId: number): void {
    clearTimeout(this.profileTimers.get(requestId));
    if (!this.profileTimers.delete(requestId)) return;
    this.report(worker, [{ op: "profile-reply", requestId, profile: packProfile([], DEFAULT_PROFILING.interval), enabled: false }]);
  }

  /** Asks `worker` through its request channel; it answers on this client's reply stream. */
  private request(worker: WorkerAddress, message: AnsweredMessage, attempt = 0): void {
    const request: WorkerRequest = { client: this.clientId, message };
    const unanswered = (reason: string): void => {
      if (message.op === "profile") return this.unansweredProfile(worker, message.requestId);
      const error = packError(new Error(`Worker ${worker} cannot be asked through ${this.description}: ${reason}`));
      this.report(worker, [{ op: "run-reply", requestId: message.requestId, ok: false, error }]);
    };
    // A worker subscribes to its channel just after it registers: one that has only just joined
    // (and is told its plugins at once) is asked again for a moment before the request fails.
    const retry = (): void => void setTimeout(() => this.request(worker, message, attempt + 1), REQUEST_RETRY_MS).unref();
    this.redis.publish(registry.requests(worker), JSON.stringify(request)).then(
      (listeners) => listeners === 0 && (attempt < REQUEST_RETRIES ? retry() : unanswered("it is not listening (it left, or lost its connection)")),
      (error: Error) => unanswered(error.message),
    );
  }
}
