// Reaching the tslab kernel this process is running as, and publishing MIME bundles on its
// iopub channel. Everything here depends on how tslab 1.0.x is built; see the notes per function.

import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type { MimeBundle } from "../../protocol";

/** One output area in the notebook: the first `show` creates it, later ones replace it in place. */
export interface OutputSlot {
  /** Throws what tslab throws: notably `EBUSY` when its zeromq socket is still writing. */
  show(bundle: MimeBundle): void;
}

/** The kernel's output channel. */
export interface DisplayChannel {
  /** How bundles travel: "bundle" sends them whole; "raw" only one MIME type each (see below). */
  readonly mode: "bundle" | "raw";
  /**
   * `hidden`: an id no cell ever shows. Every send is an update_display_data for it, which
   * frontends drop from all outputs (no output has that id) but still hand to iopub listeners:
   * the dashboard feed's channel (research/jupyterlab-ext.md §6).
   */
  newSlot(options?: { readonly hidden?: boolean }): OutputSlot;
  /**
   * A token for the execute request the kernel is running (or ran last): it changes when the next
   * one starts. Undefined when the channel cannot tell.
   */
  currentRequest(): unknown;
}

/** The part of tslab's public module (`import * as tslab from "tslab"`) we use. */
interface TslabPublic {
  newDisplay(): { raw(contentType: string, value: string): unknown };
}

/** tslab's display message content: what its iopub writer puts on the wire. */
interface DisplayContent {
  data: MimeBundle;
  metadata: Record<string, unknown>;
  transient: { display_id?: string };
}

/**
 * tslab's internal `dist/jupyter` module. tslab sets `lastWriteDisplayData` at the start of every
 * execute_request to a writer that publishes display_data (or update_display_data when `update`)
 * with that request as parent. It is null until the first cell runs.
 */
interface TslabJupyter {
  lastWriteDisplayData: ((content: DisplayContent, update: boolean) => void) | null;
  /** The class whose handleExecuteImpl(request, …) runs each execute_request's `code`. */
  JupyterHandlerImpl?: { prototype: { handleExecuteImpl?: (request: { code?: unknown }, ...rest: unknown[]) => unknown } };
}

/** The source of the cell running now, as the user typed it; undefined before recording began. */
let runningCell: string | undefined;
let recordingCells = false;

/**
 * The TypeScript of the notebook cell running now, as typed (tslab runs its compiled JavaScript,
 * where every cell-level name reads `exports.NAME`); undefined outside a tslab kernel and in the
 * cell that first loaded tsdask (recording starts with the next one).
 */
export function runningCellSource(): string | undefined {
  return runningCell;
}

/**
 * Starts remembering each execute_request's code. tslab keeps it nowhere a library can read, so
 * its handler's method is wrapped (on the prototype: the kernel's one handler reads it at each
 * request); a tslab without that method leaves runningCellSource undefined.
 */
export function recordCellSources(): void {
  if (recordingCells) return;
  recordingCells = true;
  const tslab = kernelTslab();
  const handler = tslab === null ? undefined : jupyterModuleOf(tslab)?.JupyterHandlerImpl?.prototype;
  const original = handler?.handleExecuteImpl;
  if (handler === undefined || typeof original !== "function") return;
  handler.handleExecuteImpl = function (this: unknown, request, ...rest) {
    runningCell = typeof request?.code === "string" ? request.code : undefined;
    return original.call(this, request, ...rest);
  };
}

let cached: DisplayChannel | null | undefined;

/** The running kernel's display channel, or null when this process is not a tslab kernel. */
export function kernelChannel(): DisplayChannel | null {
  if (cached === undefined) cached = findChannel();
  return cached;
}

/** Looks the channel up afresh (kernelChannel caches it: the kernel does not change). */
export function findChannel(): DisplayChannel | null {
  const tslab = kernelTslab();
  if (tslab === null) return null;
  const jupyter = jupyterModuleOf(tslab);
  return jupyter !== null ? bundleChannel(jupyter) : rawChannel(tslab);
}

/**
 * The kernel's own tslab instance. tslab's executor puts its `require` on `globalThis.__tslab__`
 * and that require answers "tslab" with the kernel's instance, whatever copy a plain
 * `require("tslab")` from this file would find (a nested copy throws "Not ready": its writer
 * was never set). Neither `require.main` nor the process's cwd is as safe: the main module is the
 * launching tslab, which may have handed over to another copy (the one nearest the notebook), and a
 * kernel started from a global install has no tslab under its cwd. Worker threads and plain Node
 * processes have no `__tslab__`.
 */
function kernelTslab(): TslabPublic | null {
  const hook = (globalThis as { __tslab__?: { require?: unknown } }).__tslab__;
  if (typeof hook?.require !== "function") return null;
  try {
    const tslab: unknown = (hook.require as (id: string) => unknown)("tslab");
    return typeof (tslab as Partial<TslabPublic> | null)?.newDisplay === "function" ? (tslab as TslabPublic) : null;
  } catch {
    return null;
  }
}

/**
 * tslab's public `display` API sends one MIME type per message, as a string, with no metadata:
 * it cannot send our payload as a JSON object next to its text fallback. The writer behind it,
 * `dist/jupyter`'s `lastWriteDisplayData`, takes a whole bundle. It is undocumented, so we take it
 * only from the same install as the kernel's public module (found through the module cache) and
 * only if it has the expected shape; otherwise the caller falls back to the public API.
 */
function jupyterModuleOf(tslab: TslabPublic): TslabJupyter | null {
  const entry = Object.values(require.cache).find((module) => module?.exports === tslab);
  if (entry === undefined) return null;
  try {
    const jupyter: unknown = createRequire(entry.filename)("./jupyter");
    return jupyter !== null && typeof jupyter === "object" && "lastWriteDisplayData" in jupyter
      ? (jupyter as TslabJupyter)
      : null;
  } catch {
    return null;
  }
}

function bundleChannel(jupyter: TslabJupyter): DisplayChannel {
  return {
    mode: "bundle",
    // tslab installs a new writer for every execute_request.
    currentRequest: () => jupyter.lastWriteDisplayData,
    newSlot({ hidden = false } = {}) {
      const displayId = randomBytes(8).toString("hex");
      let shown = hidden;
      return {
        show(bundle) {
          // Read the writer at each send: tslab replaces it for every execute_request, and the
          // newest one routes output to the cell running now (updates still find theirs by id).
          const write = jupyter.lastWriteDisplayData;
          if (write === null) throw new Error("tslab is not ready to display (no cell has run yet)");
          write({ data: bundle, metadata: {}, transient: { display_id: displayId } }, shown);
          shown = true;
        },
      };
    },
  };
}

/**
 * The fallback through tslab's public API: one MIME type per message, so each bundle is reduced
 * to its first (richest) entry, JSON values sent as JSON text. The labextension accepts our
 * payload as text too; a plain frontend then sees only that entry.
 */
function rawChannel(tslab: TslabPublic): DisplayChannel {
  return {
    mode: "raw",
    currentRequest: () => undefined,
    newSlot({ hidden = false } = {}) {
      let display: ReturnType<TslabPublic["newDisplay"]> | null = null;
      let shown = false;
      return {
        show(bundle) {
          const [mime, value] = Object.entries(bundle)[0] ?? ["text/plain", ""];
          if (display === null) {
            display = tslab.newDisplay();
            // tslab's Display sends update_display_data once its public `update` field is set.
            if (hidden) (display as { update?: boolean }).update = true;
          }
          try {
            display.raw(mime, typeof value === "string" ? value : JSON.stringify(value));
          } catch (error) {
            // tslab's Display marks itself shown before sending; if the first send failed, the
            // output does not exist and later updates to it would go nowhere: start afresh.
            if (!shown) display = null;
            throw error;
          }
          shown = true;
        },
      };
    },
  };
}
