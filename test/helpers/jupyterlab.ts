// A real JupyterLab server and a real headless Chromium for the browser tests. The server runs
// from the project's .venv on a free loopback port with a token, in throwaway Jupyter dirs, with
// tsdask installed into a temporary prefix by `tsdask install --prefix` (the user's install path).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, type Page, chromium } from "playwright-core";
import { freePort } from "./net";
import { within } from "./wait";

export const ROOT = process.cwd();

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set: run the tests with \`npm test\``);
  return value;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface LabServer {
  readonly baseUrl: string;
  readonly token: string;
  /** The server's root directory, holding copies of the notebooks it was started with. */
  readonly root: string;
  /** Node processes whose command line names this server's runtime dir (its kernels). */
  kernelPids(): number[];
  stop(): Promise<void>;
}

/** Processes whose command line contains `needle`, from /proc. */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle)) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

export async function startJupyterLab(notebooks: readonly string[]): Promise<LabServer> {
  const jupyter = requiredEnv("TSDASK_JUPYTER");
  const scratch = mkdtempSync(join(tmpdir(), "tsdask-lab-"));
  const dirs = Object.fromEntries(
    ["root", "prefix", "config", "data", "runtime", "settings", "workspaces"].map((name) => [name, join(scratch, name)]),
  ) as Record<"root" | "prefix" | "config" | "data" | "runtime" | "settings" | "workspaces", string>;
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  for (const notebook of notebooks) cpSync(notebook, join(dirs.root, basename(notebook)));
  // Notebooks import "tsdask" as a user's would, from node_modules: link this checkout there.
  mkdirSync(join(dirs.root, "node_modules"));
  symlinkSync(ROOT, join(dirs.root, "node_modules/tsdask"), "dir");
  // No "get Jupyter news?" toast over the screenshots (and no fetch to the internet).
  const notification = join(dirs.settings, "@jupyterlab/apputils-extension");
  mkdirSync(notification, { recursive: true });
  writeFileSync(join(notification, "notification.jupyterlab-settings"), JSON.stringify({ fetchNews: "false" }));

  execFileSync(process.execPath, [join(ROOT, "dist/cli/index.js"), "install", "--prefix", dirs.prefix], { stdio: "pipe" });

  const port = await freePort();
  const token = randomBytes(16).toString("hex");
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    JUPYTER_PATH: join(dirs.prefix, "share/jupyter"),
    JUPYTER_CONFIG_DIR: dirs.config,
    JUPYTER_DATA_DIR: dirs.data,
    JUPYTER_RUNTIME_DIR: dirs.runtime,
    JUPYTERLAB_SETTINGS_DIR: dirs.settings,
    JUPYTERLAB_WORKSPACES_DIR: dirs.workspaces,
  };
  const args = [
    "lab",
    "--no-browser",
    "--ServerApp.ip=127.0.0.1",
    `--ServerApp.port=${port}`,
    "--ServerApp.port_retries=0",
    `--IdentityProvider.token=${token}`,
    `--ServerApp.root_dir=${dirs.root}`,
    "--LabApp.expose_app_in_browser=True",
    ...(process.getuid?.() === 0 ? ["--allow-root"] : []),
  ];
  const child: ChildProcess = spawn(jupyter, args, { env, cwd: dirs.root, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let running = true;
  void exited.then(() => (running = false));

  const api = (path: string, method = "GET"): Promise<Response> =>
    fetch(`${baseUrl}${path}`, { method, headers: { Authorization: `token ${token}` } });

  const server: LabServer = {
    baseUrl,
    token,
    root: dirs.root,
    kernelPids: () => processesMentioning(dirs.runtime),
    async stop() {
      if (running) {
        // The server's own shutdown also shuts its kernels down; a hard kill would orphan them.
        await api("/api/shutdown", "POST").catch(() => undefined);
        await within(exited, 15_000);
      }
      if (running && child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // it exited just now
        }
      }
      await within(exited, 5_000);
      rmSync(scratch, { recursive: true, force: true });
    },
  };

  const deadline = Date.now() + 90_000;
  for (;;) {
    if (!running) {
      await server.stop();
      throw new Error(`jupyter lab exited before it was ready:\n${log}`);
    }
    const ready = await api("/api/status").then((response) => response.ok, () => false);
    if (ready) return server;
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`jupyter lab was not ready within 90 s:\n${log}`);
    }
    await sleep(250);
  }
}

/** Debian's Chromium (never a downloaded browser), with the project's launch flags. */
export async function launchChromium(): Promise<Browser> {
  const setup = pathToFileURL(join(ROOT, "scripts/setup/chromium.mjs")).href;
  const { CHROMIUM_ARGS } = (await import(setup)) as { CHROMIUM_ARGS: string[] };
  return chromium.launch({ executablePath: requiredEnv("TSDASK_CHROMIUM"), args: CHROMIUM_ARGS, headless: true });
}

/** Stops the server (and so its kernels); returns the kernel processes that outlived it. */
/** A new page whose uncaught errors from tsdask's extension code (not other extensions' noise) land in `errors`. */
export async function newLabPage(browser: Browser, viewport: { width: number; height: number }, errors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (error) => {
    if (error.stack?.includes("/extensions/tsdask/")) errors.push(error.stack);
  });
  return page;
}

export async function stopLab(server: LabServer | undefined): Promise<number[]> {
  const kernels = server?.kernelPids() ?? [];
  await server?.stop();
  return kernels.filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
}
