// The dashboard feed's publisher: sources of dashboard data (a Client, local computations) register
// as providers and say when they have news; the publisher builds one bounded snapshot from all of
// them at most twice a second and hands it to its sinks — the notebook kernel's iopub channel, the
// standalone dashboard server. Nothing runs while nothing changes: no timer outlives the last news
// (or, for sources in live mode, the end of their live stretch).

import { randomUUID } from "node:crypto";
import { nowMs } from "../clock";
import { type Clock, realClock } from "../display/live";
import { kernelChannel, type OutputSlot } from "../display/tslab";
import { threadCpuMs } from "../metrics/clock";
import {
  DASHBOARD_LIMITS,
  DASHBOARD_MIME_TYPE,
  DASHBOARD_VERSION,
  type ComputationProgress,
  type DashboardSections,
  type DashboardSnapshot,
} from "../../protocol/dashboard";
import { boundSections } from "./bounds";

/** A source of dashboard data. */
export interface DashboardProvider {
  /** Names the provider in error reports ("Client", "DashboardFeed"). */
  readonly name: string;
  /**
   * The provider's current sections. Called at most twice a second and only after the provider
   * (or another) said it changed; keep it cheap and its lists bounded (the publisher trims past
   * DASHBOARD_LIMITS, but building a long list only to trim it wastes the kernel's time).
   */
  sections(): DashboardSections;
}

/** A provider's registration: how it reports news and leaves. */
export interface DashboardSource {
  /** New data: a snapshot follows within the publisher's interval (coalesced with other news). */
  changed(): void;
  /**
   * While live, a snapshot goes out every interval with no changed() calls: for data that changes
   * all the time (a running computation, a busy cluster), where a call per change would cost more
   * than the snapshots. Set it back to false when things settle: the publisher then goes idle.
   */
  setLive(live: boolean): void;
  /** Leaves; one more snapshot goes out without this provider's sections. Idempotent. */
  close(): void;
}

/** Receives every snapshot. Throwing an error with code EBUSY means "busy, try again soon". */
export type SnapshotSink = (snapshot: DashboardSnapshot) => void;

export interface PublisherOptions {
  /** Shortest time between two snapshots, ms (default 500: at most 2 a second). */
  readonly minIntervalMs?: number;
  /** Publish to the notebook kernel's iopub channel when running in a tslab kernel (default true). */
  readonly notebook?: boolean;
  readonly clock?: Clock;
}

/** What the feed has cost so far, for the benchmark and for anyone asking. */
export interface PublisherStats {
  readonly snapshots: number;
  /** Milliseconds spent building snapshots and handing them to the sinks (JSON encoding included for the kernel sink). */
  readonly busyMs: number;
  /** This thread's CPU milliseconds in the same work: busyMs without the waits for a core on a loaded machine. */
  readonly cpuMs: number;
  /** Times a sink was busy and the snapshot was retried later. */
  readonly retries: number;
  /** The last error a sink threw (other than busy), if any. */
  readonly lastError?: string;
}

export const DEFAULT_DASHBOARD_INTERVAL_MS = 500;
/** A busy zeromq socket drains within a few ms; retrying sooner than the interval keeps the feed fresh. */
const BUSY_RETRY_MS = 50;

function isBusy(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "EBUSY";
}

export class DashboardPublisher {
  /** Random per publisher: a receiver seeing a new source knows the sequence restarted. */
  readonly source = randomUUID();
  private readonly providers: DashboardProvider[] = [];
  private readonly sinks = new Set<SnapshotSink>();
  private readonly intervalMs: number;
  private readonly clock: Clock;
  private readonly notebook: boolean;
  private notebookSink: SnapshotSink | null | undefined;
  private seq = 0;
  private lastSentAt = -Infinity;
  private cancelTimer: (() => void) | undefined;
  private last: DashboardSnapshot | undefined;
  private readonly counters = { snapshots: 0, busyMs: 0, cpuMs: 0, retries: 0 };
  /** Sources in live mode: while any, the publisher keeps publishing every interval. */
  private liveSources = 0;
  /** News arrived while there was no sink to send it to. */
  private unsent = false;
  private lastError: string | undefined;

  constructor(options: PublisherOptions = {}) {
    const { minIntervalMs = DEFAULT_DASHBOARD_INTERVAL_MS, notebook = true, clock = realClock } = options;
    if (typeof minIntervalMs !== "number" || !(minIntervalMs >= 100)) {
      throw new RangeError(`DashboardPublisher: minIntervalMs must be a number ≥ 100 (the feed publishes at most 10 times a second), got ${String(minIntervalMs)}`);
    }
    this.intervalMs = minIntervalMs;
    this.clock = clock;
    this.notebook = notebook;
  }

  /** Registers a provider; the first snapshot with its sections follows within the interval. */
  provide(provider: DashboardProvider): DashboardSource {
    if (provider === null || typeof provider !== "object" || typeof provider.sections !== "function") {
      throw new TypeError("DashboardPublisher.provide takes an object with a sections() method");
    }
    this.providers.push(provider);
    this.schedule();
    let open = true;
    let live = false;
    const setLive = (on: boolean): void => {
      if (!open || on === live) return;
      live = on;
      this.liveSources += on ? 1 : -1;
      this.schedule();
    };
    return {
      changed: () => {
        if (open) this.schedule();
      },
      setLive,
      close: () => {
        if (!open) return;
        setLive(false);
        open = false;
        this.providers.splice(this.providers.indexOf(provider), 1);
        this.schedule();
      },
    };
  }

  /** Adds a sink (the dashboard server's clients); returns the function that removes it. */
  subscribe(sink: SnapshotSink): () => void {
    this.sinks.add(sink);
    // News that came while nobody listened was not built: build it now for the newcomer.
    if (this.unsent) this.schedule(0);
    return () => void this.sinks.delete(sink);
  }

  /** The last snapshot published, for a receiver that arrives between two. */
  get latest(): DashboardSnapshot | undefined {
    return this.last;
  }

  /** The current state: the last snapshot published, or a new one when news came while nobody listened. */
  current(): DashboardSnapshot {
    if (this.last === undefined || this.unsent) this.last = this.snapshot();
    return this.last;
  }

  get stats(): PublisherStats {
    return { ...this.counters, ...(this.lastError !== undefined && { lastError: this.lastError }) };
  }

  /** True while a snapshot is due (a timer is set); false when idle. */
  get pending(): boolean {
    return this.cancelTimer !== undefined;
  }

  /** One snapshot of every provider's sections now, bounded; also what the next publish sends. */
  snapshot(): DashboardSnapshot {
    const errors: string[] = [];
    const parts: DashboardSections[] = [];
    for (const provider of this.providers) {
      try {
        parts.push(provider.sections());
      } catch (error) {
        errors.push(`${provider.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return {
      version: DASHBOARD_VERSION,
      source: this.source,
      seq: ++this.seq,
      time: nowMs() / 1000,
      ...boundSections(mergeSections(parts)),
      ...(errors.length > 0 && { errors: errors.slice(0, DASHBOARD_LIMITS.errors) }),
    };
  }

  /** Coalesces news: at most one timer, firing no sooner than the interval after the last send. */
  private schedule(delay?: number): void {
    if (this.cancelTimer !== undefined) return; // news in bursts costs one comparison each
    const wait = delay ?? this.lastSentAt + this.intervalMs - this.clock.now();
    this.cancelTimer = this.clock.setTimer(Math.max(0, wait), () => {
      this.cancelTimer = undefined;
      this.publish();
    });
  }

  private publish(): void {
    const sinks = [...this.sinks];
    const notebook = this.notebookChannel();
    if (notebook !== null) sinks.push(notebook);
    // A script with a DashboardFeed but no notebook and no dashboard page: nothing to build for.
    this.unsent = sinks.length === 0;
    if (this.unsent) return;
    const started = performance.now();
    const startedCpu = threadCpuMs();
    const snapshot = this.snapshot();
    this.last = snapshot;
    let busy = false;
    for (const sink of sinks) {
      try {
        sink(snapshot);
      } catch (error) {
        // Runs from a timer: a throw here would end the kernel. A broken sink is reported, not fatal.
        if (isBusy(error)) busy = true;
        else this.lastError = error instanceof Error ? error.message : String(error);
      }
    }
    this.counters.snapshots++;
    this.counters.busyMs += performance.now() - started;
    this.counters.cpuMs += threadCpuMs() - startedCpu;
    this.lastSentAt = this.clock.now();
    if (busy) {
      this.counters.retries++;
      this.schedule(BUSY_RETRY_MS);
    } else if (this.liveSources > 0) {
      this.schedule();
    }
  }

  /** The kernel's iopub channel as a sink, looked up once; null outside a tslab kernel. */
  private notebookChannel(): SnapshotSink | null {
    if (this.notebookSink === undefined) {
      const channel = this.notebook ? kernelChannel() : null;
      const slot: OutputSlot | undefined = channel?.newSlot({ hidden: true });
      this.notebookSink = slot === undefined ? null : (snapshot) => slot.show({ [DASHBOARD_MIME_TYPE]: snapshot });
    }
    return this.notebookSink;
  }
}

/**
 * One set of sections from several providers: computations from all of them (running first,
 * then the most recently started); any other section from the first provider that has it.
 */
export function mergeSections(parts: readonly DashboardSections[]): DashboardSections {
  const merged: Record<string, unknown> = {};
  const progress: ComputationProgress[] = [];
  for (const part of parts) {
    for (const [name, value] of Object.entries(part)) {
      if (value === undefined) continue;
      if (name === "progress") progress.push(...(value as readonly ComputationProgress[]));
      else if (!(name in merged)) merged[name] = value;
    }
  }
  if (progress.length > 0) {
    progress.sort((a, b) => Number(b.state === "running") - Number(a.state === "running") || b.started - a.started);
    merged.progress = progress;
  }
  return merged as DashboardSections;
}

/** The process's publisher: every provider in this kernel or script feeds it. */
export const dashboardPublisher = new DashboardPublisher();
