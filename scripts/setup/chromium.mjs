// Debian's Chromium for the browser tests (never a downloaded browser build): installed with
// apt when missing. Returns the executable path for playwright-core's executablePath.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

export function ensureChromium() {
  const found = CANDIDATES.find((path) => existsSync(path));
  if (found !== undefined) return found;
  const asRoot = process.getuid?.() === 0 ? [] : ["sudo", "-n"];
  const apt = (...args) =>
    execFileSync(asRoot[0] ?? "apt-get", [...asRoot.slice(1), ...(asRoot.length > 0 ? ["apt-get"] : []), ...args], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  apt("update", "-qq");
  apt("install", "-y", "-qq", "--no-install-recommends", "chromium", "fonts-dejavu-core");
  const installed = CANDIDATES.find((path) => existsSync(path));
  if (installed === undefined) throw new Error("apt installed chromium, but no chromium executable was found");
  return installed;
}

/** Launch flags for a closed network: no background traffic, no sandbox as root. */
export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(ensureChromium());
