// Re-executes notebooks against the real tslab kernel and saves them with their outputs, so the
// notebooks in the repository show results without a kernel. Stops at the first failing notebook.
// Usage: npm run notebooks [-- notebooks/some.ipynb ...]   (default: every notebooks/*.ipynb)
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureSelfLink } from "./setup/link-self.mjs";
import { ensurePythonEnv } from "./setup/python.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: root, stdio: "inherit" });
ensureSelfLink();
const { python, env } = ensurePythonEnv();

const given = process.argv.slice(2);
const notebooks = given.length > 0
  ? given
  : readdirSync(join(root, "notebooks")).filter((name) => name.endsWith(".ipynb")).sort().map((name) => join("notebooks", name));

const scratch = mkdtempSync(join(tmpdir(), "tsdask-notebooks-"));
try {
  for (const notebook of notebooks) {
    const report = join(scratch, "report.json");
    const runner = join(root, "test/notebook/run_notebook.py");
    // A plot's static image follows its display as an update; the drain waits for the last ones.
    const result = spawnSync(python, ["-Xfrozen_modules=off", runner, notebook, "--report", report, "--save", notebook, "--drain", "2"], {
      cwd: root,
      env,
      stdio: "inherit",
    });
    const { ok, elapsed_seconds: seconds, cells } = JSON.parse(readFileSync(report, "utf8"));
    if (!ok || result.status !== 0) {
      for (const cell of cells.filter((c) => c.status !== "ok" || !c.idle)) {
        console.error(`${notebook} cell ${cell.index}: ${cell.status}\n${cell.stderr}`);
      }
      process.exit(1);
    }
    console.log(`${notebook}: ${cells.length} code cells ok in ${seconds} s, outputs saved`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
