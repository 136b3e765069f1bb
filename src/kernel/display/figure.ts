// How figures reach the user: in a tslab notebook, shown in the calling cell at once (tsdask's
// payload and a text line) and completed by a static SVG sent later as an update of the same
// output; elsewhere (or when asked), written to a standalone HTML file whose path is printed.
// Every display-producing call (profiler plots, task stream, statistical profile, memory,
// bandwidth, the FPM panel) goes through `present`.

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { MimeBundle } from "../../protocol";
import { type DisplayHandle, displayNow } from "./handle";
import { kernelChannel } from "./tslab";

/** Something shown in two steps in a notebook, and saved as a page elsewhere. */
export interface Figure {
  /** Where the figure was saved, if it was. */
  file: string | undefined;
  /** One line saying what the figure shows. */
  readonly summary: string;
  /** Writes the standalone HTML page and returns its absolute path. */
  save(filename: string): string;
  /** tsdask's payload (output `id`, update number `seq`) and a text fallback: what a notebook shows at once. */
  liveBundle(id: string, seq: number): MimeBundle;
  /** The static picture for saved notebooks and frontends without tsdask's extension (kept small). */
  notebookImage(): Promise<string>;
}

export interface PresentOptions {
  /** Write the HTML file; default: outside a notebook only. */
  readonly save?: boolean;
  readonly filename: string;
  /** Open the saved file with the desktop's opener. */
  readonly show?: boolean;
}

/**
 * Shows `figure` where the user is and returns its handle (awaiting it gives the figure once the
 * static image is in). `what` names the figure in the "written to" line.
 */
export function present<F extends Figure>(figure: F, options: PresentOptions, what: string): DisplayHandle<F> {
  const notebook = kernelChannel() !== null;
  if (options.save ?? !notebook) {
    figure.file = figure.save(options.filename);
    if (!notebook) console.log(`${what} written to ${figure.file}`);
    if (options.show) openInBrowser(figure.file);
  }
  return showInTwoSteps(figure, figure);
}

/** The notebook part of `present`: the live bundle now, the same with its SVG as an update. */
export function showInTwoSteps<T>(figure: Pick<Figure, "summary" | "liveBundle" | "notebookImage">, value: T): DisplayHandle<T> {
  const id = randomUUID();
  return displayNow(figure.liveBundle(id, 0), {
    summary: figure.summary,
    value,
    complete: async () => ({ ...figure.liveBundle(id, 1), "image/svg+xml": await figure.notebookImage() }),
  });
}

/** Opens a file with the desktop's opener; a headless machine has none, which is reported, not thrown. */
function openInBrowser(path: string): void {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  const child = spawn(command, [path], { detached: true, stdio: "ignore" });
  child.on("error", (error) => console.warn(`Could not open ${path} (${command}: ${error.message}); open it in a browser yourself`));
  child.unref();
}
