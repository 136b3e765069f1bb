// A data listener on the network (tcp://, or tls:// with a certificate and key): every connection
// first passes the handshake of ./handshake, as raw bytes; only then does it become a Connection
// (./connection) carrying framed messages. A peer that fails it — a wrong or no secret, something
// that is not a tsdask peer, a TLS client that cannot agree, silence — is sent nothing, closed
// and reported to `onRejected` with its remote address.

import { type AddressInfo, type Server, type Socket, createServer } from "node:net";
import { type TLSSocket, createServer as createTlsServer } from "node:tls";
import { type NetworkAddress, formatCommAddress } from "./address";
import { CONNECT_TIMEOUT, Connection } from "./connection";
import { ListenerHandshake, type PeerSecret } from "./handshake";

export interface NetworkListenerOptions {
  /** tls:// addresses: the listener's certificate and private key (PEM). */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  /** The secret of the client a peer says it acts for; undefined when there is no such client. */
  readonly secretOf: (clientId: string) => Promise<PeerSecret | undefined>;
  /** A connection that passed the handshake, acting for `clientId`. */
  readonly onConnection: (connection: Connection, clientId: string) => void;
  /** A connection that did not: `remote` is the peer's IP address. */
  readonly onRejected: (remote: string, reason: string) => void;
  /** Seconds a peer has to finish the handshake (default CONNECT_TIMEOUT). */
  readonly handshakeTimeout?: number;
}

export interface NetworkListener {
  /** What it is bound to, with the port it got when asked for port 0. */
  readonly address: NetworkAddress;
  /** Stops listening and closes every connection, authenticated or not. */
  close(): Promise<void>;
}

/** Listens on `address` (tcp:// or tls://); rejects with an error naming it if it cannot. */
export function listenNetwork(address: NetworkAddress, options: NetworkListenerOptions): Promise<NetworkListener> {
  if ((address.scheme === "tls") !== (options.tls !== undefined)) {
    throw new TypeError(`${formatCommAddress(address)}: a tls:// listener needs a certificate and key, a tcp:// one takes none`);
  }
  const sockets = new Set<Socket>();
  const admit = (socket: Socket): void => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    authenticate(socket, options);
  };
  let server: Server;
  if (options.tls === undefined) server = createServer(admit);
  else {
    const handshakeTimeout = (options.handshakeTimeout ?? CONNECT_TIMEOUT) * 1000;
    server = createTlsServer({ cert: options.tls.cert, key: options.tls.key, handshakeTimeout }, (socket: TLSSocket) => admit(socket));
    // A client that is not speaking TLS, or rejects the certificate, never reaches the handshake.
    server.on("tlsClientError", (error: Error, socket: TLSSocket) => options.onRejected(socket.remoteAddress ?? "an unknown address", `TLS failed: ${error.message}`));
  }
  return new Promise((resolve, reject) => {
    server.once("error", (error) => reject(new Error(`Cannot listen on ${formatCommAddress(address)}: ${error.message}`, { cause: error })));
    server.listen(address.port, address.host, () => {
      const bound = server.address() as AddressInfo;
      resolve({
        address: { ...address, port: bound.port },
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const socket of sockets) socket.destroy();
          }),
      });
    });
  });
}

/** Runs the listener's side of the handshake on `socket`; an accepted one becomes a Connection. */
function authenticate(socket: Socket, options: NetworkListenerOptions): void {
  const remote = socket.remoteAddress ?? "an unknown address";
  const handshake = new ListenerHandshake();
  let settled = false;
  const reject = (reason: string): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    socket.destroy();
    options.onRejected(remote, reason);
  };
  const timeout = options.handshakeTimeout ?? CONNECT_TIMEOUT;
  const timer = setTimeout(() => reject(`it did not finish the handshake within ${timeout} s`), timeout * 1000);
  const onData = (chunk: Buffer): void => {
    const step = handshake.receive(chunk);
    if (step.kind === "fail") return reject(step.reason);
    if (step.kind === "more") return;
    options.secretOf(step.clientId).then(
      (secret) => {
        if (settled) return;
        const accept = step.verify(secret);
        if (accept === undefined) return reject(secret === undefined ? `it named client ${step.clientId}, which is not registered` : "it does not know the cluster's secret");
        settled = true;
        clearTimeout(timer);
        socket.off("data", onData);
        socket.off("error", onError);
        socket.off("close", onClose);
        socket.write(accept);
        options.onConnection(new Connection(socket), step.clientId);
      },
      (error: Error) => reject(`its client's secret could not be read: ${error.message}`),
    );
  };
  const onError = (error: Error): void => reject(`its connection failed: ${error.message}`);
  const onClose = (): void => reject("it closed the connection during the handshake");
  socket.on("data", onData);
  socket.on("error", onError);
  socket.on("close", onClose);
  socket.write(handshake.challenge);
}
