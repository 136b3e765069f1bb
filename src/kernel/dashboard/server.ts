// The dashboard outside JupyterLab: a small HTTP server (loopback by default) that serves the
// dashboard page and streams the publisher's snapshots to it as server-sent events. The page is
// standalonePage's, so it is the same views as the JupyterLab panels, fed by the same snapshots.

import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { isIP } from "node:net";
import { standalonePage } from "../display/page";
import type { DashboardSnapshot } from "../../protocol/dashboard";
import { type DashboardPublisher, dashboardPublisher } from "./publisher";

export const DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787";

export interface DashboardServer {
  /** The page's address, e.g. `http://127.0.0.1:8787/`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops serving and ends every open page's stream. */
  close(): Promise<void>;
}

export interface ServeDashboardOptions {
  /** When the port is taken, serve on a free one instead (with a warning), as Dask does (default true). */
  readonly fallbackToRandomPort?: boolean;
  /** What `/metrics` serves (default: the newest open Client's cluster, see registerMetricsSource). */
  readonly metrics?: MetricsSource;
}

/** A cluster's metrics in Prometheus' text format, read when `/metrics` is scraped. */
export type MetricsSource = () => Promise<{ readonly contentType: string; readonly body: string }>;

/** Open clusters' metrics, newest last: `/metrics` of a server given none serves the newest. */
const metricsSources: MetricsSource[] = [];

/** Makes `source` what `/metrics` serves by default, until the returned function is called. */
export function registerMetricsSource(source: MetricsSource): () => void {
  metricsSources.push(source);
  return () => {
    const at = metricsSources.indexOf(source);
    if (at >= 0) metricsSources.splice(at, 1);
  };
}

const SERVE_OPTIONS = ["fallbackToRandomPort", "metrics"];

/** "host:port", ":port" or a port (number or text); no host means loopback. IPv6 hosts in brackets. */
export function parseDashboardAddress(address: string | number): { host: string; port: number } {
  const text = String(address).trim();
  const match = /^(?:(\[[^\]]+\]|[^:]*):)?(\d+)$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TypeError(`dashboard address must be "host:port", ":port" or a port number, got ${JSON.stringify(address)}`);
  }
  const host = (match[1] ?? "").replace(/^\[(.*)\]$/, "$1");
  return { host: host === "" ? "127.0.0.1" : host, port };
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Serves the dashboard page for `publisher`'s snapshots (default: the process's publisher, which
 * every DashboardFeed and Client feeds). Loopback unless `address` names another interface. The
 * server and its connections never keep the process alive: a script ends when its work does.
 */
export async function serveDashboard(
  address: string | number = DEFAULT_DASHBOARD_ADDRESS,
  publisher: DashboardPublisher = dashboardPublisher,
  options: ServeDashboardOptions = {},
): Promise<DashboardServer> {
  const { host, port } = parseDashboardAddress(address);
  for (const name of Object.keys(options)) {
    if (!SERVE_OPTIONS.includes(name)) throw new TypeError(`Unknown serveDashboard option "${name}"; known: ${SERVE_OPTIONS.join(", ")}`);
  }
  const page = standalonePage({
    title: "tsdask dashboard",
    body: '<div id="tsdask-dashboard"></div>',
    script: 'tsdaskViews.mountDashboardPage(document.getElementById("tsdask-dashboard"), { events: "events" });',
    connectToOrigin: true,
  });
  const streams = new Set<ServerResponse>();
  let unsubscribe: (() => void) | undefined;
  /** One encoding per snapshot, whatever the number of pages open. */
  const event = (snapshot: DashboardSnapshot): string => `id: ${snapshot.seq}\ndata: ${JSON.stringify(snapshot)}\n\n`;
  const broadcast = (snapshot: DashboardSnapshot): void => {
    const text = event(snapshot);
    // A page that cannot keep up skips snapshots (each is complete) rather than queueing them.
    for (const stream of streams) if (!stream.writableNeedDrain) stream.write(text);
  };

  const server = createServer((request, response) => {
    if (!hostAllowed(request, host)) return reply(response, 403, "text/plain; charset=utf-8", "Forbidden: unexpected Host header\n");
    if (request.method !== "GET" && request.method !== "HEAD") return reply(response, 405, "text/plain; charset=utf-8", "Method not allowed\n");
    const path = new URL(request.url ?? "/", "http://dashboard").pathname;
    if (path === "/" || path === "/status") return reply(response, 200, "text/html; charset=utf-8", page);
    if (path === "/snapshot.json") return reply(response, 200, "application/json", JSON.stringify(publisher.current()));
    if (path === "/metrics") return void serveMetrics(response, options.metrics ?? metricsSources[metricsSources.length - 1]);
    if (path === "/events") {
      response.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
      response.write("retry: 2000\n\n");
      const latest = publisher.latest;
      if (latest !== undefined) response.write(event(latest));
      streams.add(response);
      // Subscribed only while a page is open: with none, the publisher builds nothing.
      unsubscribe ??= publisher.subscribe(broadcast);
      request.on("close", () => {
        streams.delete(response);
        if (streams.size === 0) {
          unsubscribe?.();
          unsubscribe = undefined;
        }
      });
      return;
    }
    reply(response, 404, "text/plain; charset=utf-8", "Not found\n");
  });
  // Neither the server nor a page's open stream keeps the process alive.
  server.on("connection", (socket: Socket) => socket.unref());

  const listen = (tryPort: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException): void => reject(error);
      server.once("error", onError);
      server.listen(tryPort, host, () => {
        server.off("error", onError);
        resolve();
      });
    });
  try {
    await listen(port);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" && port !== 0 && options.fallbackToRandomPort !== false) {
      await listen(0);
      process.emitWarning(`Port ${port} is already in use (perhaps another cluster's dashboard); serving the dashboard on port ${(server.address() as AddressInfo).port} instead`);
    } else {
      const reason = code === "EADDRINUSE" ? "the port is already in use" : code === "EADDRNOTAVAIL" ? "no such local address" : (error as Error).message;
      throw new Error(`serveDashboard: cannot listen on ${JSON.stringify(String(address))}: ${reason}`, { cause: error });
    }
  }
  server.unref();

  const bound = server.address() as AddressInfo;
  const urlHost = isIP(bound.address) === 6 ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${urlHost}:${bound.port}/`,
    host: bound.address,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        unsubscribe?.();
        unsubscribe = undefined;
        for (const stream of streams) stream.end();
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Prometheus' scrape: the source's text, a comment when no cluster is open, a 500 naming the failure. */
async function serveMetrics(response: ServerResponse, source: MetricsSource | undefined): Promise<void> {
  if (source === undefined) return reply(response, 200, PROMETHEUS_TEXT, "# No cluster is open: connect a Client to see its metrics\n");
  try {
    const { contentType, body } = await source();
    reply(response, 200, contentType, body);
  } catch (error) {
    reply(response, 500, "text/plain; charset=utf-8", `Cannot collect the metrics: ${(error as Error).message}\n`);
  }
}

const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

function reply(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
  response.end(body);
}

/**
 * A loopback server answers only requests addressed to a loopback name: a web page elsewhere
 * cannot reach it through DNS rebinding (a hostile name resolving to 127.0.0.1).
 */
function hostAllowed(request: IncomingMessage, boundHost: string): boolean {
  if (!isLoopback(boundHost)) return true;
  const header = request.headers.host;
  if (header === undefined) return false;
  const name = header.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
  return isLoopback(name);
}
