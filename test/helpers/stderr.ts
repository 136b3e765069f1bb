// What this process writes to stderr meanwhile (the scheduler's reports of listeners' and plugins'
// errors; the LocalCluster workers' logs, which the cluster passes on to it), kept from the output.

/** Captures stderr until `stop()`; `text()` is everything written so far. */
export function captureStderr(): { text: () => string; stop: () => void } {
  const write = process.stderr.write.bind(process.stderr);
  const chunks: string[] = [];
  process.stderr.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  return { text: () => chunks.join(""), stop: () => void (process.stderr.write = write) };
}

/** What is written to stderr while `fn` runs. */
export async function capturingStderr(fn: () => Promise<void>): Promise<string> {
  const capture = captureStderr();
  try {
    await fn();
  } finally {
    capture.stop();
  }
  return capture.text();
}
