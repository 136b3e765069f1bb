// A Redis worker's data listener: where peers ask it for values it holds (Dask's get-data) and
// clients gather results it keeps, over TCP or TLS, once they prove they know their client's secret (../comm/handshake, ./peer-secret). It
// listens by default, on a free port of the interface this worker reaches Redis through (an
// address its peers, who reach the same Redis, can likely reach too); the address peers are told
// goes into the worker's registration (./registry), beside its heartbeat.

import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { type NetworkAddress, formatCommAddress, isWildcardHost, parseCommAddress, parseHostPort } from "../comm/address";
import type { Connection } from "../comm/connection";
import { type NetworkListener, listenNetwork } from "../comm/listen";
import type { GatherMessage, GetDataRequest } from "../messages";
import { type DataServerContext, type HeldValues, serveGather, serveGetData } from "../worker/peers";
import { DataListenerError, DataListenerOptionError } from "./errors";
import { PeerSecrets } from "./peer-secret";

export interface DataListenOptions {
  /**
   * `tcp://HOST:PORT` or `tls://HOST:PORT` to listen on (port 0: any free one), or false: no
   * listener (peers cannot fetch from this worker). Default: port 0 on the interface the Redis
   * connection uses, tls:// when `peerTls` is given.
   */
  readonly listen?: string | false;
  /** `HOST:PORT` peers are told to connect to, when it is not the listener's own (NAT, containers). */
  readonly contactAddress?: string;
  /** The listener's certificate and private key (PEM): peers then connect with TLS. */
  readonly peerTls?: { readonly cert: Buffer | string; readonly key: Buffer | string };
}

export interface ListenPlan {
  /** Where to listen; no host: the interface that reaches Redis, known once connected. */
  readonly bind: Omit<NetworkAddress, "host"> & { readonly host: string | undefined };
  /** What peers are told, when given (else the bound address, or the Redis interface for a wildcard host). */
  readonly contact: { readonly host: string; readonly port: number } | undefined;
}

/**
 * Where to listen, from the options (undefined: do not listen), checked before anything
 * connects. Contradictions are DataListenerOptionErrors (TypeErrors) naming the options.
 */
export function planDataListener(options: DataListenOptions): ListenPlan | undefined {
  const tls = options.peerTls !== undefined;
  if (options.listen === false) {
    if (options.contactAddress !== undefined) throw new DataListenerOptionError("contactAddress (--contact-address) tells peers where the data listener is, but listen is false (--no-listen)");
    if (tls) throw new DataListenerOptionError("peerTls (--tls-cert, --tls-key) secures the data listener, but listen is false (--no-listen)");
    return undefined;
  }
  if (options.listen !== undefined && typeof options.listen !== "string") throw new DataListenerOptionError(`listen (--listen) must be tcp://HOST:PORT, tls://HOST:PORT or false, got ${typeof options.listen}`);
  const bind = options.listen === undefined ? ({ scheme: tls ? "tls" : "tcp", host: undefined, port: 0 } as const) : listenAddress(options.listen);
  if (bind.scheme === "tls" && !tls) throw new DataListenerOptionError(`listen (--listen) ${options.listen} asks for TLS: give the listener's certificate and key (--tls-cert, --tls-key)`);
  if (bind.scheme === "tcp" && tls) throw new DataListenerOptionError(`listen (--listen) ${options.listen} is plain TCP, but a certificate and key are given (--tls-cert, --tls-key): write tls://${options.listen!.slice("tcp://".length)}`);
  let contact: ListenPlan["contact"];
  if (options.contactAddress !== undefined) {
    contact = withOptionName(() => parseHostPort(options.contactAddress!), "contactAddress (--contact-address)");
    if (contact.port === 0) throw new DataListenerOptionError(`contactAddress (--contact-address) ${JSON.stringify(options.contactAddress)} needs the port peers connect to, not 0`);
  }
  return { bind, contact };
}

function listenAddress(text: string): NetworkAddress {
  return withOptionName(() => parseCommAddress(text, ["tcp", "tls"]), "listen (--listen)") as NetworkAddress;
}

/** `parse()`, with its error one that names the option first. */
function withOptionName<T>(parse: () => T, option: string): T {
  try {
    return parse();
  } catch (error) {
    throw new DataListenerOptionError(`${option}: ${(error as Error).message}`);
  }
}

/** The local address of `redis`'s socket: the interface that reaches Redis. */
function redisInterfaceOf(redis: Redis): string {
  // ioredis's current socket is `stream` (see RedisTransport.applyKeepAlive).
  const address = (redis as unknown as { stream?: Socket }).stream?.localAddress;
  if (address === undefined) throw new Error("Cannot tell which interface reaches Redis: the connection has no socket");
  // An IPv4 peer of a dual-stack socket shows as ::ffff:a.b.c.d.
  return address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1");
}

/** The values a worker holds for one client's keys. */
export type HeldValuesOf = (clientId: string) => HeldValues;

/** What the listener needs of the worker it serves for, once the worker exists. */
export interface DataListenerHost extends Omit<DataServerContext, "store"> {
  readonly held: HeldValuesOf;
  /** Writes a line to the worker's log. */
  readonly log: (line: string) => void;
}

export class DataListener {
  private host: DataListenerHost | undefined;
  private readonly refusedRemotes = new Set<string>();

  private constructor(
    private readonly listener: NetworkListener,
    /** What peers are told: `tcp://HOST:PORT` or `tls://HOST:PORT`. */
    readonly address: string,
  ) {}

  /** Listens as `plan` says; the secrets of clients are read from `redis`. */
  static async start(plan: ListenPlan, options: DataListenOptions, redis: Redis): Promise<DataListener> {
    const redisInterface = redisInterfaceOf(redis);
    const secrets = new PeerSecrets(redis);
    let self: DataListener | undefined;
    const tls = options.peerTls === undefined ? undefined : { cert: Buffer.from(options.peerTls.cert), key: Buffer.from(options.peerTls.key) };
    const listener = await listenNetwork({ ...plan.bind, host: plan.bind.host ?? redisInterface }, {
      tls,
      secretOf: (clientId) => secrets.of(clientId),
      onConnection: (connection, clientId) => self!.serve(connection, clientId),
      onRejected: (remote, reason) => self!.refused(remote, reason),
    }).catch((error: Error) => {
      throw new DataListenerError(`The data listener: ${error.message} (--listen chooses another address, --no-listen none)`, { cause: error });
    });
    const bound = listener.address;
    const contact = plan.contact ?? { host: isWildcardHost(bound.host) ? redisInterface : bound.host, port: bound.port };
    self = new DataListener(listener, formatCommAddress({ scheme: bound.scheme, ...contact }));
    return self;
  }

  /** Starts answering peers for `host` (connections that arrive before are closed). */
  attach(host: DataListenerHost): void {
    this.host = host;
    const bound = formatCommAddress(this.listener.address);
    host.log(`listening for peers at ${this.address}${this.address === bound ? "" : ` (bound to ${bound})`}; they must know their client's secret`);
  }

  close(): Promise<void> {
    return this.listener.close();
  }

  private serve(connection: Connection, clientId: string): void {
    const host = this.host;
    if (host === undefined) return connection.destroy();
    // Peer connections never keep the worker alive.
    connection.setKeepsAlive(false);
    connection.on("message", (message) => {
      const request = message as Partial<GetDataRequest> | Partial<GatherMessage> | null;
      const fromPeer = request?.op === "get-data" && typeof request.who === "string";
      if (!(fromPeer || request?.op === "gather") || !Array.isArray(request.keys)) {
        host.log(`closed a data connection for client ${clientId}: it sent ${JSON.stringify(request?.op ?? null)}, not get-data or gather`);
        return connection.destroy();
      }
      try {
        const store = host.held(clientId);
        if (fromPeer) serveGetData(request as GetDataRequest, connection, { ...host, store });
        else serveGather(request as GatherMessage, connection, store, { add: (activity, value, unit) => host.digests.add(["get-data", activity, unit], value) }, host.log);
      } catch (error) {
        // A value that cannot be sent fails this peer's request, not the worker.
        host.log(`failed to serve a peer of client ${clientId}: ${(error as Error).message}`);
        connection.destroy();
      }
    });
  }

  /** Logs a refused connection once per remote address: a scanner or a misconfigured peer does not flood the log. */
  private refused(remote: string, reason: string): void {
    if (this.refusedRemotes.has(remote)) return;
    this.refusedRemotes.add(remote);
    this.host?.log(`refused a data connection from ${remote}: ${reason} (further refusals from ${remote} are not logged)`);
  }
}
