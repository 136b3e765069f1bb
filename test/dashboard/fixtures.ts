// Cluster-shaped dashboard data for tests, as the Client will provide it (records.ts shapes): the
// cluster, workers with memory and tasks, cluster memory, bandwidth. Names carry hostile text.
import type { ClusterSection, DashboardSections } from "../../src/protocol/dashboard";
import type { ClusterMemory, WorkerRecord } from "../../src/protocol/records";

export const EVIL = "<img src=x onerror=window.__xss=1>";
const GiB = 2 ** 30;
const MiB = 2 ** 20;

export function workerRecord(index: number, time: number, overrides: Partial<WorkerRecord> = {}): WorkerRecord {
  const managed = (index + 1) * 300 * MiB;
  const unmanaged = 200 * MiB;
  const spilled = index === 2 ? 512 * MiB : 0;
  return {
    address: `unix:///tmp/tsdask-worker-${index}.sock`,
    name: index === 1 ? EVIL : `worker-${index}`,
    host: "127.0.0.1",
    pid: 1000 + index,
    nthreads: 2,
    memoryLimit: 2 * GiB,
    status: index === 3 ? "paused" : "running",
    lastSeen: time - 0.5,
    clockOffset: 0,
    cpu: 40 + 20 * index,
    memory: { process: managed + unmanaged, managed, unmanaged, spilled, managedTotal: managed + spilled },
    tasks: { executing: 2, ready: index, memory: 10 * index },
    transferredIn: 0,
    transferredOut: 0,
    ...overrides,
  };
}

/** The sections a Client on a 4-worker LocalCluster would give. */
export function clusterSections(time: number): DashboardSections {
  const workers = [0, 1, 2, 3].map((i) => workerRecord(i, time));
  const sum = (pick: (w: WorkerRecord) => number): number => workers.reduce((total, worker) => total + pick(worker), 0);
  const memory: ClusterMemory = {
    process: sum((w) => w.memory.process),
    managed: sum((w) => w.memory.managed),
    unmanaged: sum((w) => w.memory.unmanaged),
    unmanagedOld: sum((w) => w.memory.unmanaged) * 0.75,
    unmanagedRecent: sum((w) => w.memory.unmanaged) * 0.25,
    spilled: sum((w) => w.memory.spilled),
    managedTotal: sum((w) => w.memory.managedTotal),
    optimistic: sum((w) => w.memory.managed) + sum((w) => w.memory.unmanaged) * 0.75,
  };
  const cluster: ClusterSection = {
    name: "LocalCluster",
    scheduler: "unix:///tmp/tsdask-scheduler.sock",
    status: "running",
    workers: workers.length,
    threads: sum((w) => w.nthreads),
    memoryLimit: sum((w) => w.memoryLimit),
  };
  // Worker 1 has the hostile name: the matrix shows names, as text.
  const [a, b, c] = workers.map((worker) => worker.address);
  const bandwidth = {
    total: 300 * 2 ** 20,
    byType: [
      { type: "Float64Array", bandwidth: 800 * 2 ** 20 },
      { type: EVIL, bandwidth: 2 ** 20 },
    ],
    byWorkers: [
      { source: a, destination: b, bandwidth: 512 * 2 ** 20 },
      { source: b, destination: a, bandwidth: 256 * 2 ** 20 },
      { source: c, destination: a, bandwidth: 2 ** 30 },
    ],
  };
  return { cluster, workers, memory, bandwidth };
}
