// Loopback ports for the servers tests start (JupyterLab, redis-server), a server that never
// answers, and an intruder at a data listener.
import { type AddressInfo, type Socket, connect, createServer } from "node:net";
import { encodeValue, framesHeader } from "../../src/kernel/distributed/comm/frames";

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no TCP port was assigned");
  return address.port;
}

export interface SilentServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A server on 127.0.0.1 that accepts connections and never answers: a Redis behind a black hole. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Connects to a data listener at `host`:`port` (from `localAddress` when given) and sends a
 * get-data frame straight away, as a LocalCluster peer would, without any handshake; resolves
 * with every byte that came back once the listener closed the connection.
 */
export async function getDataWithoutHandshake(host: string, port: number, localAddress?: string): Promise<Buffer> {
  const socket = connect({ host, port, ...(localAddress === undefined ? {} : { localAddress }) });
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  // A TLS listener resets the connection.
  socket.on("error", () => {});
  const closed = new Promise((resolve) => socket.once("close", resolve));
  await new Promise((resolve) => socket.once("connect", resolve));
  const parts = encodeValue({ op: "get-data", keys: ["('x', 0)"], who: "intruder" });
  socket.write(Buffer.concat([framesHeader(parts), ...parts]));
  await closed;
  return Buffer.concat(received);
}
