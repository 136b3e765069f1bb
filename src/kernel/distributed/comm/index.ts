// The wire between a cluster's processes: values as binary frames, scheduler ↔ worker message
// batches, framed unix/tcp/tls connections and listeners, and the handshake peers pass first.
export { CommAddressError, type CommAddress, formatCommAddress, parseCommAddress, parseHostPort } from "./address";
export { decodeBatch, encodeBatch, encodeBatches } from "./batches";
export { Connection, listen } from "./connection";
export { decodeValue, encodeValue } from "./frames";
export { ListenerHandshake, PeerHandshake, PeerSecret } from "./handshake";
export { type NetworkListener, listenNetwork } from "./listen";
