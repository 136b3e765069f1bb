// A Redis cluster as the Client sees it: the cluster scheduler in this process, on the Redis
// transport ("queue" placement), with the workers that serve that Redis wherever they run.
// `Client.connect("redis://…")` makes one; closing the client closes it (nothing of this client
// is left in Redis, the workers stay).

import { getPool } from "../../execution";
import { ClusterCard } from "../display";
import { Scheduler } from "../scheduler/scheduler";
import type { WorkerState } from "../scheduler/workers";
import { type RedisTransportOptions, checkOptionUnits } from "./options";
import { RedisTransport } from "./transport";

export interface RedisClusterOptions extends RedisTransportOptions {
  /** Dask's worker-saturation: root tasks queued per worker thread; Infinity: all at once. Default 1.1. */
  readonly workerSaturation?: number;
  /** Task-stream records the scheduler keeps (Dask's task-stream-length). Default 100 000. */
  readonly taskStreamLength?: number;
}

const OPTION_NAMES = new Set([
  "name",
  "connectTimeout",
  "tls",
  "partSize",
  "noWorkersTimeout",
  "connectionLostTimeout",
  "pollInterval",
  "holdAbove",
  "peerTimeout",
  "workerSaturation",
  "taskStreamLength",
]);

export class RedisCluster extends ClusterCard {
  protected readonly cardTitle = "RedisCluster";
  private closing: Promise<void> | undefined;

  private constructor(
    readonly name: string,
    readonly scheduler: Scheduler,
    private readonly transport: RedisTransport,
  ) {
    super();
  }

  /**
   * Connects to the Redis at `url` (`redis://[user:password@]host:port[/db]`, `rediss://` for
   * TLS) and starts the scheduler on it. A wrong password or an unreachable host is an error
   * naming the host (RedisConnectError) within `connectTimeout` seconds (5). Without a password
   * in the address, the one in TSDASK_REDIS_PASSWORD is used.
   */
  static async connect(url: string, options: RedisClusterOptions = {}): Promise<RedisCluster> {
    checkOptions(options);
    const transport = await RedisTransport.connect(url, options);
    const scheduler = new Scheduler(transport, { workerSaturation: options.workerSaturation, taskStreamLength: options.taskStreamLength });
    scheduler.on("notice", (message) => process.stderr.write(`tsdask: ${message}\n`));
    // With queue placement no define-functions are sent: each job carries the specs of its functions.
    transport.resolveFunctionsWith(scheduler.functions);
    try {
      await scheduler.start();
      // Tasks may be submitted before any worker joins (they wait in the queue): until one says
      // which globals shipped sources may use, this process's own task threads say it.
      if (scheduler.workers.size === 0) scheduler.functions.setWorkerGlobals((await getPool("threads").ready()).workerGlobals);
      // The registry's first read can fail the transport (a worker of another protocol version).
      if (scheduler.closedBy !== undefined) throw scheduler.closedBy;
    } catch (error) {
      await scheduler.close();
      throw error;
    }
    return new RedisCluster(options.name ?? "tsdask-client", scheduler, transport);
  }

  /** The workers registered now, as the scheduler sees them (by name). */
  get workers(): ReadonlyMap<string, WorkerState> {
    return this.scheduler.workers;
  }

  get status(): "running" | "closed" {
    return this.closing === undefined && !this.scheduler.isClosed ? "running" : "closed";
  }

  /** No dashboard page of its own: the notebook's JupyterLab dashboard shows the client. */
  get dashboardLink(): string | null {
    return null;
  }

  get description(): string {
    return `RedisCluster '${this.name}' at ${this.transport.description}`;
  }

  /** Leaves the Redis: removes everything this client stored there, disconnects; the workers stay. */
  close(): Promise<void> {
    this.closing ??= this.scheduler.close();
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  protected get transportDescription(): string {
    return this.transport.description;
  }
}

/** A bad option is an error naming it. */
function checkOptions(options: RedisClusterOptions): void {
  if (options === null || typeof options !== "object") throw new TypeError(`Client.connect options must be an object, got ${options}`);
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw new TypeError(`Unknown option "${name}" for a Redis cluster; known: ${[...OPTION_NAMES].join(", ")}`);
  }
  checkOptionUnits(
    options,
    { connectTimeout: "seconds", partSize: "bytes", noWorkersTimeout: "seconds", connectionLostTimeout: "seconds", pollInterval: "seconds", holdAbove: "bytes", peerTimeout: "seconds" },
    "Client.connect",
  );
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    throw new TypeError(`Option name must be a non-empty string, got ${JSON.stringify(options.name)}`);
  }
}
