// What a Redis worker's running tasks hold in its memory besides the results it keeps (./held).

/**
 * In-memory bytes (Dask's sizeof) of the values its tasks hold in this process — inputs read
 * from Redis or peers, and results until they are stored; with the results it keeps, its managed memory.
 */
export class InFlightValues {
  total = 0;

  /** What one task holds; released when it is done. */
  hold(): { add(bytes: number): void; release(): void } {
    let held = 0;
    return {
      add: (bytes) => {
        held += bytes;
        this.total += bytes;
      },
      release: () => {
        this.total -= held;
        held = 0;
      },
    };
  }
}
