// displayNow(): an output shown in the running cell at once, so it belongs to that cell whether
// or not the caller awaits, and completed later by an update of the same output (a static image
// that takes a moment to render). Its DisplayHandle is what display-producing calls return.
//
// Why an update and not a later display: tslab routes a new display_data to whichever cell is
// running when it is sent (an un-awaited one lands in the next cell), but an update_display_data
// reaches the original output by its display id (JupyterLab keeps listening to a finished cell's
// outputs). A headless runner (nbclient, nbconvert) reads only the messages of the cell it is
// running, so it loses an update sent after that cell went idle: when nothing awaited the
// handle, the update is sent once more as soon as the kernel starts its next cell.

import { inspect } from "node:util";
import type { MimeBundle } from "../../protocol";
import { DEFAULT_MIN_INTERVAL_MS, ThrottledDisplay } from "./live";
import { type DisplayChannel, kernelChannel } from "./tslab";

/** How long to wait for the next cell before giving up on sending a late update again. */
const NEXT_REQUEST_WAIT_MS = 10_000;
const NEXT_REQUEST_POLL_MS = 10;

/**
 * What a display-producing call returns (`prof.visualize()`, `displayPlot(…)`): the output is
 * already in the cell. Await it to wait until the output is complete (its static image is in);
 * that gives the call's result. As a cell's last value it prints its one-line summary.
 * `Now` is what `value` holds at once: the result itself, or undefined for a call whose data is
 * still on its way (`client.profile({ plot: true })`: the workers have not answered yet).
 */
export class DisplayHandle<T, Now extends T | undefined = T> implements PromiseLike<T> {
  /** Made by displayNow() and the calls built on it. */
  constructor(
    /** What the call made (e.g. a ProfilePlot), if it is available at once. */
    readonly value: Now,
    /** One line saying what is shown. */
    readonly summary: string,
    /** False outside a notebook, where nothing was shown. */
    readonly shown: boolean,
    private readonly completion: Promise<T>,
    /**
     * Set once something awaits the handle: the cell is then still running when the output
     * completes. Shared by handles of the same output (see `giving`).
     */
    private readonly awaited: { yes: boolean } = { yes: false },
  ) {
    // Un-awaited, a failure is reported in the output itself, not as an unhandled rejection.
    completion.catch(() => undefined);
  }

  then<A = T, B = never>(onfulfilled?: ((value: T) => A | PromiseLike<A>) | null, onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    this.awaited.yes = true;
    return this.completion.then(onfulfilled, onrejected);
  }

  /** Whether anything awaited this handle (read when the output completes). */
  get isAwaited(): boolean {
    return this.awaited.yes;
  }

  /** A handle of the same output that gives `value` (a call whose result holds more than its figure). */
  giving<U>(value: U): DisplayHandle<U> {
    return new DisplayHandle(value, this.summary, this.shown, this.completion.then(() => value), this.awaited);
  }

  [inspect.custom](): string {
    return this.summary;
  }
}

/** Replaces an output while it is being completed (sent at a bounded rate; the last one wins). */
export type UpdateOutput = (bundle: MimeBundle) => void;

export interface DisplayNowOptions<T> {
  /** One line saying what is shown: printed for the handle, and shown as text if completing fails. */
  readonly summary: string;
  /** What the handle holds and resolves to. */
  readonly value: T;
  /**
   * Makes the bundle that replaces the first one (e.g. the same with a static image added); it may
   * `update` the output on the way. Called only in a notebook, right away; the handle settles once
   * its bundle has been sent.
   */
  readonly complete?: (update: UpdateOutput) => Promise<MimeBundle>;
}

/**
 * Shows `bundle` in the running cell now (outside a notebook: nothing) and, given `complete`,
 * replaces it with `complete()`'s bundle when that is ready, as an update of the same output.
 */
export function displayNow<T>(bundle: MimeBundle, options: DisplayNowOptions<T>): DisplayHandle<T> {
  const { summary, value, complete } = options;
  if (complete !== undefined && typeof complete !== "function") throw new TypeError("displayNow: complete must be a function returning a promise of a MIME bundle");
  const work = complete === undefined ? undefined : async (update: UpdateOutput) => ({ value, final: await complete(update) });
  return showThenComplete(bundle, summary, value, Promise.resolve(value), work);
}

export interface DisplayArrivingOptions<T> {
  /**
   * One line saying what is being shown, printed for the handle. It is printed before `arriving`
   * settles, so it cannot tell anything of that data (the output, once complete, does).
   */
  readonly summary: string;
  /** The data to show; the handle resolves to it. Outside a notebook only this is awaited. */
  readonly arriving: Promise<T>;
  /**
   * The output for the data once it is in: `update` shows a first form at once (e.g. the live
   * plot), the promise gives the last (e.g. with its static image). Called only in a notebook.
   */
  readonly complete: (value: T, update: UpdateOutput) => Promise<MimeBundle>;
}

/**
 * For a call whose data is still on its way (a request to the workers): shows `placeholder` in
 * the running cell now, so the output belongs to the calling cell whether or not the caller
 * awaits, and replaces it with the data's output when the data is in.
 */
export function displayArriving<T>(placeholder: MimeBundle, options: DisplayArrivingOptions<T>): DisplayHandle<T, undefined> {
  const { summary, arriving, complete } = options;
  if (typeof complete !== "function") throw new TypeError("displayArriving: complete must be a function returning a promise of a MIME bundle");
  const work = async (update: UpdateOutput) => {
    const value = await arriving;
    return { value, final: await complete(value, update) };
  };
  return showThenComplete(placeholder, summary, undefined, arriving, work);
}

/**
 * The core of both: `bundle` now; then `work` (given a way to update the output) yields the
 * result and the output's last bundle. `settled` is what the handle gives when there is no work
 * to do or no notebook to show it in.
 */
function showThenComplete<T, Now extends T | undefined>(
  bundle: MimeBundle,
  summary: string,
  now: Now,
  settled: Promise<T>,
  work: ((update: UpdateOutput) => Promise<{ value: T; final: MimeBundle }>) | undefined,
): DisplayHandle<T, Now> {
  if (typeof summary !== "string") throw new TypeError(`displayNow: summary must be a string, got ${typeof summary}`);
  const channel = kernelChannel();
  if (channel === null) return new DisplayHandle(now, summary, false, settled);
  const output = new ThrottledDisplay(channel.newSlot(), DEFAULT_MIN_INTERVAL_MS);
  output.update(bundle); // the first update is sent at once, in the caller's turn
  if (work === undefined) return new DisplayHandle(now, summary, true, settled);

  const finish = async (final: MimeBundle): Promise<void> => {
    const sentIn = channel.currentRequest();
    await output.finish(final);
    // Awaited, the cell is still running and has it. Otherwise the cell it went to may be over.
    if (!handle.isAwaited && sentIn !== undefined) {
      onNextRequest(channel, sentIn, () => void output.finish(final).catch(() => undefined));
    }
  };
  const completion = Promise.resolve()
    .then(() => work((next) => output.update(next)))
    .then(
      async ({ value, final }) => {
        await finish(final);
        return value;
      },
      async (error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error);
        await finish({ ...bundle, "text/plain": `${summary} (could not complete this output: ${reason})` }).catch(() => undefined);
        throw error;
      },
    );
  const handle: DisplayHandle<T, Now> = new DisplayHandle(now, summary, true, completion);
  return handle;
}
/** Calls `fn` once the kernel runs a request other than `since`; gives up after a while (timer unref'd). */
function onNextRequest(channel: DisplayChannel, since: unknown, fn: () => void): void {
  const started = performance.now();
  const timer = setInterval(() => {
    if (channel.currentRequest() !== since) {
      clearInterval(timer);
      fn();
    } else if (performance.now() - started > NEXT_REQUEST_WAIT_MS) {
      clearInterval(timer);
    }
  }, NEXT_REQUEST_POLL_MS);
  timer.unref();
}
