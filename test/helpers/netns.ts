// A private network of "hosts" for multi-host tests: each host is a Linux network namespace with
// one interface (eth0) on a bridge in a hub namespace, and this process reaches them through an
// interface of its own on the same bridge. Addresses come from a 10.x.y.0/24 the machine does not
// use; only the namespaces, interfaces and addresses made here are touched, and they are removed
// by `destroy()` (also on exit, and at the next creation if a test process died).
import { execFileSync } from "node:child_process";
import { randomInt } from "node:crypto";

export interface PrivateNetwork {
  /** The address of this process's interface on the network. */
  readonly hostAddress: string;
  /** The namespace of host `name` (for `ip netns exec`). */
  namespace(name: string): string;
  /** The address of host `name`. */
  address(name: string): string;
  /** Bytes received and sent on host `name`'s interface so far. */
  counters(name: string): { readonly received: number; readonly sent: number };
  /** Removes the namespaces and interfaces; safe to call twice. */
  destroy(): void;
}

const ip = (...args: string[]): string => execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** Why network namespaces cannot be made here, or undefined if they can. */
export function namespacesUnavailable(): string | undefined {
  const probe = `tsdask-${process.pid}-probe`;
  try {
    ip("netns", "add", probe);
    ip("netns", "del", probe);
    return undefined;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer | string }).stderr?.toString().trim();
    return `cannot create a network namespace (${stderr || (error as Error).message}): this needs the \`ip\` command and CAP_NET_ADMIN (root)`;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Namespaces and links left by test processes that died before cleaning up. */
function removeLeftovers(): void {
  for (const line of ip("netns", "list").split("\n")) {
    const match = /^(tsdask-(\d+)-\S+)/.exec(line);
    if (match !== null && !alive(Number(match[2]))) ip("netns", "del", match[1]);
  }
  for (const match of ip("-o", "link", "show").matchAll(/^\d+: (tsd(\d+))[@:]/gm)) {
    if (!alive(Number(match[2]))) ip("link", "del", match[1]);
  }
}

/** A /24 in 10.200–249.x.0 that no address or route of this machine overlaps. */
function unusedSubnet(): string {
  const used = ip("-4", "addr", "show") + ip("-4", "route", "show");
  for (let attempt = 0; attempt < 100; attempt++) {
    const prefix = `10.${200 + randomInt(50)}.${randomInt(256)}`;
    if (!used.includes(`${prefix}.`) && !used.includes("10.0.0.0/8")) return prefix;
  }
  throw new Error("found no unused 10.x.y.0/24 for a private test network");
}

export function createNetwork(hosts: readonly string[]): PrivateNetwork {
  removeLeftovers();
  const tag = `tsdask-${process.pid}`;
  const hub = `${tag}-hub`;
  const rootLink = `tsd${process.pid}`;
  const prefix = unusedSubnet();
  const namespaces = new Map(hosts.map((host) => [host, `${tag}-${host}`]));
  const addresses = new Map(hosts.map((host, i) => [host, `${prefix}.${10 + i}`]));
  let destroyed = false;
  const destroy = (): void => {
    if (destroyed) return;
    destroyed = true;
    process.off("exit", destroy);
    // Deleting a namespace deletes its interfaces, and with them the other end of each veth pair.
    for (const name of [...namespaces.values(), hub]) {
      try {
        ip("netns", "del", name);
      } catch {
        // never made, or gone already
      }
    }
    try {
      ip("link", "del", rootLink);
    } catch {
      // gone with the hub
    }
  };
  process.on("exit", destroy);
  try {
    ip("netns", "add", hub);
    ip("-n", hub, "link", "add", "br0", "type", "bridge");
    ip("-n", hub, "link", "set", "br0", "up");
    hosts.forEach((host, i) => {
      const ns = namespaces.get(host)!;
      ip("netns", "add", ns);
      ip("link", "add", `h${i}`, "netns", hub, "type", "veth", "peer", "name", "eth0", "netns", ns);
      ip("-n", hub, "link", "set", `h${i}`, "master", "br0", "up");
      ip("-n", ns, "addr", "add", `${addresses.get(host)}/24`, "dev", "eth0");
      ip("-n", ns, "link", "set", "eth0", "up");
      ip("-n", ns, "link", "set", "lo", "up");
    });
    ip("link", "add", rootLink, "type", "veth", "peer", "name", "root", "netns", hub);
    ip("-n", hub, "link", "set", "root", "master", "br0", "up");
    ip("addr", "add", `${prefix}.1/24`, "dev", rootLink);
    ip("link", "set", rootLink, "up");
  } catch (error) {
    destroy();
    throw error;
  }
  const known = <T>(map: Map<string, T>, host: string): T => {
    const value = map.get(host);
    if (value === undefined) throw new Error(`no host ${JSON.stringify(host)} on this network (hosts: ${hosts.join(", ")})`);
    return value;
  };
  return {
    hostAddress: `${prefix}.1`,
    namespace: (host) => known(namespaces, host),
    address: (host) => known(addresses, host),
    counters(host) {
      const stats = ip("-n", known(namespaces, host), "-s", "-j", "link", "show", "eth0");
      const [{ stats64 }] = JSON.parse(stats) as [{ stats64: { rx: { bytes: number }; tx: { bytes: number } } }];
      return { received: stats64.rx.bytes, sent: stats64.tx.bytes };
    },
    destroy,
  };
}
