// The local transport: worker processes forked from this one, talking to the scheduler over Unix
// sockets in the cluster's temporary folder. It is also the nanny: a worker that dies is replaced
// (its death reported within the exit event, well under 2 s), one whose resident memory passes
// 95 % of its limit is killed and replaced, and closing leaves no process, socket or file.

import { rmSync } from "node:fs";
import type { Server } from "node:net";
import { join } from "node:path";
import { formatBytes } from "../../../protocol/format";
import { decodeBatch, encodeBatch, encodeBatches } from "../comm/batches";
import { Connection, listen } from "../comm/connection";
import type { FromWorker, GatherReplyMessage, RegisterMessage, ToWorker, WorkerAddress, WorkerStartConfig } from "../messages";
import type { Transport, TransportEvents } from "../scheduler/transport";
import { PeerClient } from "../worker/peers";
import { WorkerProcess } from "./worker-process";

/** Dask's `distributed.worker.memory.terminate`: the nanny restarts a worker above this share of its limit. */
export const TERMINATE_FRACTION = 0.95;
/** Dask's nanny checks memory every 100 ms. */
const MEMORY_CHECK_MS = 100;
/** How long a closing worker gets to leave on its own before it is killed. */
const CLOSE_GRACE_MS = 2000;
/** How long after its connection closed the nanny waits for a worker's exit, to report how it died. */
const EXIT_WAIT_MS = 200;

export interface LocalWorkerSettings {
  readonly nthreads: number;
  /** Bytes (0: no limit). */
  readonly memoryLimit: number;
  readonly memoryThresholds?: WorkerStartConfig["memoryThresholds"];
  /** Simulated clock offsets (seconds) by worker number, for tests of clock correction. */
  readonly clockOffsets?: readonly number[];
  readonly profile?: WorkerStartConfig["profile"];
}

/** A worker slot: its name stays, its process changes when the nanny replaces it. */
interface Slot {
  readonly index: number;
  process: WorkerProcess;
  connection: Connection | undefined;
  registered: boolean;
  /** Being retired or closed on purpose: its exit is not a failure. */
  retiring: boolean;
  /** Reported to the scheduler as gone. */
  left: boolean;
}

/** Open transports, so an exiting process can still kill their workers and remove their folders. */
const open = new Set<LocalTransport>();
process.once("exit", () => {
  for (const transport of open) transport.killNow();
});

export class LocalTransport implements Transport {
  readonly placement = "locality" as const;
  readonly description: string;
  private events: TransportEvents | undefined;
  private server: Server | undefined;
  private readonly slots = new Map<number, Slot>();
  private readonly byAddress = new Map<WorkerAddress, Slot>();
  private incarnations = 0;
  private nextIndex = 0;
  private keepsAlive = false;
  private memoryTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  /** Connections to the workers' data listeners, for gathering results. */
  private readonly data = new PeerClient();
  /** Told when a worker fails before it registered (it would fail again: it is not replaced). */
  onStartFailure: (name: string, why: string) => void = () => {};

  constructor(
    /** The cluster's temporary folder; removed on close. */
    readonly folder: string,
    private readonly settings: LocalWorkerSettings,
  ) {
    this.description = `Unix sockets in ${folder}`;
  }

  get schedulerPath(): string {
    return join(this.folder, "scheduler.sock");
  }

  /** Worker processes running now. */
  get processes(): readonly WorkerProcess[] {
    return [...this.slots.values()].map((slot) => slot.process);
  }

  async start(events: TransportEvents): Promise<void> {
    this.events = events;
    open.add(this);
    this.server = await listen(this.schedulerPath, (connection) => this.accept(connection));
    this.memoryTimer = setInterval(() => this.checkMemory(), MEMORY_CHECK_MS);
    this.memoryTimer.unref();
  }

  /** Starts worker processes until there are `count` (or retires the newest beyond it). */
  scaleTo(count: number): void {
    const live = [...this.slots.values()].filter((slot) => !slot.retiring);
    for (let i = live.length; i < count; i++) this.spawn(this.nextIndex++);
    for (const slot of live.slice(count).reverse()) this.retire(slot, "the cluster was scaled down");
  }

  send(worker: WorkerAddress, messages: readonly ToWorker[]): void {
    const connection = this.byAddress.get(worker)?.connection;
    if (connection === undefined || connection.closed) return;
    try {
      for (const batch of encodeBatches(messages)) connection.sendFrames(batch);
    } catch (error) {
      // A value in a task that cannot be encoded: the worker cannot be told; it is lost to us.
      process.stderr.write(`tsdask: cannot send to worker ${worker}: ${(error as Error).message}\n`);
      connection.destroy();
    }
  }

  /**
   * Results are read from the worker's data listener, like peers' inputs: the reading side of
   * that connection is this one, so values land in memory of their own without a copy (the
   * workers' connections to the scheduler's listener are read by copying).
   */
  async gather(worker: WorkerAddress, keys: readonly string[]): Promise<Pick<GatherReplyMessage, "values" | "missing">> {
    if (!this.byAddress.has(worker)) throw new Error(`Worker ${worker} is not running`);
    const { value } = await this.data.request(worker, { op: "gather", requestId: 0, keys });
    const reply = value as Partial<GatherReplyMessage> | null;
    if (reply?.op !== "gather-reply" || typeof reply.values !== "object" || reply.values === null || !Array.isArray(reply.missing)) {
      throw new Error(`Worker ${worker} answered a gather with something else`);
    }
    return { values: reply.values, missing: reply.missing };
  }

  setKeepsAlive(keep: boolean): void {
    this.keepsAlive = keep;
    if (keep) this.server?.ref();
    else this.server?.unref();
    for (const slot of this.slots.values()) {
      slot.process.setKeepsAlive(keep);
      slot.connection?.setKeepsAlive(keep);
    }
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  /** On process exit: kill every worker and remove the folder, synchronously. */
  killNow(): void {
    this.data.close();
    for (const slot of this.slots.values()) slot.process.kill("SIGKILL");
    rmSync(this.folder, { recursive: true, force: true });
    open.delete(this);
  }

  // ---- Workers -----------------------------------------------------------------------------------

  private spawn(index: number): void {
    const incarnation = ++this.incarnations;
    const name = `worker-${index}`;
    const config: WorkerStartConfig = {
      name,
      schedulerPath: this.schedulerPath,
      listenPath: join(this.folder, `${name}.${incarnation}.sock`),
      nthreads: this.settings.nthreads,
      memoryLimit: this.settings.memoryLimit,
      localDirectory: join(this.folder, `${name}.${incarnation}`),
      ...(this.settings.clockOffsets?.[index] !== undefined ? { clockOffset: this.settings.clockOffsets[index] } : {}),
      ...(this.settings.memoryThresholds !== undefined ? { memoryThresholds: this.settings.memoryThresholds } : {}),
      ...(this.settings.profile !== undefined ? { profile: this.settings.profile } : {}),
    };
    const worker = new WorkerProcess(config);
    const slot: Slot = { index, process: worker, connection: undefined, registered: false, retiring: false, left: false };
    this.slots.set(index, slot);
    this.byAddress.set(worker.address, slot);
    worker.setKeepsAlive(this.keepsAlive);
    void worker.exited.then(() => this.exited(slot));
  }

  private retire(slot: Slot, reason: string): void {
    slot.retiring = true;
    if (slot.connection !== undefined && !slot.connection.closed) {
      try {
        slot.connection.sendFrames(encodeBatch([{ op: "close", reason }]));
      } catch {
        // already going
      }
    } else {
      slot.process.kill("SIGTERM");
    }
    const timer = setTimeout(() => slot.process.kill("SIGKILL"), CLOSE_GRACE_MS);
    timer.unref();
    void slot.process.exited.then(() => clearTimeout(timer));
  }

  /** A worker's connection: its first message must be its registration. */
  private accept(connection: Connection): void {
    connection.setKeepsAlive(this.keepsAlive);
    let slot: Slot | undefined;
    connection.on("message", (batch) => {
      const messages = decodeBatch(batch) as FromWorker[];
      if (slot === undefined) {
        const registration = messages[0] as RegisterMessage | undefined;
        slot = registration?.op === "register" ? this.byAddress.get(registration.address) : undefined;
        if (slot === undefined || slot.process.address !== registration!.address || this.closing !== undefined) {
          connection.destroy();
          return;
        }
        slot.connection = connection;
        slot.registered = true;
        this.events!.workerJoined(registration!);
        if (messages.length > 1) this.events!.received(registration!.address, messages.slice(1));
        return;
      }
      this.events!.received(slot.process.address, messages);
    });
    connection.on("close", () => {
      if (slot === undefined || slot.left) return;
      const lost = slot;
      // The exit event usually follows at once and says how it died; do not wait for it long.
      const timer = setTimeout(() => this.leave(lost, "its connection closed"), EXIT_WAIT_MS);
      timer.unref();
      void lost.process.exited.then(() => clearTimeout(timer));
    });
  }

  private exited(slot: Slot): void {
    const worker = slot.process;
    const how = worker.describeExit();
    this.byAddress.delete(worker.address);
    if (this.slots.get(slot.index) === slot) this.slots.delete(slot.index);
    this.leave(slot, `its process ${how}`);
    if (slot.retiring || this.closing !== undefined) return;
    if (!slot.registered) {
      this.onStartFailure(worker.name, `its process ${how} before it registered${worker.stderr ? `: ${worker.stderr}` : ""}`);
      return;
    }
    // The nanny: a worker that died is replaced under the same name.
    this.spawn(slot.index);
  }

  private leave(slot: Slot, reason: string): void {
    if (slot.left) return;
    slot.left = true;
    if (slot.registered) this.events?.workerLeft(slot.process.address, reason);
  }

  /** The nanny's memory check: a worker above 95 % of its limit is killed (and replaced), with a message. */
  private checkMemory(): void {
    const limit = this.settings.memoryLimit;
    if (!(limit > 0) || this.closing !== undefined) return;
    for (const slot of this.slots.values()) {
      if (slot.retiring || slot.process.exit !== undefined) continue;
      const resident = slot.process.residentBytes();
      if (resident === undefined || resident <= TERMINATE_FRACTION * limit) continue;
      process.stderr.write(
        `tsdask: worker ${slot.process.name} (${slot.process.address}, pid ${slot.process.pid}) uses ${formatBytes(resident)} ` +
          `of its ${formatBytes(limit)} memory limit (more than ${TERMINATE_FRACTION * 100} %): restarting it\n`,
      );
      slot.process.kill("SIGKILL");
    }
  }

  private async shutDown(): Promise<void> {
    clearInterval(this.memoryTimer);
    this.data.close();
    // Whoever awaits close() must see it finish: the workers keep this process alive until they exit.
    this.setKeepsAlive(true);
    const processes = this.processes;
    for (const slot of this.slots.values()) this.retire(slot, "the cluster is closing");
    await Promise.all(processes.map((process) => process.exited));
    const server = this.server;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(this.folder, { recursive: true, force: true });
    open.delete(this);
  }
}
