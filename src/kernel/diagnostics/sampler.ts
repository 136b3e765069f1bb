// Measures memory and CPU of this process and all its descendants, minus the thread doing the
// measuring. Runs on the ResourceProfiler's sampler thread (see sampler-worker.ts).
//
// On Linux it reads /proc directly. Hand-written because the alternatives cost too much per
// tick: `pidusage` reads one process per call and `pidtree`/`ps-tree` spawn `ps` (several ms and
// a process per sample, itself visible in the tree); a /proc pass over ~1500 processes takes ~1 ms
// once the tree is known, since only new pids and our descendants are read. Elsewhere the
// process tree comes from `pidtree` and the figures from `pidusage`.

import { readFileSync, readdirSync } from "node:fs";
import pidusage from "pidusage";
import { now } from "../clock";

/** One measurement: MB (bytes/1e6) and % of one core since the previous one. */
export interface Sample {
  readonly time: number;
  readonly mem: number;
  readonly cpu: number;
}

/** The starting point of an interval for this process: wall time (epoch s) and process.cpuUsage() total (µs). */
export interface Baseline {
  readonly time: number;
  readonly cpuMicros: number;
}

export interface Sampler {
  /** Starts a new interval at `baseline` (taken by the thread that asked for sampling). */
  restart(baseline: Baseline): void | Promise<void>;
  sample(): Sample | Promise<Sample>;
}


export function processCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** USER_HZ, the unit of /proc CPU times: fixed at 100 by the Linux ABI on every mainstream architecture. */
const TICKS_PER_SECOND = 100;

export interface ProcStat {
  readonly ppid: number;
  readonly zombie: boolean;
  /** utime + stime, ticks. */
  readonly cpuTicks: number;
  /** Ticks after boot when the process started. */
  readonly startTicks: number;
  readonly rssPages: number;
}

/** A process's /proc/<pid>/stat fields, or undefined once it is gone. */
export function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined; // gone since the directory listing
  }
  // The command name sits in parentheses and may itself hold spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    ppid: Number(fields[1]),
    zombie: fields[0] === "Z",
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    startTicks: Number(fields[19]),
    rssPages: Number(fields[21]),
  };
}

/** Page size from the ELF auxiliary vector (AT_PAGESZ = 6), which Node does not expose. */
function pageSize(): number {
  const auxv = readFileSync("/proc/self/auxv");
  for (let i = 0; i + 16 <= auxv.length; i += 16) {
    if (auxv.readBigUInt64LE(i) === 6n) return Number(auxv.readBigUInt64LE(i + 8));
  }
  return 4096;
}

/** CPU seconds of the calling thread, from the scheduler's nanosecond counter. */
export function threadCpuSeconds(): number {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[0]) / 1e9;
  } catch {
    const fields = readFileSync("/proc/thread-self/stat", "latin1").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  }
}

export class ProcSampler implements Sampler {
  private readonly root = process.pid;
  private readonly pageBytes = pageSize();
  /** Parent of every pid seen; only new pids and descendants are re-read (a process's parent
   *  changes only to a reaper when its parent dies, which never makes it our descendant). */
  private readonly parentOf = new Map<number, number>();
  /** CPU ticks of each descendant at the last sample. */
  private ticksOf = new Map<number, number>();
  private last: { time: number; cpuMicros: number; samplerCpu: number; bootTicks: number } | undefined;

  restart(baseline: Baseline): void {
    this.ticksOf = new Map();
    for (const [pid, stat] of this.descendants()) this.ticksOf.set(pid, stat.cpuTicks);
    this.last = { ...baseline, samplerCpu: threadCpuSeconds(), bootTicks: this.uptimeTicks(baseline.time) };
  }

  sample(): Sample {
    const last = this.last!;
    const time = now();
    const cpuMicros = processCpuMicros();
    const samplerCpu = threadCpuSeconds();
    // This process: everything but the sampler thread's own work.
    let cpuSeconds = (cpuMicros - last.cpuMicros) / 1e6 - (samplerCpu - last.samplerCpu);
    let memBytes = process.memoryUsage.rss();
    const ticksOf = new Map<number, number>();
    for (const [pid, stat] of this.descendants()) {
      ticksOf.set(pid, stat.cpuTicks);
      memBytes += stat.rssPages * this.pageBytes;
      const before = this.ticksOf.get(pid);
      // A process born during the interval spent all its CPU time in it.
      if (before !== undefined) cpuSeconds += (stat.cpuTicks - before) / TICKS_PER_SECOND;
      else if (stat.startTicks >= last.bootTicks) cpuSeconds += stat.cpuTicks / TICKS_PER_SECOND;
    }
    this.ticksOf = ticksOf;
    const elapsed = time - last.time;
    this.last = { time, cpuMicros, samplerCpu, bootTicks: this.uptimeTicks(time) };
    return { time, mem: memBytes / 1e6, cpu: elapsed > 0 ? Math.max(0, (100 * cpuSeconds) / elapsed) : 0 };
  }

  /** Ticks since boot at epoch time `time`, comparable with a process's start time. */
  private uptimeTicks(time: number): number {
    const uptime = Number(readFileSync("/proc/uptime", "latin1").split(" ")[0]);
    return Math.floor((uptime - (now() - time)) * TICKS_PER_SECOND);
  }

  /** The live, non-zombie descendants of this process, with their /proc stat. */
  private descendants(): Map<number, ProcStat> {
    const { parentOf } = this;
    const alive = new Set<number>();
    const fresh = new Map<number, ProcStat>();
    for (const name of readdirSync("/proc")) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      alive.add(pid);
      if (parentOf.has(pid)) continue;
      const stat = readStat(pid);
      if (stat === undefined) continue;
      parentOf.set(pid, stat.ppid);
      fresh.set(pid, stat);
    }
    for (const pid of parentOf.keys()) if (!alive.has(pid)) parentOf.delete(pid);
    const childrenOf = new Map<number, number[]>();
    for (const [pid, ppid] of parentOf) {
      const siblings = childrenOf.get(ppid);
      if (siblings === undefined) childrenOf.set(ppid, [pid]);
      else siblings.push(pid);
    }
    const found = new Map<number, ProcStat>();
    const queue = [...(childrenOf.get(this.root) ?? [])];
    while (queue.length > 0) {
      const pid = queue.pop()!;
      const stat = fresh.get(pid) ?? readStat(pid);
      if (stat === undefined) continue;
      parentOf.set(pid, stat.ppid);
      if (!stat.zombie) found.set(pid, stat);
      for (const child of childrenOf.get(pid) ?? []) queue.push(child);
    }
    return found;
  }
}

/**
 * Other platforms: the tree from `pidtree` (which runs `ps` or `wmic`), the figures from
 * `pidusage`. This process is measured with process.cpuUsage(), so the sampler thread is not
 * subtracted here (Node 20 cannot time one thread portably).
 */
export class PidusageSampler implements Sampler {
  private last: Baseline | undefined;

  async restart(baseline: Baseline): Promise<void> {
    this.last = baseline;
    await this.children(); // pidusage's first CPU figure for a pid is since that call
  }

  async sample(): Promise<Sample> {
    const children = await this.children();
    const time = now();
    const cpuMicros = processCpuMicros();
    const last = this.last!;
    let cpu = (100 * (cpuMicros - last.cpuMicros)) / 1e6 / Math.max(time - last.time, 1e-9);
    let memBytes = process.memoryUsage.rss();
    for (const stat of Object.values(children)) {
      if (stat === null || stat === undefined) continue;
      cpu += stat.cpu;
      memBytes += stat.memory;
    }
    this.last = { time, cpuMicros };
    return { time, mem: memBytes / 1e6, cpu };
  }

  private async children(): Promise<Record<string, pidusage.Status | null | undefined>> {
    const { default: pidtree } = await import("pidtree"); // an ES module: loaded on first use
    const pids = await pidtree(process.pid).catch(() => [] as number[]);
    if (pids.length === 0) return {};
    return pidusage(pids).catch(() => ({}));
  }
}

export function newSampler(): Sampler {
  return process.platform === "linux" ? new ProcSampler() : new PidusageSampler();
}
