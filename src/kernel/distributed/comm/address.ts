// Where a data listener is: `unix://PATH` (a LocalCluster worker's socket file), `tcp://HOST:PORT`
// and `tls://HOST:PORT` (a Redis worker's, reachable from other machines; tls:// is TCP under
// TLS). Read once into a CommAddress; anything else is a CommAddressError naming the address.

export type CommAddress =
  | { readonly scheme: "unix"; readonly path: string }
  | { readonly scheme: "tcp" | "tls"; readonly host: string; readonly port: number };

export type NetworkAddress = Extract<CommAddress, { readonly scheme: "tcp" | "tls" }>;

export class CommAddressError extends Error {
  override name = "CommAddressError";
}

/** Reads `text`; `allowed` narrows the schemes accepted (a listener option takes no unix:// path, say). */
export function parseCommAddress(text: string, allowed: readonly CommAddress["scheme"][] = ["unix", "tcp", "tls"]): CommAddress {
  const expected = `expected ${allowed.map((name) => (name === "unix" ? "unix://PATH" : `${name}://HOST:PORT`)).join(" or ")}`;
  if (typeof text !== "string") throw new CommAddressError(`A data address must be a string (${expected}), got ${typeof text}`);
  const shown = JSON.stringify(text);
  const scheme = /^([a-z]+):\/\//.exec(text)?.[1];
  if (scheme === undefined || !(allowed as readonly string[]).includes(scheme)) throw new CommAddressError(`Not a data address: ${shown} (${expected})`);
  const rest = text.slice(scheme.length + 3);
  if (scheme === "unix") {
    if (rest === "") throw new CommAddressError(`The data address ${shown} names no socket path`);
    return { scheme, path: rest };
  }
  const { host, port } = parseHostPort(rest, shown);
  return { scheme: scheme as "tcp" | "tls", host, port };
}

/** `HOST:PORT` (an IPv6 host in brackets: `[::1]:8786`); `what` names the text in errors. Port 0: any free port. */
export function parseHostPort(text: string, what = JSON.stringify(text)): { readonly host: string; readonly port: number } {
  const match = /^(?:\[([^\]]*)\]|([^:/\[\]]*)):([^:]*)$/.exec(text);
  if (match === null) throw new CommAddressError(`${what} is not HOST:PORT (an IPv6 host goes in brackets: [::1]:8786)`);
  const host = match[1] ?? match[2];
  const portText = match[3];
  if (host === "") throw new CommAddressError(`${what} names no host`);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new CommAddressError(`${what} has port ${JSON.stringify(portText)}, not a number from 0 to 65535`);
  return { host, port };
}

/** The address as text again: `tcp://10.0.0.5:40123`, `tls://[::1]:8786`, `unix:///tmp/…`. */
export function formatCommAddress(address: CommAddress): string {
  if (address.scheme === "unix") return `unix://${address.path}`;
  return `${address.scheme}://${formatHostPort(address.host, address.port)}`;
}

export function formatHostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** Whether `host` stands for every interface (a listener bound there cannot tell peers where it is). */
export function isWildcardHost(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "";
}
