// Waiting for something another process does, with a bound and an error saying what did not happen.

/** Resolves once `condition` holds (checked every 50 ms); rejects naming `what` after `seconds`. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, seconds = 30): Promise<void> {
  const end = performance.now() + seconds * 1000;
  while (!(await condition())) {
    if (performance.now() > end) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
