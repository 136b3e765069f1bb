// Waiting for something another process does, with a bound and an error saying what did not happen.

/** Resolves once `condition` holds (checked every 50 ms); rejects naming `what` after `seconds`. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, seconds = 30): Promise<void> {
  const end = performance.now() + seconds * 1000;
  while (!(await condition())) {
    if (performance.now() > end) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `promise`'s value, or "timed out" once `ms` pass first. The timer is cleared when the promise
 * wins: a pending one would keep the test file's process alive that long after its last test
 * (node --test waits for the event loop to drain).
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | "timed out"> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<"timed out">((resolve) => (timer = setTimeout(() => resolve("timed out"), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
