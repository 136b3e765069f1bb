// The workers' statistical profile for the dashboard's Profile panel. While the cluster runs tasks
// the newest windows are fetched from the workers every few seconds (one request at a time, each
// asking only for what is newer than what it has), kept — merged into coarser time bins past a
// bound — and turned into the panel's section only when a snapshot needs it.

import type { ProfileSection } from "../../../protocol/dashboard";
import { type ProfileWindow, coarsenWindows } from "../../../protocol/profile";
import { nowMs } from "../../clock";
import { profileSection } from "../../dashboard/bounds";
import { DEFAULT_PROFILING } from "../../profiling/hub";
import type { Scheduler } from "../scheduler/scheduler";

/** How often a live feed asks the workers for their newest windows. */
const REFRESH_MS = 2000;
/**
 * A run's last windows close one profile cycle after it ends at the latest. A worker hands over
 * everything it sampled before it answers, so a request made a cycle after the end brings them
 * all: asked for every LAST_WINDOW_MS until such a request was answered, at most
 * LAST_WINDOW_TRIES times. (Whether a worker sent a window from after the end says nothing: an
 * idle worker samples nothing worth a window.)
 */
const LAST_WINDOW_MS = 1500;
const LAST_WINDOW_TRIES = 4;
/** Windows kept; past this they merge into half as many time bins (the panel shows 20 anyway). */
const KEEP_WINDOWS = 400;

export class ClusterProfileFollower {
  private windows: ProfileWindow[] = [];
  private interval = DEFAULT_PROFILING.interval;
  /** Seconds per window, as the workers' windows say. */
  private cycle = DEFAULT_PROFILING.cycle;
  /** Per worker, the end of the newest window received: the next request's start. */
  private readonly receivedTo = new Map<string, number>();
  private askedAt = -Infinity;
  private fetching = false;
  private section: ProfileSection | undefined;
  private lastWindowTimer: NodeJS.Timeout | undefined;
  /** When the last run ended (epoch s, scheduler clock) and the asks left for its last windows. */
  private runEnd: { at: number; triesLeft: number } | undefined;

  constructor(
    private readonly scheduler: Scheduler,
    /** Called when new windows arrived: a snapshot should show them. */
    private readonly onNews: () => void,
  ) {}

  /** The section so far (undefined before any sample); while `live`, asks for newer windows when due. */
  current(live: boolean): ProfileSection | undefined {
    if (live && nowMs() - this.askedAt >= REFRESH_MS) this.fetch();
    if (this.windows.length === 0) return undefined;
    return (this.section ??= profileSection(this.windows, this.interval));
  }

  /** The run ended: its windows now, and its last ones once they have closed. */
  runEnded(): void {
    this.runEnd = { at: nowMs() / 1000, triesLeft: LAST_WINDOW_TRIES };
    this.fetch();
  }

  /** After a fetch asked at `askedAt` (epoch ms): ask again for a run's last windows while they may still have been open then. */
  private followRunEnd(askedAt: number): void {
    const end = this.runEnd;
    if (end === undefined) return;
    const closed = askedAt / 1000 >= end.at + this.cycle;
    if (closed || end.triesLeft-- <= 0) {
      this.runEnd = undefined;
      return;
    }
    clearTimeout(this.lastWindowTimer);
    this.lastWindowTimer = setTimeout(() => this.fetch(), LAST_WINDOW_MS).unref();
  }

  /** Asks the workers for the windows newer than those held. */
  fetch(): void {
    if (this.fetching || this.scheduler.isClosed) return;
    this.fetching = true;
    const askedAt = (this.askedAt = nowMs());
    const start = this.receivedTo.size === 0 ? undefined : Math.min(...this.receivedTo.values());
    this.scheduler
      .profileWindows(start === undefined ? {} : { start })
      .then(({ windows, interval }) => {
        const fresh = windows.filter((window) => window.time >= (this.receivedTo.get(window.source) ?? -Infinity));
        for (const window of fresh) this.receivedTo.set(window.source, Math.max(window.stop, this.receivedTo.get(window.source) ?? -Infinity));
        if (fresh.length > 0) this.cycle = fresh[0].stop - fresh[0].time;
        this.followRunEnd(askedAt);
        if (fresh.length === 0) return;
        this.interval = interval;
        this.windows.push(...fresh);
        if (this.windows.length > KEEP_WINDOWS) this.windows = coarsenWindows(this.windows, KEEP_WINDOWS / 2);
        this.section = undefined;
        this.onNews();
      })
      // A cluster closing under the request, a worker gone: the panel keeps what it had.
      .catch(() => undefined)
      .finally(() => {
        this.fetching = false;
      });
  }

  clear(): void {
    clearTimeout(this.lastWindowTimer);
    this.runEnd = undefined;
    this.windows = [];
    this.receivedTo.clear();
    this.section = undefined;
    this.askedAt = -Infinity;
  }
}
