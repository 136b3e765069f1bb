// Runs a notebook against the real tslab kernel (run_notebook.py, via the test venv's Python)
// and returns its report: every cell's reply status and every iopub message it caused.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";

const root = resolve(__dirname, "../../..");
const runner = join(root, "test/notebook/run_notebook.py");

/** One iopub message, as received. `time`: seconds since its cell's execute_request was sent. */
export interface IopubMessage {
  readonly msg_type: string;
  readonly display_id: string | null;
  readonly content: Readonly<Record<string, unknown>>;
  readonly time: number;
}

export type CellStatus = "ok" | "error" | "abort" | "timeout" | "dead" | "no reply" | "not run";

export interface CellReport {
  /** Position in the notebook's cells (markdown included). */
  readonly index: number;
  readonly source: string;
  readonly status: CellStatus;
  readonly execution_count: number | null;
  readonly elapsed_seconds: number | null;
  /** When the harness interrupted the kernel, seconds after the cell's request (null: it did not). */
  readonly interrupted_at: number | null;
  /** Whether the cell's `status: idle` arrived (tslab loses it when its socket is flooded). */
  readonly idle: boolean;
  readonly stdout: string;
  readonly stderr: string;
  /** Every iopub message whose parent is this cell's request, in arrival order. */
  readonly messages: readonly IopubMessage[];
}

export interface NotebookReport {
  readonly notebook: string;
  /** Every code cell replied "ok" and went idle. */
  readonly ok: boolean;
  /** A timeout or a dead kernel, which stopped the run. */
  readonly error: string | null;
  readonly kernel_start_seconds: number;
  readonly elapsed_seconds: number;
  readonly cells: readonly CellReport[];
  readonly unassigned_messages: readonly IopubMessage[];
}

export interface RunOptions {
  /** Write the executed notebook, with its outputs, here. */
  readonly save?: string;
  /** Per cell; default 120 s. */
  readonly timeoutSeconds?: number;
  /** How long to keep recording after the last cell (late display updates); default 0.5 s. */
  readonly drainSeconds?: number;
  /**
   * Run a copy in a temporary folder, with tsdask linked into its node_modules as in a user's
   * project: the files the notebook writes (reports, plots) land there, not in the checkout, and
   * tslab type-checks with its own @types/node instead of all 41 @types packages of the checkout's
   * node_modules (1.5–2 CPU-s less per kernel).
   */
  readonly inTemporaryCopy?: boolean;
}

/** Executes the notebook top to bottom in a fresh kernel started in the notebook's directory. */
export async function runNotebook(path: string, options: RunOptions = {}): Promise<NotebookReport> {
  const python = process.env.TSDASK_PYTHON;
  if (python === undefined || process.env.JUPYTER_PATH === undefined) {
    throw new Error("TSDASK_PYTHON and JUPYTER_PATH are not set: run notebook tests through `npm test`");
  }
  const timeout = options.timeoutSeconds ?? 120;
  const dir = mkdtempSync(join(tmpdir(), "tsdask-nb-"));
  const reportPath = join(dir, "report.json");
  let notebook = resolve(root, path);
  if (options.inTemporaryCopy === true) {
    const copy = join(dir, "notebook");
    mkdirSync(join(copy, "node_modules"), { recursive: true });
    symlinkSync(root, join(copy, "node_modules/tsdask"), "dir");
    notebook = join(copy, basename(path));
    cpSync(resolve(root, path), notebook);
  }
  const args = ["-Xfrozen_modules=off", runner, notebook, "--report", reportPath];
  args.push("--timeout", String(timeout), "--drain", String(options.drainSeconds ?? 0.5));
  if (options.save !== undefined) args.push("--save", resolve(root, options.save));
  try {
    // nbclient enforces the per-cell timeout; this limit only catches a runner that hangs itself.
    const { code, stderr } = await run(python, args, (codeCells(path) * timeout + 60) * 1000);
    let report: NotebookReport;
    try {
      report = JSON.parse(readFileSync(reportPath, "utf8")) as NotebookReport;
    } catch {
      throw new Error(`run_notebook.py exited with ${code} and no report for ${path}:\n${stderr}`);
    }
    return report;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function codeCells(path: string): number {
  const notebook = JSON.parse(readFileSync(resolve(root, path), "utf8")) as { cells: { cell_type: string }[] };
  return notebook.cells.filter((cell) => cell.cell_type === "code").length;
}

/** Runs a child process to its end; past `limitMs` it is sent SIGTERM (the runner then shuts its kernel down). */
function run(command: string, args: string[], limitMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGTERM"), limitMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stderr });
    });
  });
}

/** The failed cells, readably, for assertion messages. */
export function describeFailures(report: NotebookReport): string {
  const lines = report.error !== null ? [report.error] : [];
  for (const cell of report.cells) {
    if (cell.status === "ok" && cell.idle) continue;
    lines.push(`cell ${cell.index}: ${cell.status}${cell.idle ? "" : ", no idle"}\n${cell.source}\n--- stderr:\n${cell.stderr}`);
  }
  return `${report.notebook}: ${lines.join("\n\n")}`;
}

/** A cell's outputs of the display kind: the first showing, then its updates. */
export function displays(cell: CellReport): IopubMessage[] {
  return cell.messages.filter((m) => m.msg_type === "display_data" || m.msg_type === "update_display_data");
}

/** The cell whose source starts with `marker` (tests find cells by content, not position). */
export function cellStartingWith(report: NotebookReport, marker: string): CellReport {
  const cell = report.cells.find((c) => c.source.startsWith(marker));
  if (cell === undefined) throw new Error(`${report.notebook}: no cell starts with ${JSON.stringify(marker)}`);
  return cell;
}
