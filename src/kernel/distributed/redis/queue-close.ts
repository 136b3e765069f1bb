// Closing BullMQ workers without waiting on them forever. Worker.close() waits for its active jobs,
// then for its blocking connection's "end" event; a close that catches that connection between a
// lost Redis and its reconnection waits for an "end" that never comes (fresh-clone runs ci35 and
// ci36: a worker sent SIGTERM just after Redis came back never exited; BullMQ #4585 is the same
// race on another path).

/** Seconds BullMQ workers may take to close once none of their jobs is in this worker's hands. */
export const QUEUE_CLOSE_GRACE_SECONDS = 5;

/**
 * Closes `queues`; resolves true once they closed, or false when they were still closing
 * QUEUE_CLOSE_GRACE_SECONDS after `jobsDone` (their jobs run to their outcomes: nothing is left for
 * them to do but reach Redis), leaving them behind.
 */
export async function closeQueueWorkers(queues: readonly { close(): Promise<void> }[], jobsDone: Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  // Jobs done after the queues closed start no timer: it would hold the process up for nothing.
  const grace = jobsDone.then(
    () =>
      new Promise<false>((resolve) => {
        if (!settled) timer = setTimeout(() => resolve(false), QUEUE_CLOSE_GRACE_SECONDS * 1000);
      }),
  );
  try {
    return await Promise.race([Promise.all(queues.map((queue) => queue.close())).then(() => true), grace]);
  } finally {
    settled = true;
    clearTimeout(timer);
  }
}
