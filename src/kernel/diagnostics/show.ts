// How diagnostics figures reach the user: in a tslab notebook, a MIME bundle shown in the running
// cell; elsewhere, a standalone HTML file whose path is printed. Every figure (profiler plots,
// task stream, statistical profile, memory, bandwidth) goes through here, so the notebook side
// can move to display/'s synchronous mechanism (shown at once, slow fallbacks sent later) by
// changing `showFigure` alone.

import { spawn } from "node:child_process";
import type { MimeBundle } from "../../protocol";
import { display, inNotebook } from "../display";

export interface Displayable {
  toMimeBundle(): Promise<MimeBundle>;
}

export interface Figure extends Displayable {
  /** Where the figure was saved, if it was. */
  file: string | undefined;
  /** Writes the standalone HTML page and returns its absolute path. */
  save(filename: string): string;
}

export interface PresentOptions {
  /** Write the HTML file; default: outside a notebook only. */
  readonly save?: boolean;
  readonly filename: string;
  /** Open the saved file with the desktop's opener. */
  readonly show?: boolean;
}

/** Shows the figure in the running notebook cell; false (nothing shown) outside a notebook. */
export async function showFigure(figure: Displayable): Promise<boolean> {
  if (!inNotebook()) return false;
  return display(await figure.toMimeBundle());
}

/** In a notebook: shows the figure. Elsewhere (or with `save`): writes it and says where. */
export async function present(figure: Figure, options: PresentOptions, what: string): Promise<void> {
  const notebook = await showFigure(figure);
  if (options.save ?? !notebook) {
    figure.file = figure.save(options.filename);
    if (!notebook) console.log(`${what} written to ${figure.file}`);
    if (options.show) openInBrowser(figure.file);
  }
}

/** Opens a file with the desktop's opener; a headless machine has none, which is reported, not thrown. */
function openInBrowser(path: string): void {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  const child = spawn(command, [path], { detached: true, stdio: "ignore" });
  child.on("error", (error) => console.warn(`Could not open ${path} (${command}: ${error.message}); open it in a browser yourself`));
  child.unref();
}
