// A worker as the scheduler state sees it: what it is running and holding, what it was told,
// and what its heartbeats said.

import type { WorkerRecord, WorkerStatus } from "../../../protocol/records";
import type { RegisterMessage, ToWorker, WorkerAddress, WorkerMetrics } from "../messages";
import { WorkerMemory } from "./heartbeats";

export class WorkerState {
  readonly address: WorkerAddress;
  /** `[address]`, shared by every message naming this worker as a key's only holder. */
  readonly addressList: readonly WorkerAddress[];
  readonly name: string;
  readonly nthreads: number;
  readonly memoryLimit: number;
  status: WorkerStatus = "running";
  /** Task slots assigned to it and not finished. */
  readonly processing = new Set<number>();
  /** Of those, tasks sent ahead that wait on the worker for inputs it is still computing. */
  waitingLocally = 0;
  /** Estimated seconds of work in `processing` (Dask's occupancy). */
  occupancy = 0;
  /** Task slots whose results it holds. */
  readonly hasWhat = new Set<number>();
  /** Bytes of those results. */
  nbytes = 0;
  /** Function ids it has been given (define-functions). */
  readonly knownFunctions = new Set<number>();
  /** Messages for it, sent together at the end of the scheduler's turn. */
  outbox: ToWorker[] = [];
  /** On the scheduler's clock. */
  lastSeen: number;
  /** When its latest heartbeat (with its metrics since the one before) arrived, scheduler clock; 0 before the first. */
  lastHeartbeat = 0;
  /** Estimated (worker clock − scheduler clock), seconds. */
  clockOffset: number;
  cpu = 0;
  readonly memory = new WorkerMemory(() => this.nbytes);
  metrics: WorkerMetrics | undefined;
  /** Heartbeats received so far. */
  heartbeats = 0;
  /** Its next heartbeat reply asks for the following heartbeat at once (a metrics sync waits for it). */
  hurried = false;
  transferredIn = 0;
  transferredOut = 0;

  constructor(
    readonly registration: RegisterMessage,
    /** Joined order; never reused, so it tells incarnations at the same address apart. */
    readonly id: number,
    now: number,
  ) {
    this.address = registration.address;
    this.addressList = [registration.address];
    this.name = registration.name;
    this.nthreads = registration.nthreads;
    this.memoryLimit = registration.memoryLimit;
    this.lastSeen = now;
    this.clockOffset = registration.now - now;
    if (registration.memory !== undefined) this.memory.process = registration.memory;
  }

  /** Tasks it could be running now (not waiting locally for inputs). */
  get runnable(): number {
    return this.processing.size - this.waitingLocally;
  }

  record(): WorkerRecord {
    const { memory } = this;
    return {
      address: this.address,
      name: this.name,
      host: this.registration.host,
      pid: this.registration.pid,
      nthreads: this.nthreads,
      memoryLimit: this.memoryLimit,
      status: this.status,
      lastSeen: this.lastSeen,
      clockOffset: this.clockOffset,
      cpu: this.cpu,
      memory: {
        process: memory.process,
        managed: memory.managed,
        unmanaged: memory.unmanaged,
        spilled: memory.spilled,
        managedTotal: memory.managed + memory.spilled,
      },
      tasks: this.metrics?.taskCounts ?? { processing: this.processing.size, memory: this.hasWhat.size },
      transferredIn: this.transferredIn,
      transferredOut: this.transferredOut,
    };
  }
}
