// Loopback ports for the servers tests start (JupyterLab, redis-server), and a server that never answers.
import { type AddressInfo, type Socket, createServer } from "node:net";

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
