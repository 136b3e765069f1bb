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
 * that gives `value`. As a cell's last value it prints its one-line summary.
 */
export class DisplayHandle<T> implements PromiseLike<T> {
  /** Set once something awaits the handle: the cell is then still running when the output completes. */
  private awaited = false;

  /** Made by displayNow() and the calls built on it. */
  constructor(
    /** What the call made (e.g. a ProfilePlot), available at once. */
    readonly value: T,
    /** One line saying what is shown. */
    readonly summary: string,
    /** False outside a notebook, where nothing was shown. */
    readonly shown: boolean,
    private readonly completion: Promise<T>,
  ) {
    // Un-awaited, a failure is reported in the output itself, not as an unhandled rejection.
    completion.catch(() => undefined);
  }

  then<A = T, B = never>(onfulfilled?: ((value: T) => A | PromiseLike<A>) | null, onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    this.awaited = true;
    return this.completion.then(onfulfilled, onrejected);
  }

  /** Whether anything awaited this handle (read when the output completes). */
  get isAwaited(): boolean {
    return this.awaited;
  }

  [inspect.custom](): string {
    return this.summary;
  }
}

export interface DisplayNowOptions<T> {
  /** One line saying what is shown: printed for the handle, and shown as text if completing fails. */
  readonly summary: string;
  /** What the handle holds and resolves to. */
  readonly value: T;
  /**
   * Makes the bundle that replaces the first one (e.g. the same with a static image added).
   * Called only in a notebook, right away; the handle settles once its bundle has been sent.
   */
  readonly complete?: () => Promise<MimeBundle>;
}

/**
 * Shows `bundle` in the running cell now (outside a notebook: nothing) and, given `complete`,
 * replaces it with `complete()`'s bundle when that is ready, as an update of the same output.
 */
export function displayNow<T>(bundle: MimeBundle, options: DisplayNowOptions<T>): DisplayHandle<T> {
  const { summary, value, complete } = options;
  if (typeof summary !== "string") throw new TypeError(`displayNow: summary must be a string, got ${typeof summary}`);
  if (complete !== undefined && typeof complete !== "function") throw new TypeError("displayNow: complete must be a function returning a promise of a MIME bundle");
  const channel = kernelChannel();
  if (channel === null) return new DisplayHandle(value, summary, false, Promise.resolve(value));
  const output = new ThrottledDisplay(channel.newSlot(), DEFAULT_MIN_INTERVAL_MS);
  output.update(bundle); // the first update is sent at once, in the caller's turn
  if (complete === undefined) return new DisplayHandle(value, summary, true, Promise.resolve(value));

  const finish = async (final: MimeBundle): Promise<void> => {
    const sentIn = channel.currentRequest();
    await output.finish(final);
    // Awaited, the cell is still running and has it. Otherwise the cell it went to may be over.
    if (!handle.isAwaited && sentIn !== undefined) {
      onNextRequest(channel, sentIn, () => void output.finish(final).catch(() => undefined));
    }
  };
  const completion = Promise.resolve()
    .then(complete)
    .then(
      async (final) => {
        await finish(final);
        return value;
      },
      async (error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error);
        await finish({ ...bundle, "text/plain": `${summary} (could not complete this output: ${reason})` }).catch(() => undefined);
        throw error;
      },
    );
  const handle = new DisplayHandle(value, summary, true, completion);
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
