// A Redis worker's options (\`tsdask worker\` flags and RedisWorker.start's argument), checked and
// with their defaults filled in.
import { availableParallelism, totalmem } from "node:os";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { ProfilingOptions } from "../../profiling/hub";
import type { RedisTarget } from "./address";
import type { DataListenOptions } from "./data-listener";
import { defaultModuleRoots, resolveModuleRoots } from "./functions";
import { DEFAULT_HANDOFF_TIMEOUT } from "./handoff";
import { DEFAULT_HOLD_ABOVE } from "./held";
import { DEFAULT_PEER_TIMEOUT, checkOptionUnits } from "./options";
import { DEFAULT_PART_SIZE } from "./store";

export interface RedisWorkerOptions extends DataListenOptions {
  /**
   * `redis://[user:password@]host:port[/db]` or `rediss://…` (without a password in it, the one
   * in TSDASK_REDIS_PASSWORD is used), or a target read from one.
   */
  readonly url: string | RedisTarget;
  /** Unique among the live workers of this Redis (default `<host>-<pid>`). */
  readonly name?: string;
  /** Tasks run at once, each on a thread of its own (default: the CPUs available). */
  readonly nthreads?: number;
  /**
   * Bytes (default: the machine's memory): the results it keeps spill to disk and it pauses past
   * Dask's thresholds of it (60 % and 80 %).
   */
  readonly memoryLimit?: number;
  /**
   * Results larger than this many bytes (in memory) stay with this worker, for peers and the
   * client to fetch from its data listener, rather than in Redis (default 64 KiB; a client's own
   * holdAbove option wins). A worker that does not listen keeps nothing.
   */
  readonly holdAbove?: number;
  /** Run self-contained source shipped by clients: anyone who can write to the Redis can then run code here. */
  readonly allowSource?: boolean;
  /**
   * Folders whose modules' exports may run here besides the default ones (the project the worker
   * was started in, tsdask's own task functions; see ./functions defaultModuleRoots).
   */
  readonly moduleRoots?: readonly string[];
  readonly tls?: TlsOptions;
  /** Seconds between heartbeats (default 1). */
  readonly heartbeatInterval?: number;
  /** Seconds the registration outlives the last heartbeat (default 10). */
  readonly ttl?: number;
  /** Seconds a job stays locked to this worker without a renewal (default 5). */
  readonly lockDuration?: number;
  /** Seconds between checks for jobs whose worker stopped renewing its lock (default 2). */
  readonly stalledInterval?: number;
  /** Seconds a leaving worker waits for peers to take the results it keeps before it writes the rest into Redis (default 20, see ./handoff). */
  readonly handoffTimeout?: number;
  /** Seconds a peer may take to connect or stay silent while asked for data (default 30, see DEFAULT_PEER_TIMEOUT). */
  readonly peerTimeout?: number;
  /** Largest Redis string a result is cut into, bytes (default 64 MiB; see RedisStore). */
  readonly partSize?: number;
  /** Takeovers of one job before it fails as a task that kills its workers (default 3, Dask's allowed-failures). */
  readonly maxStalledCount?: number;
  /**
   * Seconds a registered client may have no connection open before it is taken for dead and its
   * namespace swept (default: TSDASK_DEAD_CLIENT_GRACE or 30).
   */
  readonly deadClientGrace?: number;
  /** Seconds Redis may stay unreachable before the worker gives up and leaves (Dask's --death-timeout; default: waits as long as it takes). */
  readonly deathTimeout?: number;
  /** Seconds added to this worker's own clock, to test clock correction (default: TSDASK_CLOCK_OFFSET or 0). */
  readonly clockOffset?: number;
  /**
   * The statistical profiler, as a LocalCluster worker's (Dask's distributed.worker.profile):
   * seconds between samples and per window; false turns it off. Default { interval: 0.01, cycle: 1 }.
   */
  readonly profile?: Partial<ProfilingOptions> | false;
  /** Where progress lines go (default: standard error). */
  readonly log?: (line: string) => void;
}

export type WorkerSettings = Required<Omit<RedisWorkerOptions, "tls" | "deathTimeout" | "log" | "name" | "url" | "clockOffset" | "profile" | keyof DataListenOptions>> & {
  readonly tls?: TlsOptions;
  readonly deathTimeout?: number;
};

/** The options with their units checked (naming the option at fault) and defaults filled in. */
export function workerSettings(options: RedisWorkerOptions): WorkerSettings {
  checkOptionUnits(
    options,
    {
      nthreads: "whole number ≥ 1",
      memoryLimit: "bytes",
      holdAbove: "bytes",
      heartbeatInterval: "seconds",
      ttl: "seconds",
      lockDuration: "seconds",
      stalledInterval: "seconds",
      partSize: "bytes",
      peerTimeout: "seconds",
      handoffTimeout: "seconds",
      maxStalledCount: "whole number ≥ 0",
      deadClientGrace: "seconds",
      deathTimeout: "seconds",
    },
    "RedisWorker",
  );
  const settings: WorkerSettings = {
    nthreads: options.nthreads ?? availableParallelism(),
    memoryLimit: options.memoryLimit ?? totalmem(),
    holdAbove: options.holdAbove ?? DEFAULT_HOLD_ABOVE,
    allowSource: options.allowSource ?? false,
    // Real paths, checked before connecting: a root that does not exist is an error at start.
    moduleRoots: [...defaultModuleRoots(), ...resolveModuleRoots(options.moduleRoots ?? [])],
    tls: options.tls,
    heartbeatInterval: options.heartbeatInterval ?? 1,
    ttl: options.ttl ?? 10,
    lockDuration: options.lockDuration ?? 5,
    stalledInterval: options.stalledInterval ?? 2,
    maxStalledCount: options.maxStalledCount ?? 3,
    partSize: options.partSize ?? DEFAULT_PART_SIZE,
    peerTimeout: options.peerTimeout ?? DEFAULT_PEER_TIMEOUT,
    handoffTimeout: options.handoffTimeout ?? DEFAULT_HANDOFF_TIMEOUT,
    deadClientGrace: options.deadClientGrace ?? Number(process.env.TSDASK_DEAD_CLIENT_GRACE ?? 30),
    deathTimeout: options.deathTimeout,
  };
  if (!(settings.deadClientGrace > 0)) throw new RangeError(`deadClientGrace (TSDASK_DEAD_CLIENT_GRACE) must be a number of seconds > 0, got ${settings.deadClientGrace}`);
  return settings;
}
