// A pool's workers as a profile source: the pool tells this object when workers are ready, which
// tasks it handed to which worker (in order: a worker numbers its tasks the same way), when a
// worker's profile message arrives and when a worker is gone. It folds each worker's samples
// into windows named after the worker id and hands them to the hub.

import type { Key } from "../graph/keys";
import { foldThreadProfile } from "./fold";
import { type ProfileSource, type ProfilingOptions, profiling } from "./hub";
import type { ProfileMessage, ProfilerControl } from "./messages";

/** A task handed to a pool worker: its key, worked out when asked for. */
export interface SentTask {
  readonly key: Key;
}

/** A pool worker as seen from here. */
export interface ProfiledWorker {
  readonly workerId: number;
  post(message: ProfilerControl): void;
}

/** One start-to-stop stretch of a worker's sampling; the worker numbers its tasks from 0 in each. */
interface Session {
  readonly cycle: number;
  /**
   * The worker's tasks numbered `first` on. Their keys are read only for the tasks a sample
   * lands in: a cluster worker's key is parsed back from its id, too dear for every task.
   */
  tasks: SentTask[];
  first: number;
  /** Still sampling: a stop was not yet sent. */
  on: boolean;
}

interface Request {
  readonly waiting: Set<ProfiledWorker>;
  readonly done: () => void;
}

export class PoolProfiles implements ProfileSource {
  private options: ProfilingOptions | undefined;
  private readonly ready = new Set<ProfiledWorker>();
  /** Per worker, its sessions whose last message has not arrived yet, oldest first (messages come in order). */
  private readonly sessions = new Map<ProfiledWorker, Session[]>();
  private readonly requests = new Map<number, Request>();
  private lastRequest = 0;

  /** True while tasks' keys must be reported (cheap: read per batch). */
  get active(): boolean {
    return this.options !== undefined;
  }

  start(options: ProfilingOptions): void {
    this.options = options;
    for (const worker of this.ready) this.startWorker(worker);
  }

  stop(): void {
    this.options = undefined;
    for (const [worker, sessions] of this.sessions) {
      const current = sessions.at(-1);
      if (current === undefined || !current.on) continue;
      current.on = false;
      worker.post({ type: "profiler", action: "stop" });
    }
  }

  collect(timeoutMs: number): Promise<void> {
    const waiting = new Set([...this.sessions].filter(([, sessions]) => sessions.at(-1)?.on).map(([worker]) => worker));
    if (waiting.size === 0) return Promise.resolve();
    const request = ++this.lastRequest;
    return new Promise<void>((resolve) => {
      // Referenced: the answers come through the workers' ports, which idle pools unreference.
      const timer = setTimeout(done, timeoutMs);
      const requests = this.requests;
      function done(): void {
        clearTimeout(timer);
        requests.delete(request);
        resolve();
      }
      this.requests.set(request, { waiting, done });
      for (const worker of waiting) worker.post({ type: "profiler", action: "collect", request });
    });
  }

  workerReady(worker: ProfiledWorker): void {
    this.ready.add(worker);
    if (this.options !== undefined) this.startWorker(worker);
  }

  /** `tasks` were just posted to `worker`, in the order it will run them. */
  tasksSent(worker: ProfiledWorker, tasks: readonly SentTask[]): void {
    const current = this.sessions.get(worker)?.at(-1);
    if (current?.on) for (const task of tasks) current.tasks.push(task);
  }

  onMessage(worker: ProfiledWorker, message: ProfileMessage): void {
    const sessions = this.sessions.get(worker);
    const session = sessions?.[0];
    const { profile } = message;
    if (session !== undefined && profile !== undefined) {
      const windows = foldThreadProfile(profile, {
        cycle: session.cycle,
        source: String(worker.workerId),
        keyOf: (task) => session.tasks[task - session.first]?.key,
      });
      session.tasks = session.tasks.slice(Math.max(0, profile.openTask - session.first));
      session.first = Math.max(session.first, profile.openTask);
      profiling.add(windows);
    }
    if (message.final) sessions?.shift();
    if (message.request !== undefined) this.answered(worker, message.request);
  }

  workerGone(worker: ProfiledWorker): void {
    this.ready.delete(worker);
    this.sessions.delete(worker);
    for (const request of [...this.requests.keys()]) this.answered(worker, request);
  }

  private startWorker(worker: ProfiledWorker): void {
    let sessions = this.sessions.get(worker);
    if (sessions === undefined) this.sessions.set(worker, (sessions = []));
    if (sessions.at(-1)?.on) return;
    const { interval, cycle } = this.options!;
    sessions.push({ cycle, tasks: [], first: 0, on: true });
    worker.post({ type: "profiler", action: "start", interval, cycle });
  }

  private answered(worker: ProfiledWorker, id: number): void {
    const request = this.requests.get(id);
    if (request === undefined || !request.waiting.delete(worker)) return;
    if (request.waiting.size === 0) request.done();
  }
}
