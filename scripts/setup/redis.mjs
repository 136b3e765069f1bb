// Debian's redis-server for the Redis tests and benchmarks, and openssl, with which they make
// TLS certificates (rediss://, workers' tls:// data listeners): installed with apt when missing.
// The tests start their own servers on free loopback ports; the system service the package
// starts (where systemd runs) is stopped and disabled, so nothing stays listening afterwards.
// Returns the executable path.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CANDIDATES = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"];
const OPENSSL_CANDIDATES = ["/usr/bin/openssl", "/usr/local/bin/openssl"];

export function ensureRedisServer() {
  const found = CANDIDATES.find((path) => existsSync(path));
  const missing = [...(found === undefined ? ["redis-server"] : []), ...(OPENSSL_CANDIDATES.some((path) => existsSync(path)) ? [] : ["openssl"])];
  if (missing.length === 0) return found;
  const asRoot = process.getuid?.() === 0 ? [] : ["sudo", "-n"];
  const privileged = (command, ...args) =>
    execFileSync(asRoot[0] ?? command, [...asRoot.slice(1), ...(asRoot.length > 0 ? [command] : []), ...args], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  privileged("apt-get", "update", "-qq");
  privileged("apt-get", "install", "-y", "-qq", "--no-install-recommends", ...missing);
  if (found !== undefined) return found;
  // Best effort: without systemd (containers) there is no service to stop.
  spawnSync(asRoot[0] ?? "systemctl", [...asRoot.slice(1), ...(asRoot.length > 0 ? ["systemctl"] : []), "disable", "--now", "redis-server"], {
    stdio: "ignore",
  });
  const installed = CANDIDATES.find((path) => existsSync(path));
  if (installed === undefined) throw new Error("apt installed redis-server, but no redis-server executable was found");
  return installed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(ensureRedisServer());
