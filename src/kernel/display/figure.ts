// How figures reach the user: in a tslab notebook, shown in the calling cell at once (tsdask's
// payload and a text line) and completed by a static SVG sent later as an update of the same
// output; elsewhere (or when asked), written to a standalone HTML file whose path is printed.
// Every display-producing call (profiler plots, task stream, statistical profile, memory,
// bandwidth, the FPM panel) goes through `present`, or `presentArriving` when its data must first
// come from the workers; a figure left as a cell's value shows itself (`inspectFigure`).

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { InspectOptions } from "node:util";
import type { MimeBundle } from "../../protocol";
import { type DisplayHandle, type UpdateOutput, displayArriving, displayNow } from "./handle";
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
  saveAsAsked(figure, options, what);
  return showInTwoSteps(figure, figure);
}

/** Something that carries a figure: what `client.profile({ plot: true })` and its kin give. */
export interface Plotted<F extends Figure = Figure> {
  readonly figure: F;
}

/** What shows while a figure's data is on its way, and the line its handle prints. */
export interface PendingText {
  /** Shown in the output until the figure replaces it: "Worker profile: asking the workers…". */
  readonly pending: string;
  /** What the handle prints (before the data is in, so it names no figures from it). */
  readonly summary: string;
}

/**
 * `present` for a figure whose data is still on its way (asked of the workers): in a notebook
 * `text.pending` shows in the calling cell at once, whether or not the caller awaits, and the
 * figure replaces it in the same output once `arriving` gives it (the live figure at once, then
 * with its static image). Elsewhere the figure is saved once it is in. Awaiting the handle gives
 * what `arriving` gave.
 */
export function presentArriving<P extends Plotted>(text: PendingText, arriving: Promise<P>, options: PresentOptions, what: string): DisplayHandle<P, undefined> {
  const saved = arriving.then((plotted) => {
    saveAsAsked(plotted.figure, options, what);
    return plotted;
  });
  return displayArriving({ "text/plain": text.pending }, {
    summary: text.summary,
    arriving: saved,
    complete: ({ figure }, update) => completeInTwoSteps(figure, update),
  });
}

/** Saves the figure's page if asked (by default: outside a notebook), printing where outside one. */
export function saveAsAsked(figure: Figure, options: PresentOptions, what: string): void {
  const notebook = kernelChannel() !== null;
  if (options.save ?? !notebook) {
    figure.file = figure.save(options.filename);
    if (!notebook) console.log(`${what} written to ${figure.file}`);
    if (options.show) openInBrowser(figure.file);
  }
}

export type Showable = Pick<Figure, "summary" | "liveBundle" | "notebookImage">;

/** The notebook part of `present`: the live bundle now, the same with its SVG as an update. */
export function showInTwoSteps<T>(figure: Showable, value: T): DisplayHandle<T> {
  const id = randomUUID();
  markShown(figure);
  return displayNow(figure.liveBundle(id, 0), {
    summary: figure.summary,
    value,
    complete: async () => ({ ...figure.liveBundle(id, 1), "image/svg+xml": await figure.notebookImage() }),
  });
}

/** The same two steps as updates of an output already shown (a placeholder, an older state). */
export async function completeInTwoSteps(figure: Showable, update: UpdateOutput): Promise<MimeBundle> {
  const id = randomUUID();
  markShown(figure);
  update(figure.liveBundle(id, 0));
  return { ...figure.liveBundle(id, 1), "image/svg+xml": await figure.notebookImage() };
}

/** The kernel request (cell run) each figure was last shown in. */
const shownIn = new WeakMap<object, unknown>();

function markShown(figure: object): void {
  const channel = kernelChannel();
  if (channel !== null) shownIn.set(figure, channel.currentRequest());
}

/**
 * What a figure prints as a value, for its `[inspect.custom]`: `line`. Left as a cell's value in
 * a notebook (`ts.figure`), it is also shown in the running cell, as Jupyter shows such a value
 * (tslab only prints it). Not when it is part of a larger value being printed (`depth` below the
 * top: `{ data, figure }` shows nothing twice), nor when this cell has already shown it
 * (`await visualize()` gives back the plot it has just shown).
 */
export function inspectFigure(figure: Showable, line: string, depth: number, options: InspectOptions): string {
  const channel = kernelChannel();
  const topLevel = depth === options.depth;
  if (channel !== null && topLevel && !shownInThisCell(figure, channel.currentRequest())) showInTwoSteps(figure, figure);
  return line;
}

/** Whether the figure was shown during `request` (when the channel cannot tell requests apart: ever). */
function shownInThisCell(figure: object, request: unknown): boolean {
  if (!shownIn.has(figure)) return false;
  return request === undefined || shownIn.get(figure) === request;
}

/** Opens a file with the desktop's opener; a headless machine has none, which is reported, not thrown. */
function openInBrowser(path: string): void {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  const child = spawn(command, [path], { detached: true, stdio: "ignore" });
  child.on("error", (error) => console.warn(`Could not open ${path} (${command}: ${error.message}); open it in a browser yourself`));
  child.unref();
}
